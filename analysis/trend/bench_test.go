package trend

import (
	"testing"

	"dcpi/analysis/internal/fleetdbtest"
	"dcpi/analysis/report"
	"dcpi/analysis/symbolize"
)

// BenchmarkFleetTrend times a trend over the fleet database
// (fleetdbtest.Small; fleetdbtest.Fleet's 1,000 hosts with
// DCPI_BENCH_FLEETDB=dir) beside the dcpiprof query of the same epoch it
// is made of (the baseline): Run reads one epoch at a time through the
// fleet roll-up, so a trend of N epochs costs N such queries over each
// epoch's part of the roll-up, and the top-N bookkeeping nothing
// measurable. The fixture has one epoch; each case reads it the number
// of times the name says, as a trend of that many epochs would.
func BenchmarkFleetTrend(b *testing.B) {
	db, spec := fleetdbtest.Shared(b)
	b.Logf("database %s (%d per-host counts)", spec.Name(), spec.Counts())
	one := []Epoch{{Number: 1}}
	four := []Epoch{{Number: 1}, {Number: 1}, {Number: 1}, {Number: 1}}
	cases := []struct {
		name string
		run  func() (int, error)
	}{
		{"baseline-prof/one-epoch", func() (int, error) {
			t, err := report.Prof(b.Context(), symbolize.New(db), report.ProfQuery{Events: []uint8{0}})
			if err != nil {
				return 0, err
			}
			return len(t.Rows), nil
		}},
		{"trend-top5/one-epoch", func() (int, error) {
			t, err := Run(b.Context(), symbolize.New(db), Query{Epochs: one})
			if err != nil {
				return 0, err
			}
			return len(t.Series), nil
		}},
		{"trend-top5/four-epochs", func() (int, error) {
			t, err := Run(b.Context(), symbolize.New(db), Query{Epochs: four})
			if err != nil {
				return 0, err
			}
			return len(t.Series), nil
		}},
		{"trend-image/four-epochs", func() (int, error) {
			t, err := Run(b.Context(), symbolize.New(db), Query{Epochs: four, Measures: []Measure{{Kind: KindImage, Value: fleetdbtest.Image(0).String()}}})
			if err != nil {
				return 0, err
			}
			return len(t.Series), nil
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
