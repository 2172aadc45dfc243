package calc

import (
	"math"
	"testing"

	"dcpi/analysis/cfg"
	"dcpi/analysis/codetest"
	"dcpi/hwsim/alpha"
)

// TestEdgeCountsCopyLoop derives the edge counts of the copy loop (a
// preheader, the loop, a ret) from a hand-made truth: one call, 100
// iterations.
func TestEdgeCountsCopyLoop(t *testing.T) {
	p := copyProc(t).CFG
	const loop, back, ret = codetest.CopyLoopPC, codetest.CopyLoopPC + 0x30, codetest.CopyLoopPC + 0x34
	g := alpha.NewGroundTruth()
	for pc := p.Start; pc < p.End; pc += 4 {
		n := uint64(1)
		if pc >= loop && pc <= back {
			n = 100
		}
		g.PCs[pc] = &alpha.PCTruth{Executed: n}
	}
	g.Edges[alpha.Edge{From: back, To: loop}] = 99
	g.Edges[alpha.Edge{From: ret, To: 0x120000000}] = 1
	n, ok := EdgeCounts(p, TruthTransfers(g))
	want := map[[2]uint64]uint64{ // by (from block start or 0 for Entry, to block start or 1 for Exit)
		{0, loop - 16}: 1, {loop - 16, loop}: 1, {loop, loop}: 99, {loop, ret}: 1, {ret, 1}: 1,
	}
	start := func(b int) uint64 {
		switch b {
		case p.Entry():
			return 0
		case p.Exit():
			return 1
		}
		return p.Blocks[b].Start
	}
	if len(p.Edges) != len(want) {
		t.Fatalf("%d edges, want %d: %+v", len(p.Edges), len(want), p.Edges)
	}
	for e, ed := range p.Edges {
		k := [2]uint64{start(ed.From), start(ed.To)}
		if w, found := want[k]; !found || !ok[e] || n[e] != w {
			t.Errorf("edge %#x->%#x (%v): %d ok %v, want %d (known %v)", k[0], k[1], ed.Kind, n[e], ok[e], w, found)
		}
	}
}

// TestEdgeCountsAgainstTruth holds the derived counts to the simulator:
// in every procedure sort executes, each block reached only from blocks
// (no Entry edge) executes as often as the counts of its in-edges add
// up to, though those counts come from its predecessors' transfers and
// fall-throughs, not from the block itself.
func TestEdgeCountsAgainstTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator")
	}
	r := runWorkload(t, "sort", "3000")
	procs, err := r.code.BuildAll()
	if err != nil {
		t.Fatal(err)
	}
	tr := TruthTransfers(r.truth)
	checked, bad := 0, 0
	var edgeExec uint64
	for _, p := range procs {
		n, ok := EdgeCounts(p, tr)
		for b := range p.Blocks {
			x := tr.Executed(p.Blocks[b].Start)
			if x == 0 {
				continue
			}
			var in uint64
			known := true
			for _, e := range p.Blocks[b].Preds {
				if p.Edges[e].Kind == cfg.Entry {
					known = false
				}
				in += n[e]
				known = known && ok[e]
			}
			if !known {
				continue
			}
			checked++
			if in != x {
				bad++
				if bad <= 10 {
					t.Errorf("%s: block %#x executed %d times, its in-edges add up to %d", p.Name, p.Blocks[b].Start, x, in)
				}
			}
		}
		for e := range n {
			edgeExec += n[e]
		}
	}
	t.Logf("%d executed blocks without an entry edge checked, %d mismatches; %d edge executions", checked, bad, edgeExec)
	if checked < 100 {
		t.Errorf("only %d blocks checked", checked)
	}
}

// TestCompareCauses: hwsim's causes land on Figure 4's rows (ra and rb
// with Other, imul and fdiv with the units' busy rows), as shares of the
// head cycles, and In applies the tolerance.
func TestCompareCauses(t *testing.T) {
	var s Summary
	s.Dynamic[DCache] = Range{0.20, 0.40}
	s.Dynamic[Other] = Range{0, 0.05}
	s.Dynamic[IMULBusy] = Range{0.01, 0.02}
	s.Static[RaDep], s.Static[RbDep], s.Static[FUDep], s.Static[Slotting] = 0.10, 0.05, 0.03, 0.08
	var stall [alpha.NumStallCauses]float64
	stall[alpha.StallDCache] = 300
	stall[alpha.StallRa], stall[alpha.StallRb] = 100, 60
	stall[alpha.StallIMul], stall[alpha.StallFDiv] = 30, 10
	stall[alpha.StallSlot] = 110
	stall[alpha.StallMispred] = 50
	rows := map[string]CauseCheck{}
	for _, c := range CompareCauses(&s, stall, 1000) {
		rows[c.Row] = c
	}
	for _, w := range []struct {
		row      string
		measured float64
		lo, hi   float64
		in       bool
	}{
		{DCache.String(), 0.30, 0.20, 0.40, true},
		{"Ra/Rb dependency", 0.16, 0.15, 0.20, true},
		{FUDep.String(), 0.04, 0.04, 0.05, true},
		{Slotting.String(), 0.11, 0.08, 0.08, false}, // 3 points off a point range
		{Mispredict.String(), 0.05, 0, 0, false},
		{ICache.String(), 0, 0, 0, true},
	} {
		c, ok := rows[w.row]
		if !ok {
			t.Errorf("no row %q", w.row)
			continue
		}
		if math.Abs(c.Measured-w.measured) > 1e-9 || math.Abs(c.Reported.Lo-w.lo) > 1e-9 || math.Abs(c.Reported.Hi-w.hi) > 1e-9 || c.In(0.02) != w.in {
			t.Errorf("%s: measured %v range %v in %v; want %v [%v, %v] %v", w.row, c.Measured, c.Reported, c.In(0.02), w.measured, w.lo, w.hi, w.in)
		}
	}
	if got := rows[Slotting.String()].Miss(); math.Abs(got-0.03) > 1e-9 {
		t.Errorf("slotting miss %v, want 0.03", got)
	}
	if CompareCauses(&s, stall, 0) != nil {
		t.Error("no head cycles: want no rows")
	}
}
