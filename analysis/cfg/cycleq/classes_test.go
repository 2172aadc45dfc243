package cycleq

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"dcpi/internal/testrand"
)

// groups renders a partition as its classes, each a sorted list of items:
// bN block N, eN edge N, xN added edge N; classes in order of number.
func groups(p Partition) string {
	byClass := make([][]string, p.Count)
	for v, c := range p.Node {
		byClass[c] = append(byClass[c], fmt.Sprintf("b%d", v))
	}
	for i, c := range p.Edge {
		byClass[c] = append(byClass[c], fmt.Sprintf("e%d", i))
	}
	for j, a := range p.Added {
		byClass[a.Class] = append(byClass[a.Class], fmt.Sprintf("x%d", j))
	}
	var out []string
	for _, items := range byClass {
		out = append(out, "{"+strings.Join(items, " ")+"}")
	}
	return strings.Join(out, " ")
}

func TestClassesKnownShapes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		g     Graph
		opt   Options
		added []Edge
		want  string
	}{{
		// if-then-else: each arm its own class; entry and join run once
		// per call.
		name:  "diamond",
		g:     Graph{N: 4, Entry: 0, Exit: 3, Edges: []Edge{{0, 1}, {0, 2}, {1, 3}, {2, 3}}},
		added: []Edge{{3, 0}},
		want:  "{b0 b3 x0} {b1 e0 e2} {b2 e1 e3}",
	}, {
		// while loop: the header runs once more than the body.
		name:  "while loop",
		g:     Graph{N: 4, Entry: 0, Exit: 3, Edges: []Edge{{0, 1}, {1, 2}, {2, 1}, {1, 3}}},
		added: []Edge{{3, 0}},
		want:  "{b0 b3 e0 e3 x0} {b1} {b2 e1 e2}",
	}, {
		// nested loops: outer header 1, inner header 2, inner body 3,
		// outer latch 4.
		name:  "nested loops",
		g:     Graph{N: 6, Entry: 0, Exit: 5, Edges: []Edge{{0, 1}, {1, 2}, {2, 3}, {3, 2}, {2, 4}, {4, 1}, {1, 5}}},
		added: []Edge{{5, 0}},
		want:  "{b0 b5 e0 e6 x0} {b1} {b2} {b3 e2 e3} {b4 e1 e4 e5}",
	}, {
		// vmunix's idle loop: exit is unreachable; the loop's header 1
		// gets an edge to exit, which runs once per call, like entry.
		name:  "infinite loop",
		g:     Graph{N: 4, Entry: 0, Exit: 3, Edges: []Edge{{0, 1}, {1, 2}, {2, 1}}},
		added: []Edge{{3, 0}, {1, 3}},
		want:  "{b0 b3 e0 x0 x1} {b1} {b2 e1 e2}",
	}, {
		// an infinite loop on one arm, a return on the other.
		name:  "loop forever or return",
		g:     Graph{N: 4, Entry: 0, Exit: 3, Edges: []Edge{{0, 1}, {1, 2}, {2, 1}, {0, 3}}},
		added: []Edge{{3, 0}, {1, 3}},
		want:  "{b0 b3 x0} {b1} {b2 e1 e2} {e0 x1} {e3}",
	}, {
		// block 1 ends in a call that never returns: no successor.
		name:  "dead end",
		g:     Graph{N: 3, Entry: 0, Exit: 2, Edges: []Edge{{0, 1}, {0, 2}}},
		added: []Edge{{2, 0}, {1, 2}},
		want:  "{b0 b2 x0} {b1 e0 x1} {e1}",
	}, {
		// the whole procedure is a loop through entry.
		name:  "entry in an infinite loop",
		g:     Graph{N: 3, Entry: 0, Exit: 2, Edges: []Edge{{0, 1}, {1, 0}}},
		added: []Edge{{2, 0}, {0, 2}},
		want:  "{b0} {b1 e0 e1} {b2 x0 x1}",
	}, {
		// block 2 is never reached: alone, as is its edge.
		name:  "unreachable block",
		g:     Graph{N: 3, Entry: 0, Exit: 1, Edges: []Edge{{0, 1}, {2, 1}}},
		added: []Edge{{1, 0}},
		want:  "{b0 b1 e0 x0} {b2} {e1}",
	}, {
		name:  "self-loop",
		g:     Graph{N: 3, Entry: 0, Exit: 2, Edges: []Edge{{0, 1}, {1, 1}, {1, 2}}},
		added: []Edge{{2, 0}},
		want:  "{b0 b2 e0 e2 x0} {b1} {e1}",
	}, {
		// a conditional branch to its own fall-through: two edges.
		name:  "parallel edges",
		g:     Graph{N: 2, Entry: 0, Exit: 1, Edges: []Edge{{0, 1}, {0, 1}}},
		added: []Edge{{1, 0}},
		want:  "{b0 b1 x0} {e0} {e1}",
	}, {
		name:  "one block",
		g:     Graph{N: 1},
		added: []Edge{{0, 0}},
		want:  "{b0 x0}",
	}, {
		name:  "missing edges",
		g:     Graph{N: 4, Entry: 0, Exit: 3, Edges: []Edge{{0, 1}, {0, 2}, {1, 3}, {2, 3}}},
		opt:   Options{MissingEdges: true},
		added: []Edge{{3, 0}},
		want:  "{b0} {b1} {b2} {b3} {e0} {e1} {e2} {e3} {x0}",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Classes(tc.g, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			checkNumbering(t, tc.g, p)
			var added []Edge
			for _, a := range p.Added {
				added = append(added, a.Edge)
			}
			if !slices.Equal(added, tc.added) {
				t.Errorf("added %v, want %v", added, tc.added)
			}
			if got := groups(p); got != tc.want {
				t.Errorf("classes\n got %s\nwant %s", got, tc.want)
			}
			if !tc.opt.MissingEdges {
				checkAgainstOracle(t, tc.g)
			}
		})
	}
}

