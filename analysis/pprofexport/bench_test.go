package pprofexport

import (
	"os"
	"testing"

	"dcpi/analysis/internal/analysistest"
	"dcpi/analysis/internal/fleetdbtest"
	"dcpi/storage"
	"dcpi/wire"
	"dcpi/workloads"
)

func TestMain(m *testing.M) {
	code := m.Run()
	fleetdbtest.CloseShared()
	os.Exit(code)
}

var openFleet = fleetdbtest.Shared

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
	sortRec, _ := analysistest.ELFRecord(b, sortBytes, "/bin/sort", false)
	sortKey := sortRec.Key
	renamed := &fleetdbtest.RenamedSource{Source: db, From: fleetdbtest.Image(0), To: sortKey, Rec: sortRec}
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
