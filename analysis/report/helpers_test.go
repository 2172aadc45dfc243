package report

import (
	"context"
	"math/rand/v2"
	"testing"

	"dcpi/analysis"
	"dcpi/internal/testrand"
	"dcpi/storage"
	"dcpi/wire"
)

// profRow is one count a Source's Profile gave.
type profRow struct {
	image  wire.ImageKey
	offset uint64
	event  uint8
	host   string
	count  uint64
}

func testRand(t testing.TB) *rand.Rand { return testrand.New(t) }

// stubSource fails Image for one key with an error other than not-found.
type stubSource struct {
	*analysis.MemSource
	bad wire.ImageKey
}

func (s stubSource) Image(ctx context.Context, k wire.ImageKey) (*wire.ImageRecord, error) {
	if k == s.bad {
		return nil, storage.ErrCorrupt
	}
	return s.MemSource.Image(ctx, k)
}
