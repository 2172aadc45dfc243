package cycleq

import (
	"testing"

	"dcpi/internal/testrand"
)

// connectedWithout says whether the undirected multigraph stays connected
// with edges a and b removed.
func connectedWithout(n int, ends [][2]int32, a, b int) bool {
	parent := make([]int, n)
	for v := range parent {
		parent[v] = v
	}
	find := func(v int) int {
		for parent[v] != v {
			v = parent[v]
		}
		return v
	}
	parts := n
	for i, e := range ends {
		if i == a || i == b {
			continue
		}
		if x, y := find(int(e[0])), find(int(e[1])); x != y {
			parent[x] = y
			parts--
		}
	}
	return parts == 1
}

// TestUndirectedAgainstCuts checks the core on random 2-edge-connected
// multigraphs against the textbook characterization: there, two distinct
// edges are cycle equivalent iff removing both disconnects the graph.
func TestUndirectedAgainstCuts(t *testing.T) {
	r := testrand.New(t)
	runs := 3000
	if testing.Short() {
		runs = 300
	}
	for done := 0; done < runs; {
		n := 2 + r.IntN(9)
		var ends [][2]int32
		for range n + r.IntN(2*n) {
			ends = append(ends, [2]int32{int32(r.IntN(n)), int32(r.IntN(n))})
		}
		bridgeless := connectedWithout(n, ends, -1, -1)
		for i := range ends {
			bridgeless = bridgeless && connectedWithout(n, ends, i, -1)
		}
		if !bridgeless {
			continue
		}
		done++
		class := undirectedClasses(n, ends, r.IntN(n))
		for i := range ends {
			for j := range i {
				selfLoop := ends[i][0] == ends[i][1] || ends[j][0] == ends[j][1]
				want := !selfLoop && !connectedWithout(n, ends, i, j)
				if got := class[i] == class[j]; got != want {
					t.Fatalf("graph %v: edges %d and %d equivalent %v, want %v (classes %v)", ends, i, j, got, want, class)
				}
			}
		}
	}
}

// TestUndirectedCapOnlyAboveNode pins a case the paper's pseudocode leaves
// implicit: v (node 1) has no backedge of its own, one child (3) whose
// brackets all end at v and one (2) whose bracket reaches the root. A
// capping backedge from v to v would never be deleted and would split the
// tree edges 0-1 and 1-2, which share their only bracket 2-0.
func TestUndirectedCapOnlyAboveNode(t *testing.T) {
	ends := [][2]int32{{0, 1}, {1, 3}, {3, 1}, {1, 2}, {2, 0}}
	c := undirectedClasses(4, ends, 0)
	if c[0] != c[3] || c[0] != c[4] || c[1] != c[2] || c[0] == c[1] {
		t.Fatalf("classes %v, want {0,3,4} and {1,2}", c)
	}
}
