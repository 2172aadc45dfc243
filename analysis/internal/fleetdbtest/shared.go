package fleetdbtest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"dcpi/analysis"
	"dcpi/storage"
	"dcpi/wire"
)

// The fleet database is built once per process: at full scale
// (Fleet: 1,000 hosts × 50 images × 10,000 offsets, each host at
// 200 offsets of every image) and cached under $DCPI_BENCH_FLEETDB when it
// is set, else at Small's scale (50 hosts, the same 500,000-pair
// roll-up) in a temporary directory CloseShared removes.
var (
	fleetOnce sync.Once
	fleetDB   *storage.DB
	fleetSpec Spec
	fleetErr  error
	fleetTmp  string
)

// CloseShared closes the shared database and removes its temporary
// directory: a TestMain calls it after m.Run.
func CloseShared() {
	if fleetDB != nil {
		fleetDB.Close()
	}
	if fleetTmp != "" {
		os.RemoveAll(fleetTmp)
	}
}

// Shared is the fleet database the benchmarks query, built once per
// process.
func Shared(b testing.TB) (*storage.DB, Spec) {
	fleetOnce.Do(func() {
		root := os.Getenv("DCPI_BENCH_FLEETDB")
		fleetSpec = Fleet()
		if root == "" {
			fleetSpec = Small()
			if fleetTmp, fleetErr = os.MkdirTemp("", "dcpi-fleetdb-"); fleetErr != nil {
				return
			}
			root = fleetTmp
		}
		var built *BuildStats
		fleetDB, built, fleetErr = Open(root, fleetSpec)
		if built != nil {
			b.Logf("built %s: %d counts in %v (%.0f entries/s through storage.ApplyBatches)",
				filepath.Join(root, fleetSpec.Name()), built.Counts, built.Elapsed, built.EntriesPerSecond())
		}
	})
	if fleetErr != nil {
		b.Fatal(fleetErr)
	}
	return fleetDB, fleetSpec
}

// RenamedSource presents one image of a Source under another key and
// record: the fleet database's images are synthetic (no bytes to
// disassemble), so the tools' benchmarks list /bin/sort's code with the
// samples of fleet image 0.
type RenamedSource struct {
	analysis.Source
	From, To wire.ImageKey
	Rec      *wire.ImageRecord // To's record
}

func (s *RenamedSource) Profile(ctx context.Context, q storage.Query, fn func(wire.ImageKey, uint64, uint8, string, uint64) error) error {
	if q.Images != nil {
		imgs := make([]wire.ImageKey, len(q.Images))
		for i, k := range q.Images {
			imgs[i] = k
			if k == s.To {
				imgs[i] = s.From
			}
		}
		q.Images = imgs
	}
	return s.Source.Profile(ctx, q, func(k wire.ImageKey, off uint64, ev uint8, host string, n uint64) error {
		if k == s.From {
			k = s.To
		}
		return fn(k, off, ev, host, n)
	})
}

func (s *RenamedSource) Image(ctx context.Context, k wire.ImageKey) (*wire.ImageRecord, error) {
	if k == s.To {
		return s.Rec, nil
	}
	return s.Source.Image(ctx, k)
}
