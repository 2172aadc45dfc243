package paths

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"dcpi/analysis/cfg"
	"dcpi/analysis/codetest"
	"dcpi/hwsim/elfimage"
	"dcpi/workloads"
)

const base = 0x10000

// build lays words out as procedure f and builds its graph.
func build(t testing.TB, words []uint32) *cfg.Proc {
	t.Helper()
	c, err := cfg.NewCode(codetest.Image(base, words, map[string]int{"f": 0}), cfg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.BuildNamed("f")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// blockAt returns the block starting at word index i.
func blockAt(t testing.TB, p *cfg.Proc, i int) int {
	b, ok := p.BlockOf(base + 4*uint64(i))
	if !ok || p.Blocks[b].Start != base+4*uint64(i) {
		t.Fatalf("no block starts at word %d", i)
	}
	return b
}

// TestFigure1 is the paper's Figure 1: A->B, A->C, B->C, B->D, C->D,
// D->E, D->F, E->F, six paths. With each block's successors ordered
// fall-through first, Val(A->C) = NP(B) = 4, Val(B->D) = NP(C) = 2,
// Val(D->F) = NP(E) = 1, and the path sums are the table of Figure 1(b).
func TestFigure1(t *testing.T) {
	p := build(t, []uint32{
		codetest.Beq(1, 1), // 0 A: beq -> C (2), falls to B
		codetest.Beq(2, 1), // 1 B: beq -> D (3), falls to C
		codetest.Nop,       // 2 C
		codetest.Beq(3, 1), // 3 D: beq -> F (5), falls to E
		codetest.Nop,       // 4 E
		codetest.Ret,       // 5 F
	})
	n, err := Number(p)
	if err != nil {
		t.Fatal(err)
	}
	if n.NumPaths != 6 || len(n.Backedges) != 0 {
		t.Fatalf("NumPaths %d, backedges %v; want 6 and none", n.NumPaths, n.Backedges)
	}
	A, B, C, D, E, F := blockAt(t, p, 0), blockAt(t, p, 1), blockAt(t, p, 2), blockAt(t, p, 3), blockAt(t, p, 4), blockAt(t, p, 5)
	want := [][]int{
		{A, B, C, D, E, F}, // 0
		{A, B, C, D, F},    // 1
		{A, B, D, E, F},    // 2
		{A, B, D, F},       // 3
		{A, C, D, E, F},    // 4
		{A, C, D, F},       // 5
	}
	for id, w := range want {
		got, err := n.Blocks(uint64(id))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, w) {
			t.Errorf("path %d: blocks %v, want %v", id, got, w)
		}
	}
	checkAll(t, n)
	if _, err := n.Path(6); err == nil {
		t.Error("Path(6) of 6 paths: no error")
	}
}

// TestLoop is sec. 2.2's transformation on a loop: A; B: if x goto D; C:
// goto B; D: return. The backedge C->B becomes Entry->B and C->Exit, so
// there are four paths: A B C (ends with the backedge), A B D, B C (after
// the backedge, ends with it again) and B D.
func TestLoop(t *testing.T) {
	p := build(t, []uint32{
		codetest.Nop,          // 0 A
		codetest.Beq(1, 1),    // 1 B: -> D (3)
		codetest.BrAlways(-2), // 2 C: -> B (1)
		codetest.Ret,          // 3 D
	})
	n, err := Number(p)
	if err != nil {
		t.Fatal(err)
	}
	A, B, C, D := blockAt(t, p, 0), blockAt(t, p, 1), blockAt(t, p, 2), blockAt(t, p, 3)
	if n.NumPaths != 4 || len(n.Backedges) != 1 {
		t.Fatalf("NumPaths %d, backedges %v; want 4 and one", n.NumPaths, n.Backedges)
	}
	be := p.Edges[n.Backedges[0]]
	if be.From != C || be.To != B {
		t.Fatalf("backedge %d->%d, want C->B", be.From, be.To)
	}
	if n.Actions[n.Backedges[0]].Kind != Back {
		t.Errorf("backedge action %v, want Back", n.Actions[n.Backedges[0]])
	}
	var got [][]int
	for id := uint64(0); id < n.NumPaths; id++ {
		b, err := n.Blocks(id)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b)
	}
	slices.SortFunc(got, slices.Compare)
	want := [][]int{{A, B, C}, {A, B, D}, {B, C}, {B, D}}
	slices.SortFunc(want, slices.Compare)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("paths %v, want %v", got, want)
	}
	checkAll(t, n)
}

// TestTwoBackedgesOneHeader: backedges from two blocks into one header
// share the header's Entry dummy, so the paths after either are one path.
func TestTwoBackedgesOneHeader(t *testing.T) {
	p := build(t, []uint32{
		codetest.Nop,        // 0 H
		codetest.Beq(1, -2), // 1 -> H (back)
		codetest.Beq(2, -3), // 2 -> H (back)
		codetest.Ret,        // 3
	})
	n, err := Number(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Backedges) != 2 {
		t.Fatalf("backedges %v, want two", n.Backedges)
	}
	a, b := n.Actions[n.Backedges[0]], n.Actions[n.Backedges[1]]
	if a.Start != b.Start {
		t.Errorf("backedges into one header start differently: %v, %v", a, b)
	}
	// From Entry or after a backedge, H then: back at 1, back at 2, or Exit.
	if n.NumPaths != 6 {
		t.Errorf("NumPaths %d, want 6", n.NumPaths)
	}
	checkAll(t, n)
}

