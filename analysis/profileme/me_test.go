package profileme

import (
	"math"
	"testing"

	"dcpi/wire"
)

// TestMeFigures: an event seen in k samples is estimated at k·S with
// relative error 1/sqrt(k); means are per sample (loads: per load); an
// event never seen claims nothing.
func TestMeFigures(t *testing.T) {
	var c wire.MeCounts
	c[wire.MeSamples], c[wire.MeRetired], c[wire.MeAbortIntr] = 100, 96, 4
	c[wire.MeDMiss] = 25
	c[wire.MeHeadCycles] = 250
	c[wire.MeStall0+7] = 150 // dcache
	c[wire.MeLoads], c[wire.MeLoadLatency] = 50, 600
	f := FiguresOf(&c, 4096)
	if f.Retired.Count != 96*4096 || math.Abs(f.Retired.RelErr-1/math.Sqrt(96)) > 1e-12 {
		t.Errorf("retired %+v", f.Retired)
	}
	if d := f.Events["dmiss"]; d.Samples != 25 || d.Count != 25*4096 || d.RelErr != 0.2 {
		t.Errorf("dmiss %+v, want 25 samples, %d, ±20%%", d, 25*4096)
	}
	if _, ok := f.Events["imiss"]; ok || f.AbortTrap.RelErr != 0 || f.AbortTrap.Count != 0 {
		t.Errorf("an unseen event claims something: %+v %+v", f.Events, f.AbortTrap)
	}
	if f.MeanHead != 2.5 || f.MeanStall["dcache"] != 1.5 || len(f.MeanStall) != 1 || f.MeanLoadLatency != 12 {
		t.Errorf("means: head %g, stalls %v, load latency %g", f.MeanHead, f.MeanStall, f.MeanLoadLatency)
	}
}

// TestMeWastedSlots pins sec. 5.2.3's estimator: with k = 10 paired
// samples (both roles), L = 200 in-progress cycles, U = 3 useful overlaps,
// S = 1000, W = 128, C = 4: latency slots L·C·S/2 = 400,000, useful
// U·W·S = 384,000, wasted 16,000, the terms' errors 1/sqrt(10) and
// 1/sqrt(3) combined; no W or C, no wasted estimate; no pairs, no pair
// figures.
func TestMeWastedSlots(t *testing.T) {
	var c wire.MeCounts
	c[wire.MeSamples], c[wire.MeRetired] = 12, 12
	c[wire.MeFirst], c[wire.MeSecond], c[wire.MeInProgress], c[wire.MeUseful] = 6, 4, 200, 3
	c[wire.MeOverlap], c[wire.MePartnerRetired] = 5, 8
	c[wire.MeStage0+1] = 24
	f := FiguresWith(&c, Params{Interval: 1000, PairWindow: 128, IssueWidth: 4})
	p := f.Pairs
	if p == nil || p.Samples != 10 || p.Latency.Count != 400_000 || p.Useful.Count != 384_000 || p.Wasted != 16_000 {
		t.Fatalf("pairs %+v", p)
	}
	want := math.Hypot(400_000/math.Sqrt(10), 384_000/math.Sqrt(3)) / 16_000
	if math.Abs(p.WastedRelErr-want) > 1e-9 || p.MeanInProgress != 20 || f.MeanStages["map_ready"] != 2 {
		t.Fatalf("wasted error %g (want %g), mean in progress %g, stages %v", p.WastedRelErr, want, p.MeanInProgress, f.MeanStages)
	}
	if g := FiguresOf(&c, 1000); g.Pairs == nil || g.Pairs.Latency.Samples != 0 || g.Pairs.Wasted != 0 {
		t.Fatalf("without W and C: %+v", g.Pairs)
	}
	c[wire.MeFirst], c[wire.MeSecond], c[wire.MeInProgress], c[wire.MeUseful], c[wire.MeOverlap], c[wire.MePartnerRetired] = 0, 0, 0, 0, 0, 0
	if g := FiguresWith(&c, Params{Interval: 1000, PairWindow: 128, IssueWidth: 4}); g.Pairs != nil {
		t.Fatalf("no pairs, yet %+v", g.Pairs)
	}
}
