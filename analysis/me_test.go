package analysis

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
	f := MeFiguresOf(&c, 4096)
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