func TestClassesBadGraph(t *testing.T) {
	for _, tc := range []struct {
		g    Graph
		want string
	}{
		{Graph{N: 0}, "0 nodes"},
		{Graph{N: MaxSize + 1}, "more than"},
		{Graph{N: -3}, "-3 nodes"},
		{Graph{N: 2, Entry: -1}, "entry -1"},
		{Graph{N: 2, Entry: 2}, "entry 2"},
		{Graph{N: 2, Exit: 5}, "exit 5"},
		{Graph{N: 2, Edges: []Edge{{0, 1}, {1, 2}}}, "edge 1 (1→2)"},
		{Graph{N: 2, Edges: []Edge{{-1, 0}}}, "edge 0 (-1→0)"},
	} {
		for _, opt := range []Options{{}, {MissingEdges: true}} {
			_, err := Classes(tc.g, opt)
			if !errors.Is(err, ErrBadGraph) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Classes(%+v, %+v) = %v, want ErrBadGraph naming %q", tc.g, opt, err, tc.want)
			}
		}
	}
}

// TestClassesCountWalks checks what Classes promises against executions:
// random walks from entry, which return at exit or are cut off (at a
// block with no successor, or after a step budget, as a profile catches a
// call still running). Within a class, counts may differ by at most the
// number of walks cut off; with none cut off they are equal.
func TestClassesCountWalks(t *testing.T) {
	r := testrand.New(t)
	runs := 500
	if testing.Short() {
		runs = 50
	}
	for range runs {
		g := randomGraph(r, 10)
		p, err := Classes(g, Options{})
		if err != nil {
			t.Fatal(err)
		}
		succ := make([][]int, g.N)
		for i, e := range g.Edges {
			succ[e.From] = append(succ[e.From], i)
		}
		nodeCount := make([]int, g.N)
		edgeCount := make([]int, len(g.Edges))
		cut := 0
		for range 40 {
			v, steps := g.Entry, 0
			for {
				nodeCount[v]++
				if v == g.Exit {
					break
				}
				if len(succ[v]) == 0 || steps == 60 {
					cut++
					break
				}
				e := succ[v][r.IntN(len(succ[v]))]
				edgeCount[e]++
				v = g.Edges[e].To
				steps++
			}
		}
		lo := make([]int, p.Count)
		hi := make([]int, p.Count)
		for c := range lo {
			lo[c], hi[c] = 1<<62, -1
		}
		note := func(c, n int) { lo[c], hi[c] = min(lo[c], n), max(hi[c], n) }
		for v, n := range nodeCount {
			note(p.Node[v], n)
		}
		for i, n := range edgeCount {
			note(p.Edge[i], n)
		}
		for c := range lo {
			if hi[c] >= 0 && hi[c]-lo[c] > cut {
				t.Fatalf("graph %+v, partition %s: class %d counts range %d..%d with %d walks cut off\nnodes %v edges %v",
					g, groups(p), c, lo[c], hi[c], cut, nodeCount, edgeCount)
			}
		}
	}
}

// TestClassesLongProcedure runs graphs as deep as they are long: a
// straight line of 300,000 blocks (one class), and the same with a loop
// around every other block, which a recursive search would follow one
// frame per block.
func TestClassesLongProcedure(t *testing.T) {
	const n = 300_000
	g := Graph{N: n, Entry: 0, Exit: n - 1}
	for v := range n - 1 {
		g.Edges = append(g.Edges, Edge{v, v + 1})
	}
	p, err := Classes(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Count != 1 {
		t.Fatalf("straight line: %d classes, want 1", p.Count)
	}
	for v := 1; v < n-1; v += 2 {
		g.Edges = append(g.Edges, Edge{v, v})
	}
	p, err = Classes(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Each looping block is its own class, as is its self-loop; all
	// else runs once per call.
	if want := 1 + 2*((n-1)/2); p.Count != want {
		t.Fatalf("self-loops: %d classes, want %d", p.Count, want)
	}
}