func TestSelfLoopAndErrors(t *testing.T) {
	p := build(t, []uint32{
		codetest.Bne(1, -1), // 0: -> 0
		codetest.Ret,
	})
	n, err := Number(p)
	if err != nil {
		t.Fatal(err)
	}
	if n.NumPaths != 4 || len(n.Backedges) != 1 {
		t.Errorf("self loop: NumPaths %d backedges %v, want 4 and one", n.NumPaths, n.Backedges)
	}
	checkAll(t, n)

	// jmp (r1): unresolved, the paths are unknown.
	jmp := uint32(0x1a<<26 | 31<<21 | 1<<16)
	p = build(t, []uint32{codetest.Nop, jmp, codetest.Ret})
	if _, err := Number(p); !errors.Is(err, ErrMissingEdges) {
		t.Errorf("unresolved jmp: err %v, want ErrMissingEdges", err)
	}
	if _, err := Number(nil); err == nil {
		t.Error("nil procedure: no error")
	}

	// 64 diamonds in a row: 2^64 paths.
	var words []uint32
	for i := 0; i < 64; i++ {
		words = append(words, codetest.Beq(1, 1), codetest.Nop)
	}
	words = append(words, codetest.Ret)
	if _, err := Number(build(t, words)); !errors.Is(err, ErrTooManyPaths) {
		t.Errorf("2^64 paths: err %v, want ErrTooManyPaths", err)
	}
	// 62 diamonds: 2^62 paths, numbered.
	n, err = Number(build(t, words[2*2:]))
	if err != nil || n.NumPaths != 1<<62 {
		t.Fatalf("2^62 paths: %v, %v", n, err)
	}
	for _, id := range []uint64{0, 1, 12345, 1<<62 - 1} {
		edges, err := n.Path(id)
		if err != nil {
			t.Fatal(err)
		}
		if got := follow(t, n, edges); got != id {
			t.Errorf("2^62 paths: path %d follows to %d", id, got)
		}
	}
}

// TestRandomGraphs numbers random procedures (conditional and
// unconditional branches anywhere, so irreducible loops too) and checks
// every path exhaustively.
func TestRandomGraphs(t *testing.T) {
	rng := rand.New(rand.NewSource(13))
	numbered := 0
	for iter := 0; iter < 3000; iter++ {
		size := 2 + rng.Intn(14)
		words := make([]uint32, size)
		for i := range words {
			target := rng.Intn(size)
			disp := int32(target - (i + 1))
			switch r := rng.Intn(10); {
			case i == size-1 || r == 0:
				words[i] = codetest.Ret
			case r < 5:
				words[i] = codetest.Beq(uint32(1+rng.Intn(3)), disp)
			case r < 7:
				words[i] = codetest.BrAlways(disp)
			default:
				words[i] = codetest.Nop
			}
		}
		p := build(t, words)
		n, err := Number(p)
		if err != nil {
			if errors.Is(err, ErrNoExit) {
				continue // an infinite loop with no exit at all
			}
			t.Fatalf("%v: %v", words, err)
		}
		numbered++
		checkAll(t, n)
	}
	if numbered < 2000 {
		t.Errorf("only %d of 3000 random graphs numbered", numbered)
	}
}

// TestWorkloads numbers every procedure of every embedded workload and
// checks every path of those with at most 20000.
func TestWorkloads(t *testing.T) {
	for _, w := range workloads.All() {
		data, err := workloads.Binary(w.Name)
		if err != nil {
			t.Fatal(err)
		}
		im, err := elfimage.Parse(data, "/bin/"+w.Name)
		if err != nil {
			t.Fatal(err)
		}
		c, err := cfg.NewCode(im, cfg.Options{})
		if err != nil {
			t.Fatal(err)
		}
		procs, err := c.BuildAll()
		if err != nil {
			t.Fatal(err)
		}
		var numbered, checked, missing, tooMany, adds, naive int
		var most uint64
		for _, p := range procs {
			n, err := Number(p)
			if errors.Is(err, ErrMissingEdges) {
				missing++
				continue
			}
			if errors.Is(err, ErrTooManyPaths) {
				tooMany++
				continue
			}
			if err != nil {
				t.Errorf("%s: %v", w.Name, err)
				continue
			}
			numbered++
			most = max(most, n.NumPaths)
			for _, e := range n.g {
				if e.kind == agReal && e.val != 0 && e.from != p.Entry() && e.to != p.Exit() {
					naive++
				}
			}
			for _, a := range n.Actions {
				if a.Kind == Add {
					adds++
				}
			}
			if n.NumPaths <= 20000 {
				checkAll(t, n)
				checked++
			}
		}
		t.Logf("%-9s %4d procedures: %4d numbered (%4d checked exhaustively), %3d with missing edges, %d with more than 2^63 paths; most paths %d; Add actions %d (Val on every edge: %d)",
			w.Name, len(procs), numbered, checked, missing, tooMany, most, adds, naive)
		if numbered < len(procs)*9/10 {
			t.Errorf("%s: only %d of %d procedures numbered", w.Name, numbered, len(procs))
		}
	}
}

