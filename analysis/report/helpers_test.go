package report

import (
	"context"
	"math/rand/v2"
	"testing"

	"dcpi/analysis"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
	"dcpi/internal/testrand"
	"dcpi/storage"
	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// The fixtures' images: rec is image i's record, its text 0x210 into the
// page at base (as the workloads' is), with syms.
var testKey = wiretest.Key

const base = 0x120000000

func rec(i int, path string, textEnd uint64, syms ...wire.Symbol) *wire.ImageRecord {
	return &wire.ImageRecord{Version: wire.Version, Key: testKey(i), Path: path,
		TextStart: base + 0x210, TextEnd: textEnd, Base: base, Symbols: syms}
}

func sym(name string, addr, size uint64) wire.Symbol {
	return wire.Symbol{Name: name, Addr: addr, Size: size}
}

// elfRecord is the record a node uploads for the ELF file data: its key,
// text range, load base and symbols.
func elfRecord(t *testing.T, data []byte, path string, kernel bool) (*wire.ImageRecord, *elfimage.Image) {
	t.Helper()
	var im *elfimage.Image
	var err error
	if kernel {
		im, err = elfimage.ParseKernel(data, path)
	} else {
		im, err = elfimage.Parse(data, path)
	}
	if err != nil {
		t.Fatal(err)
	}
	key, err := wire.ParseImageKey(im.ID.String())
	if err != nil {
		t.Fatal(err)
	}
	r := &wire.ImageRecord{Version: wire.Version, Key: key, Path: path, Size: uint64(len(data)), TextStart: im.TextStart, TextEnd: im.TextEnd,
		Base: ^uint64(0)}
	for _, s := range im.Segments {
		r.Base = min(r.Base, s.Vaddr&^(alpha.PageSize-1)) // where the loader maps it (node: Mapping.Base)
	}
	for _, s := range im.Symbols {
		r.Symbols = append(r.Symbols, wire.Symbol{Name: s.Name, Addr: s.Addr, Size: s.Size})
	}
	return r, im
}

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
