package report

import (
	"testing"

	"dcpi/analysis"
	"dcpi/analysis/internal/analysistest"
	"dcpi/analysis/internal/fleetdbtest"
	"dcpi/storage"
	"dcpi/wire"
	"dcpi/workloads"
)

// BenchmarkFleetTools times each of the analysis tools (pprof export: in
// pprofexport, BenchmarkFleetPprof) over the fleet
// database (fleetdbtest.Small by default; fleetdbtest.Fleet's 1,000 hosts with
// DCPI_BENCH_FLEETDB=dir), each query from a fresh symbol cache, beside
// the storage scan of the fleet roll-up they start from (the baseline):
//
//   - list: one procedure fleet-wide (a Prof to find it, then the image's
//     part of the index, disassembly and line table);
//   - diff: two hosts;
//   - stats: eight hosts (the paper's eight sample sets).
func BenchmarkFleetTools(b *testing.B) {
	db, spec := openFleet(b)
	b.Logf("database %s (%d per-host counts)", spec.Name(), spec.Counts())
	sortBytes, err := workloads.Binary("sort")
	if err != nil {
		b.Fatal(err)
	}
	sortRec, _ := analysistest.ELFRecord(b, sortBytes, "/bin/sort", false)
	sortKey := sortRec.Key
	renamed := &fleetdbtest.RenamedSource{Source: db, From: fleetdbtest.Image(0), To: sortKey, Rec: sortRec}
	host := func(i int) analysis.SampleSet {
		h := fleetdbtest.Host(i * spec.Hosts / 8)
		return analysis.SampleSet{Name: "host=" + h, Filter: storage.Query{Hosts: []string{h}}}
	}
	var eight []analysis.SampleSet
	for i := range 8 {
		eight = append(eight, host(i))
	}
	cases := []struct {
		name string
		run  func() (int, error) // returns rows, samples or instructions
	}{
		{"baseline-scan/fleet", func() (int, error) {
			n := 0
			err := db.Profile(b.Context(), storage.Query{Events: []uint8{0}}, func(wire.ImageKey, uint64, uint8, string, uint64) error { n++; return nil })
			return n, err
		}},
		{"list/fleet", func() (int, error) {
			l, err := List(b.Context(), renamed, ListQuery{Events: []uint8{0}, Procedures: []string{"main"}, Files: embeddedFinder{}})
			if err != nil {
				return 0, err
			}
			return len(l.Procedures[0].Lines), nil
		}},
		{"diff/two-hosts", func() (int, error) {
			t, err := Diff(b.Context(), db, DiffQuery{A: host(1), B: host(2), Limit: 20})
			if err != nil {
				return 0, err
			}
			return len(t.Rows) + t.Omitted, nil
		}},
		{"stats/eight-hosts", func() (int, error) {
			t, err := Stats(b.Context(), db, StatsQuery{Sets: eight, Limit: 20})
			if err != nil {
				return 0, err
			}
			return len(t.Rows) + t.Omitted, nil
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
