package cycleq

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"dcpi/internal/testrand"
)

// This file holds the brute-force model Classes is checked against: the
// definitions of Classes' doc comment computed the slow, obvious way, on
// graphs of a dozen blocks.

// oracleValid says whether g is well formed, from the rules, not from
// validate.
func oracleValid(g Graph) bool {
	ok := g.N >= 1 && g.N <= MaxSize && len(g.Edges) <= MaxSize && 0 <= g.Entry && g.Entry < g.N && 0 <= g.Exit && g.Exit < g.N
	for _, e := range g.Edges {
		ok = ok && 0 <= e.From && e.From < g.N && 0 <= e.To && e.To < g.N
	}
	return ok
}

// oracleAdded returns the blocks kept and the edges added, by the rules of
// Classes with a full reachability matrix.
func oracleAdded(g Graph) (included []bool, added []Edge) {
	r := make([][]bool, g.N) // r[u][v]: a path (maybe empty) from u to v
	for u := range g.N {
		r[u] = make([]bool, g.N)
		r[u][u] = true
		for changed := true; changed; {
			changed = false
			for _, e := range g.Edges {
				if r[u][e.From] && !r[u][e.To] {
					r[u][e.To], changed = true, true
				}
			}
		}
	}
	included = make([]bool, g.N)
	for v := range g.N {
		included[v] = r[g.Entry][v] || v == g.Exit
	}
	added = []Edge{{g.Exit, g.Entry}}
	stuck := func(v int) bool { return included[v] && !r[v][g.Exit] }
	var heads []int
	for s := range g.N { // s: a member of a candidate region
		if !stuck(s) {
			continue
		}
		region := func(v int) bool { return r[s][v] && r[v][s] }
		sink, header, first := true, -1, true
		for v := range g.N {
			if !region(v) {
				continue
			}
			if v < s {
				first = false // the region was seen from its least member
			}
			for w := range g.N {
				if r[v][w] && !region(w) {
					sink = false
				}
			}
			entered := v == g.Entry
			for _, e := range g.Edges {
				if e.To == v && included[e.From] && !region(e.From) {
					entered = true
				}
			}
			if entered && header < 0 {
				header = v
			}
		}
		if sink && first {
			heads = append(heads, header)
		}
	}
	slices.Sort(heads)
	for _, h := range heads {
		added = append(added, Edge{h, g.Exit})
	}
	return included, added
}

// oraclePartition returns, for the items blocks 0..N-1, edges N..N+M-1 and
// added edges after them, a representative per item: two items share a
// class iff their representatives are equal. Directed cycle equivalence on
// the split graph, straight from the definition: e1 = (a→b) lies on a
// cycle avoiding e2 iff b reaches a without e2.
func oraclePartition(t testing.TB, g Graph) (rep []int, added []Edge) {
	included, added := oracleAdded(g)
	type dedge struct{ from, to int }
	item := []int{} // split edge → item
	var es []dedge
	for v := range g.N {
		if included[v] {
			item = append(item, v)
			es = append(es, dedge{2 * v, 2*v + 1})
		}
	}
	for i, e := range g.Edges {
		if included[e.From] && included[e.To] {
			item = append(item, g.N+i)
			es = append(es, dedge{2*e.From + 1, 2 * e.To})
		}
	}
	for j, e := range added {
		item = append(item, g.N+len(g.Edges)+j)
		es = append(es, dedge{2*e.From + 1, 2 * e.To})
	}
	outOf := make([][]int, 2*g.N)
	for k, e := range es {
		outOf[e.from] = append(outOf[e.from], k)
	}
	reaches := func(from, to, without int) bool {
		seen := make([]bool, 2*g.N)
		seen[from] = true
		work := []int{from}
		for len(work) > 0 {
			v := work[len(work)-1]
			work = work[:len(work)-1]
			if v == to {
				return true
			}
			for _, k := range outOf[v] {
				if w := es[k].to; k != without && !seen[w] {
					seen[w] = true
					work = append(work, w)
				}
			}
		}
		return false
	}
	// The augmented split graph must be strongly connected: every split
	// edge on some cycle, which is what the added edges are for.
	for k, e := range es {
		if !reaches(e.to, e.from, -1) {
			t.Fatalf("oracle: edge %d of the augmented split graph is on no cycle (graph %+v)", k, g)
		}
	}
	nItems := g.N + len(g.Edges) + len(added)
	rep = make([]int, nItems)
	for i := range rep {
		rep[i] = i // excluded items alone
	}
	for k1 := range es {
		rep[item[k1]] = item[k1]
		for k2 := range k1 {
			if !reaches(es[k1].to, es[k1].from, k2) && !reaches(es[k2].to, es[k2].from, k1) {
				rep[item[k1]] = rep[item[k2]]
				break
			}
		}
	}
	return rep, added
}

