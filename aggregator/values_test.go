package aggregator

import (
	"math"
	"testing"

	"dcpi/internal/hotlist"
	"dcpi/internal/testrand"
	"dcpi/wire"
)

// TestMergeValuesUnbiased merges runs of one host's records, whose lists
// reached different τ, many times over and checks the merged estimate of
// each frequent value against its exact count: the mean within 5 standard
// errors, every trial within 6σ.
func TestMergeValuesUnbiased(t *testing.T) {
	r := testrand.New(t)
	img := wire.MustParseImageKey("sha256:0202020202020202020202020202020202020202020202020202020202020202")
	const trials = 200
	var sum [2]float64
	var exact [2]float64
	for trial := range trials {
		var run []*wire.ValuesRecord
		exact = [2]float64{}
		for seq := uint64(1); seq <= 4; seq++ {
			var l hotlist.List
			n := 500 << seq // later records see more, and rarer values, so τ differs
			for range n {
				v := uint64(2)
				switch x := r.Float64(); {
				case x < 0.25:
					v = 60
					exact[1]++
				case x < 0.25+0.01*float64(seq):
					v = 1000 + r.Uint64N(100)
				default:
					exact[0]++
				}
				l.Offer(v, r)
			}
			run = append(run, &wire.ValuesRecord{Version: 1, Host: "h", Epoch: 1, Seq: seq, Module: "loadlat",
				Stats: wire.ValueStats{Interrupts: 1, Completed: 1},
				Lists: []wire.ValueList{{Image: img, Offset: 8, Kind: 1, List: l}}})
		}
		m, err := MergeValues(run)
		if err != nil {
			t.Fatal(err)
		}
		if m.Seq != 4 || m.Stats.Interrupts != 4 || len(m.Lists) != 1 {
			t.Fatalf("merged record: seq %d, %d interrupts, %d lists", m.Seq, m.Stats.Interrupts, len(m.Lists))
		}
		l := m.Lists[0].List
		tau := float64(l.Tau())
		for i, v := range []uint64{2, 60} {
			est := float64(l.Estimate(v))
			if math.Abs(est-exact[i]) > 6*math.Sqrt(exact[i]*tau)+tau {
				t.Fatalf("trial %d: value %d: estimate %.0f, exact %.0f, τ %.0f", trial, v, est, exact[i], tau)
			}
			sum[i] += est / exact[i]
		}
	}
	for i := range sum {
		if mean := sum[i] / trials; math.Abs(mean-1) > 0.035 {
			t.Errorf("value %d: mean estimate / exact = %.4f over %d trials: biased", i, mean, trials)
		}
	}
	if _, err := MergeValues([]*wire.ValuesRecord{{Host: "h", Epoch: 1, Seq: 2}, {Host: "h", Epoch: 1, Seq: 1}}); err == nil {
		t.Error("a run out of order merged")
	}
	if _, err := MergeValues([]*wire.ValuesRecord{{Host: "h", Epoch: 1, Seq: 1}, {Host: "g", Epoch: 1, Seq: 2}}); err == nil {
		t.Error("two hosts' records merged")
	}
}
