package pprofexport

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"dcpi/analysis"
	"dcpi/analysis/internal/fleetdbtest"
	"dcpi/analysis/symbolize"
	"dcpi/storage"
	"dcpi/wire"
	"dcpi/workloads"
)

// The fleet database is built once per process: at full scale
// (fleetdbtest.Fleet: 1,000 hosts × 50 images × 10,000 offsets, each host at
// 200 offsets of every image) and cached under $DCPI_BENCH_FLEETDB when it
// is set, else at fleetdbtest.Small's scale (50 hosts, the same 500,000-pair
// roll-up) in a temporary directory removed by TestMain.
var (
	fleetOnce sync.Once
	fleetDB   *storage.DB
	fleetSpec fleetdbtest.Spec
	fleetErr  error
	fleetTmp  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fleetDB != nil {
		fleetDB.Close()
	}
	if fleetTmp != "" {
		os.RemoveAll(fleetTmp)
	}
	os.Exit(code)
}

func openFleet(b *testing.B) (*storage.DB, fleetdbtest.Spec) {
	fleetOnce.Do(func() {
		root := os.Getenv("DCPI_BENCH_FLEETDB")
		fleetSpec = fleetdbtest.Fleet()
		if root == "" {
			fleetSpec = fleetdbtest.Small()
			if fleetTmp, fleetErr = os.MkdirTemp("", "dcpi-fleetdb-"); fleetErr != nil {
				return
			}
			root = fleetTmp
		}
		var built *fleetdbtest.BuildStats
		fleetDB, built, fleetErr = fleetdbtest.Open(root, fleetSpec)
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

// renamedSource presents one image of a analysis.Source under another key and
// record: the fleet database's images are synthetic (no bytes to
// disassemble), so BenchmarkFleetTools lists /bin/sort's code with the
// samples of fleet image 0.
type renamedSource struct {
	analysis.Source
	from, to wire.ImageKey
	rec      *wire.ImageRecord // to's record
}

func (s *renamedSource) Profile(ctx context.Context, q storage.Query, fn func(wire.ImageKey, uint64, uint8, string, uint64) error) error {
	if q.Images != nil {
		imgs := make([]wire.ImageKey, len(q.Images))
		for i, k := range q.Images {
			imgs[i] = k
			if k == s.to {
				imgs[i] = s.from
			}
		}
		q.Images = imgs
	}
	return s.Source.Profile(ctx, q, func(k wire.ImageKey, off uint64, ev uint8, host string, n uint64) error {
		if k == s.from {
			k = s.to
		}
		return fn(k, off, ev, host, n)
	})
}

func (s *renamedSource) Image(ctx context.Context, k wire.ImageKey) (*wire.ImageRecord, error) {
	if k == s.to {
		return s.rec, nil
	}
	return s.Source.Image(ctx, k)
}

// BenchmarkFleetPprof times pprof export over the fleet database
// (fleetdbtest.Small by default; fleetdbtest.Fleet's 1,000 hosts with
// DCPI_BENCH_FLEETDB=dir) beside the storage scan of the fleet roll-up it
// starts from (the baseline): the whole fleet (every (image, offset) of the
// roll-up: 500,000 locations), with estimated cycles and DWARF, and one
// host (the per-host table). Moved from analysis's BenchmarkFleetTools.
func BenchmarkFleetPprof(b *testing.B) {
	db, spec := openFleet(b)
	b.Logf("database %s (%d per-host counts)", spec.Name(), spec.Counts())
	sortBytes, err := workloads.Binary("sort")
	if err != nil {
		b.Fatal(err)
	}
	sortKey, sortImg, err := symbolize.ImageKeyOf(sortBytes, "/bin/sort")
	if err != nil {
		b.Fatal(err)
	}
	sortRec := &wire.ImageRecord{Version: wire.Version, Key: sortKey, Path: "/bin/sort", TextStart: sortImg.TextStart, TextEnd: sortImg.TextEnd,
		Base: sortImg.Segments[0].Vaddr &^ 0x1fff}
	for _, s := range sortImg.Symbols {
		sortRec.Symbols = append(sortRec.Symbols, wire.Symbol{Name: s.Name, Addr: s.Addr, Size: s.Size})
	}
	renamed := &renamedSource{Source: db, from: fleetdbtest.Image(0), to: sortKey, rec: sortRec}
	cases := []struct {
		name string
		run  func() (int, error) // returns rows, samples or instructions
	}{
		{"baseline-scan/fleet", func() (int, error) {
			n := 0
			err := db.Profile(b.Context(), storage.Query{Events: []uint8{0}}, func(wire.ImageKey, uint64, uint8, string, uint64) error { n++; return nil })
			return n, err
		}},
		{"pprof/fleet", func() (int, error) {
			p, err := Pprof(b.Context(), db, PprofQuery{Events: []uint8{0}})
			if err != nil {
				return 0, err
			}
			return len(p.Location), nil
		}},
		{"pprof/fleet-cycles", func() (int, error) {
			// As dcpi pprof exports: the estimated cycles beside the
			// samples, and the images' DWARF where found.
			p, err := Pprof(b.Context(), renamed, PprofQuery{Events: []uint8{0}, Periods: map[uint8]int64{0: 63488}, Files: embeddedFinder{}})
			if err != nil {
				return 0, err
			}
			return len(p.Location), nil
		}},
		{"pprof/one-host", func() (int, error) {
			p, err := Pprof(b.Context(), db, PprofQuery{Events: []uint8{0}, Filter: storage.Query{Hosts: []string{fleetdbtest.Host(spec.Hosts / 2)}}})
			if err != nil {
				return 0, err
			}
			return len(p.Location), nil
		}},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				var err error
				if n, err = bc.run(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n), "rows")
		})
	}
}
