package hwsim_test

import (
	"math"
	"testing"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
)

// stackHandlerCycles is what node's handler costs per sample, modelled,
// with call stacks on, on matmul (dcpi profile --stats --mux -- matmul):
// 438 cycles for the flat side and 978 for the stack walk and count.
const stackHandlerCycles = 438 + 978

// TestHandlerCostLeavesSamplesUnbiased holds DCPI's premise (sec. 4.1.2)
// under an interrupt handler as costly as node's with call stacks on, at
// periods short enough that the handler takes a third of the time: the
// handler's cycles must not be counted as the program's (its ground
// truth is that of a free handler) nor move samples between the
// program's instructions (they follow the head-of-queue cycles). The
// handler perturbs only when each later sample lands: a different draw
// of the same distribution (docs/dcpicalc.md, Accuracy: "Call stacks").
func TestHandlerCostLeavesSamplesUnbiased(t *testing.T) {
	if testing.Short() {
		t.Skip("runs matmul twice")
	}
	const lo, hi = 2800, 3200
	prof := hwsim.ProfileConfig{Counters: []hwsim.CounterSpec{
		{Events: []alpha.Event{alpha.EvCycles}, PeriodMin: lo, PeriodMax: hi}}, InterruptCycles: 214}
	run := func(cost uint64) (*alpha.GroundTruth, []hwsim.Sample) {
		col := &collector{cost: cost}
		m := profiledMachine(t, 1, prof, col, true)
		if _, err := m.Spawn("/bin/matmul", []string{"/bin/matmul", "64"}, nil); err != nil {
			t.Fatal(err)
		}
		m.Run(0)
		return m.GroundTruth()["/bin/matmul"], col.samples
	}
	free, _ := run(0)
	truth, samples := run(stackHandlerCycles)
	checkSamplesAgainstHeadCycles(t, truth, samples, float64(lo+hi)/2, 10)

	// The program runs the same with the costly handler: every hot
	// instruction's executions are equal and its head cycles within 2%
	// (restarting the pipeline after each interrupt moves a few).
	hot, worst := 0, 0.0
	for pc, f := range free.PCs {
		if f.HeadCycles < 100_000 {
			continue
		}
		hot++
		g := truth.PCs[pc]
		if g == nil || g.Executed != f.Executed {
			t.Errorf("pc %#x: executed %d with a free handler, %v with a costly one", pc, f.Executed, g)
			continue
		}
		r := float64(g.HeadCycles) / float64(f.HeadCycles)
		worst = max(worst, math.Abs(r-1))
		if math.Abs(r-1) > 0.02 {
			t.Errorf("pc %#x: %d head cycles with a costly handler, %d with a free one", pc, g.HeadCycles, f.HeadCycles)
		}
	}
	t.Logf("%d hot instructions: head cycles within %.2f%% of a free handler's", hot, 100*worst)
	if hot < 20 {
		t.Errorf("only %d hot instructions compared", hot)
	}
}
