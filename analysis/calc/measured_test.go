package calc

import (
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
