package report

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"dcpi/analysis/internal/fleetdbtest"
	"dcpi/storage"
	"dcpi/wire"
)

func TestMain(m *testing.M) {
	code := m.Run()
	fleetdbtest.CloseShared()
	os.Exit(code)
}

var openFleet = fleetdbtest.Shared

// BenchmarkFleetTop20 is the fleet query's target (under 1 s): the top 20
// procedures of the whole fleet by cycles, symbolized, with a fresh symbol
// cache per query. Beside it, in the same run: the storage scan alone (the
// baseline: Profile reading the same rows, no analysis), and the same top
// 20 for one host (read from the per-host table, not the roll-up).
func BenchmarkFleetTop20(b *testing.B) {
	db, spec := openFleet(b)
	b.Logf("database %s (%d per-host counts)", spec.Name(), spec.Counts())
	fleet := ProfQuery{Events: []uint8{0}, Limit: 20}
	host := fleet
	host.Filter.Hosts = []string{fleetdbtest.Host(spec.Hosts / 2)}
	for _, bc := range []struct {
		name string
		q    ProfQuery
		prof bool
	}{
		{"scan-only/fleet", fleet, false},
		{"prof/fleet", fleet, true},
		{"prof/one-host", host, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			rows := 0
			for b.Loop() {
				rows = 0
				if bc.prof {
					t, err := Prof(b.Context(), db, bc.q)
					if err != nil {
						b.Fatal(err)
					}
					if len(t.Rows) != 20 {
						b.Fatalf("%d rows", len(t.Rows))
					}
					rows = len(t.Rows) + t.Omitted
					continue
				}
				q := bc.q.Filter
				q.Events = bc.q.Events
				err := db.Profile(b.Context(), q, func(wire.ImageKey, uint64, uint8, string, uint64) error {
					rows++
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rows), "rows")
		})
	}
}

// BenchmarkFleetBuild measures storage.ApplyBatches writing a fleet
// database (10 hosts of fleetdbtest.Fleet's shape, 10 per commit), in entries/s.
func BenchmarkFleetBuild(b *testing.B) {
	s := fleetdbtest.Fleet()
	s.Hosts = 10
	var st fleetdbtest.BuildStats
	var total float64
	for i := 0; b.Loop(); i++ {
		var err error
		st, err = fleetdbtest.Build(filepath.Join(b.TempDir(), "db"), s, 10)
		if err != nil {
			b.Fatal(err)
		}
		total += float64(st.Counts)
	}
	b.ReportMetric(total/b.Elapsed().Seconds(), "entries/s")
}

// sliceSource replays Profile rows from memory, so BenchmarkProfAggregate
// times Prof's own work (symbolizing, summing, sorting) without storage.
type sliceSource struct {
	rows   []profRow
	images map[wire.ImageKey]*wire.ImageRecord
}

func (s *sliceSource) Profile(ctx context.Context, _ storage.Query, fn func(wire.ImageKey, uint64, uint8, string, uint64) error) error {
	for _, r := range s.rows {
		if err := fn(r.image, r.offset, r.event, r.host, r.count); err != nil {
			return err
		}
	}
	return nil
}

func (s *sliceSource) Image(ctx context.Context, k wire.ImageKey) (*wire.ImageRecord, error) {
	return s.images[k], nil
}

// BenchmarkProfAggregate is Prof over the fleet roll-up's 500,000 rows
// (fleetdbtest.Fleet's images and offsets) replayed from memory, in rows/s.
func BenchmarkProfAggregate(b *testing.B) {
	spec := fleetdbtest.Fleet()
	src := &sliceSource{images: map[wire.ImageKey]*wire.ImageRecord{}}
	for i := range spec.Images {
		src.images[fleetdbtest.Image(i)] = spec.ImageRecord(i)
		for k := range spec.Offsets {
			src.rows = append(src.rows, profRow{image: fleetdbtest.Image(i), offset: 4 * uint64(k), count: uint64(1 + k%97)})
		}
	}
	for b.Loop() {
		if _, err := Prof(b.Context(), src, ProfQuery{Events: []uint8{0}, Limit: 20}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(src.rows))*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
