package calc

import (
	"strings"
	"testing"

	"dcpi/analysis/cfg"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
	"dcpi/workloads"
	"dcpi/workloads/heldout"
)

// chaseLoop is ptrchase's chase loop with TestChaseLoopAllStalled's
// samples (a list 16 times the S-cache: every issue point but one stalls;
// the truth is 6.3 executions per P), and the loop's block.
func chaseLoop(t *testing.T) (*Procedure, *Profile, int) {
	t.Helper()
	data, err := workloads.Binary("ptrchase")
	if err != nil {
		t.Fatal(err)
	}
	im, err := elfimage.Parse(data, "/bin/ptrchase")
	if err != nil {
		t.Fatal(err)
	}
	c, err := cfg.NewCode(im, cfg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := c.BuildNamed("chase")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProcedure(g, StaticOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for b, s := range p.Sched {
		if len(s.Insns) == 6 {
			prof := profileOf(s.Insns[0].PC, 183, 0, 1, 2, 205, 0)
			prof.Periods[alpha.EvCycles] = 63488
			return p, prof, b
		}
	}
	t.Fatal("chase has no six-instruction loop block")
	return nil, nil, 0
}

// TestMeasuredFrequency holds the measured passes to the chase loop the
// heuristic cannot estimate (F = 194 per P where the truth is 6.3):
// ProfileMe's retire counts replace it, a few of them only check it, and
// a load latency checks it (TestLatencyBound bounds it).
func TestMeasuredFrequency(t *testing.T) {
	const truth = 6.3
	for _, tc := range []struct {
		name     string
		setup    func(p *Profile, ins []uint64)
		method   Method
		conf     Confidence
		lo, hi   float64 // F's range
		contains string  // in Check or Reason
	}{
		{"profileme", func(p *Profile, ins []uint64) {
			// k·S/n/P = 6.3: 586 retire samples over 6 instructions.
			p.MeRetired, p.MeInterval = map[uint64]float64{}, 4096
			for _, pc := range ins {
				p.MeRetired[pc] = truth * 63488 / 4096
			}
		}, ProfileMe, High, 0.99 * truth, 1.01 * truth, "ProfileMe's 586 retire samples"},
		{"profileme-few", func(p *Profile, ins []uint64) {
			p.MeRetired, p.MeInterval = map[uint64]float64{ins[0]: 1, ins[1]: 1}, 4096
		}, Ratios, Low, 150, 250, "ProfileMe's 2 retire samples measure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, prof, loop := chaseLoop(t)
			var pcs []uint64
			for _, in := range p.Sched[loop].Insns {
				pcs = append(pcs, in.PC)
			}
			tc.setup(prof, pcs)
			e := mustEstimate(t, p, prof).Block(loop)
			t.Logf("F %.2f per P, %s (%s): check %q reason %q", e.F, e.Confidence, e.Method, e.Check, e.Reason)
			if e.Method != tc.method || e.Confidence != tc.conf || e.F < tc.lo || e.F > tc.hi {
				t.Errorf("F %.2f by %s at %s confidence: want %s at %s, F in [%.2f, %.2f]", e.F, e.Method, e.Confidence, tc.method, tc.conf, tc.lo, tc.hi)
			}
			if !strings.Contains(e.Check+e.Reason, tc.contains) {
				t.Errorf("check %q, reason %q: want %q", e.Check, e.Reason, tc.contains)
			}
		})
	}
}

// TestSampleBound: a class estimated not to run that has samples is
// raised to the least F they allow, at low confidence, with the reason.
func TestSampleBound(t *testing.T) {
	p, prof, loop := chaseLoop(t)
	f := mustEstimate(t, p, prof)
	c := p.Classes.Node[loop]
	f.Class[c] = ClassEstimate{F: 0, Method: FewSamples, Confidence: Low}
	byClass := make([][]int, p.Classes.Count)
	for b := range p.CFG.Blocks {
		byClass[p.Classes.Node[b]] = append(byClass[p.Classes.Node[b]], b)
	}
	opt := FreqOptions{}.withDefaults()
	boundBySamples(p, prof, f, byClass, opt)
	e := f.Class[c]
	// 205 samples at the addq (M = 1 here or more) over at most M + 400
	// cycles an execution.
	if e.Method != SampleBound || e.Confidence != Low || e.F <= 0 || e.F > 205.0/400 || !strings.Contains(e.Reason, "lower bound") {
		t.Errorf("F %.3f by %s at %s: %q; want a sample bound under %.3f", e.F, e.Method, e.Confidence, e.Reason, 205.0/400)
	}
}

// TestLatencyBound: walklist's walk_list loop (ldq t0; ldq a0; addq
// waiting statically for t0; bne) with one host's samples, where every
// issue point stalls (truth 12.4 executions per P): value sampling
// measured 176 cycles for the first load, so the addq's 2,125 samples
// from that load on allow F ≤ 12.07, and the heuristic's 436 falls to it.
func TestLatencyBound(t *testing.T) {
	data, err := heldout.Binary("walklist")
	if err != nil {
		t.Fatal(err)
	}
	im, err := elfimage.Parse(data, "/w/walklist")
	if err != nil {
		t.Fatal(err)
	}
	c, err := cfg.NewCode(im, cfg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := c.BuildNamed("walk_list")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProcedure(g, StaticOptions{})
	if err != nil {
		t.Fatal(err)
	}
	loop := -1
	for b, s := range p.Sched {
		if len(s.Insns) == 4 && s.Insns[0].PC == 0x120000940 {
			loop = b
		}
	}
	if loop < 0 {
		t.Fatal("walk_list has no loop block at 0x120000940")
	}
	prof := profileOf(0x120000940, 436, 3, 1686, 7)
	prof.Periods[alpha.EvCycles] = 63488
	if e := mustEstimate(t, p, prof).Block(loop); e.F < 100 {
		t.Fatalf("without latencies F = %.1f: the case no longer defeats the heuristic", e.F)
	}
	prof.LoadLatency = map[uint64]Latency{0x120000940: {Mean: 176, Samples: 4546}}
	e := mustEstimate(t, p, prof).Block(loop)
	t.Logf("F %.2f per P, %s (%s): %s", e.F, e.Confidence, e.Method, e.Check)
	if want := 2125.0 / 176; e.Method != LoadLatency || e.Confidence != Medium || e.F < want*0.999 || e.F > want*1.001 ||
		!strings.Contains(e.Check, "measured 176 cycles") {
		t.Errorf("F %.2f by %s at %s, check %q: want %.2f by load-latency at medium", e.F, e.Method, e.Confidence, e.Check, want)
	}
}