// checkAgainstOracle compares Classes(g) with the model.
func checkAgainstOracle(t testing.TB, g Graph) {
	t.Helper()
	p, err := Classes(g, Options{})
	if !oracleValid(g) {
		if !errors.Is(err, ErrBadGraph) {
			t.Fatalf("graph %+v is malformed, but Classes said %v", g, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Classes(%+v): %v", g, err)
	}
	checkNumbering(t, g, p)
	rep, added := oraclePartition(t, g)
	got := slices.Concat(p.Node, p.Edge)
	var gotAdded []Edge
	for _, a := range p.Added {
		got = append(got, a.Class)
		gotAdded = append(gotAdded, a.Edge)
	}
	if !slices.Equal(gotAdded, added) {
		t.Fatalf("graph %+v: added edges %v, want %v", g, gotAdded, added)
	}
	for i := range got {
		for j := range i {
			if (got[i] == got[j]) != (rep[i] == rep[j]) {
				t.Fatalf("graph %+v:\n%s and %s: same class %v, want %v\npartition %+v",
					g, itemName(g, added, i), itemName(g, added, j), got[i] == got[j], rep[i] == rep[j], p)
			}
		}
	}
}

// checkNumbering checks the shape Partition promises: dense numbers in
// order of first appearance.
func checkNumbering(t testing.TB, g Graph, p Partition) {
	t.Helper()
	if len(p.Node) != g.N || len(p.Edge) != len(g.Edges) || len(p.Added) < 1 {
		t.Fatalf("partition of %+v has %d nodes, %d edges, %d added", g, len(p.Node), len(p.Edge), len(p.Added))
	}
	next := 0
	all := slices.Concat(p.Node, p.Edge)
	for _, a := range p.Added {
		all = append(all, a.Class)
	}
	for _, c := range all {
		switch {
		case c == next:
			next++
		case c < 0 || c > next:
			t.Fatalf("partition %+v: class %d out of first-appearance order", p, c)
		}
	}
	if next != p.Count {
		t.Fatalf("partition %+v: Count %d, classes used %d", p, p.Count, next)
	}
}

func itemName(g Graph, added []Edge, i int) string {
	switch {
	case i < g.N:
		return fmt.Sprintf("block %d", i)
	case i < g.N+len(g.Edges):
		e := g.Edges[i-g.N]
		return fmt.Sprintf("edge %d (%d→%d)", i-g.N, e.From, e.To)
	default:
		e := added[i-g.N-len(g.Edges)]
		return fmt.Sprintf("added edge %d→%d", e.From, e.To)
	}
}

// randomGraph draws a small graph: either any edges at all (exitless
// regions, unreachable blocks, self-loops, parallel edges) or a CFG-like
// one, a fall-through chain with branches.
func randomGraph(r *rand.Rand, maxN int) Graph {
	n := 1 + r.IntN(maxN)
	g := Graph{N: n, Entry: r.IntN(n), Exit: r.IntN(n)}
	if r.IntN(2) == 0 {
		for range r.IntN(2*n + 3) {
			g.Edges = append(g.Edges, Edge{r.IntN(n), r.IntN(n)})
		}
		return g
	}
	g.Entry, g.Exit = 0, n-1
	for v := range n - 1 {
		switch r.IntN(5) {
		case 0: // unconditional branch
			g.Edges = append(g.Edges, Edge{v, r.IntN(n)})
		case 1, 2: // conditional branch and fall-through
			g.Edges = append(g.Edges, Edge{v, r.IntN(n)}, Edge{v, v + 1})
		default:
			g.Edges = append(g.Edges, Edge{v, v + 1})
		}
	}
	return g
}

func TestClassesAgainstOracle(t *testing.T) {
	r := testrand.New(t)
	runs := 3000
	if testing.Short() {
		runs = 300
	}
	for range runs {
		checkAgainstOracle(t, randomGraph(r, 10))
	}
}