// follow runs the actions along edges as an instrumenter would and
// returns the path ID counted.
func follow(t testing.TB, n *Numbering, edges []int) uint64 {
	t.Helper()
	p := n.Proc
	var r int64
	if from := p.Edges[edges[0]].From; from != p.Entry() {
		// After a backedge into from: every such backedge sets r alike.
		found := false
		for _, b := range n.Backedges {
			if p.Edges[b].To == from {
				r, found = n.Actions[b].Start, true
			}
		}
		if !found {
			t.Fatalf("path starts at block %d, no backedge's target", from)
		}
	}
	for i, e := range edges {
		a := n.Actions[e]
		last := i == len(edges)-1
		switch a.Kind {
		case Init:
			r = a.Start
		case Add:
			r += a.Add
		case Count, Back:
			if !last {
				t.Fatalf("path %v goes on after %v on edge %d", edges, a, e)
			}
			return uint64(r + a.Add)
		}
	}
	t.Fatalf("path %v never counted", edges)
	return 0
}

// enumerate lists every path of p independently of the numbering: from
// Entry or a backedge's target, along edges that are not backedges, to
// Exit or through a backedge.
func enumerate(n *Numbering) [][]int {
	p := n.Proc
	var out [][]int
	var walk func(v int, path []int)
	walk = func(v int, path []int) {
		for _, e := range p.Out(v) {
			next := append(path[:len(path):len(path)], e)
			switch {
			case n.IsBackedge(e), p.Edges[e].To == p.Exit():
				out = append(out, next)
			default:
				walk(p.Edges[e].To, next)
			}
		}
	}
	walk(p.Entry(), nil)
	heads := map[int]bool{}
	for _, b := range n.Backedges {
		heads[p.Edges[b].To] = true
	}
	for v := range p.Blocks {
		if heads[v] {
			walk(v, nil)
		}
	}
	return out
}

// checkAll checks the invariants: the actions sit where they must,
// following them along each path gives a distinct ID in 0..NumPaths-1
// (so a bijection, as there are NumPaths paths), and Path inverts it.
func checkAll(t *testing.T, n *Numbering) {
	t.Helper()
	p := n.Proc
	starts := map[int]int64{}
	for e, edge := range p.Edges {
		a := n.Actions[e]
		reachable := edge.From == p.Entry() || p.Blocks[edge.From].Reachable
		switch {
		case !reachable:
			if a.Kind != None {
				t.Errorf("%s: unreachable edge %d has %v", p.Name, e, a)
			}
		case n.IsBackedge(e):
			if a.Kind != Back {
				t.Errorf("%s: backedge %d has %v", p.Name, e, a)
			}
			if s, ok := starts[edge.To]; ok && s != a.Start {
				t.Errorf("%s: backedges into %d start at %d and %d", p.Name, edge.To, s, a.Start)
			}
			starts[edge.To] = a.Start
		case edge.From == p.Entry():
			if a.Kind != Init {
				t.Errorf("%s: Entry edge %d has %v", p.Name, e, a)
			}
		case edge.To == p.Exit():
			if a.Kind != Count {
				t.Errorf("%s: Exit edge %d has %v", p.Name, e, a)
			}
		default:
			if a.Kind != None && a.Kind != Add {
				t.Errorf("%s: inner edge %d has %v", p.Name, e, a)
			}
		}
	}
	all := enumerate(n)
	if uint64(len(all)) != n.NumPaths {
		t.Fatalf("%s: %d paths enumerated, NumPaths %d", p.Name, len(all), n.NumPaths)
	}
	seen := make(map[uint64]bool, len(all))
	for _, path := range all {
		id := follow(t, n, path)
		if id >= n.NumPaths {
			t.Fatalf("%s: path %v has ID %d of %d", p.Name, path, id, n.NumPaths)
		}
		if seen[id] {
			t.Fatalf("%s: two paths have ID %d", p.Name, id)
		}
		seen[id] = true
		back, err := n.Path(id)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(back, path) {
			t.Fatalf("%s: Path(%d) = %v, want %v", p.Name, id, back, path)
		}
		if got, err := n.ID(path); err != nil || got != id {
			t.Fatalf("%s: ID(%v) = %d, %v; want %d", p.Name, path, got, err, id)
		}
	}
	// The increments sit on chords only: at most E+1-(V-1) edges of the
	// graph with Exit->Entry carry one.
	nodes := map[int]bool{}
	for _, e := range n.g {
		nodes[e.from], nodes[e.to] = true, true
	}
	chords := len(n.g) + 1 - (len(nodes) - 1)
	nonzero := 0
	for _, e := range n.g {
		if e.inc != 0 {
			nonzero++
		}
	}
	if nonzero > chords {
		t.Errorf("%s: %d edges carry increments, more than the %d chords", p.Name, nonzero, chords)
	}
}
