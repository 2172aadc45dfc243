package cycleq

import "slices"

// augmentation is what Classes adds to a graph to make it strongly
// connected: the blocks it keeps and the edges it adds.
type augmentation struct {
	included []bool // reachable from Entry, or Exit
	added    []Edge // exit→entry, then header→exit per exitless region
}

// augment finds the blocks reachable from Entry and the exitless regions
// among them (see Classes). An exitless region is a sink strongly
// connected component of the reachable blocks that cannot reach Exit:
// every block that cannot reach Exit leads into one, so one added edge
// per region lets every block reach Exit, and Exit reaches every kept
// block through exit→entry.
func augment(g Graph) augmentation {
	succ, pred := adjacency(g)
	a := augmentation{included: reach(g.N, g.Entry, succ, nil)}
	a.included[g.Exit] = true
	a.added = append(a.added, Edge{From: g.Exit, To: g.Entry})

	reachesExit := reach(g.N, g.Exit, pred, a.included)
	stuck := make([]bool, g.N) // kept, but cannot reach Exit
	someStuck := false
	for v := range g.N {
		stuck[v] = a.included[v] && !reachesExit[v]
		someStuck = someStuck || stuck[v]
	}
	if !someStuck {
		return a
	}
	comp := components(g.N, succ, pred, stuck)
	// A component is a sink unless an edge leaves it; successors of a
	// stuck block are stuck, so only edges between components count.
	ncomp := 0
	for _, c := range comp {
		ncomp = max(ncomp, int(c)+1)
	}
	sink := make([]bool, ncomp)
	for i := range sink {
		sink[i] = true
	}
	header := make([]int, ncomp)
	for i := range header {
		header[i] = -1
	}
	for v := range g.N {
		if !stuck[v] {
			continue
		}
		c := comp[v]
		for _, w := range succ.of(v) {
			if comp[w] != c {
				sink[c] = false
			}
		}
		entered := v == g.Entry
		for _, u := range pred.of(v) {
			if a.included[u] && comp[u] != c {
				entered = true
			}
		}
		if entered && header[c] < 0 {
			header[c] = v // blocks are visited in increasing order
		}
	}
	for v := range g.N {
		// Every stuck block is reachable from Entry, so its region is
		// entered somewhere; should that ever fail, any member will do
		// as the header rather than none.
		if stuck[v] && header[comp[v]] < 0 {
			header[comp[v]] = v
		}
	}
	var heads []int
	for c := range ncomp {
		if sink[c] {
			heads = append(heads, header[c])
		}
	}
	slices.Sort(heads)
	for _, h := range heads {
		a.added = append(a.added, Edge{From: h, To: g.Exit})
	}
	return a
}

// csr is an adjacency list in compressed form: the neighbours of v are
// to[start[v]:start[v+1]].
type csr struct {
	start []int32
	to    []int32
}

func (c csr) of(v int) []int32 { return c.to[c.start[v]:c.start[v+1]] }

// adjacency returns the successor and predecessor lists of g.
func adjacency(g Graph) (succ, pred csr) {
	succ = csr{start: make([]int32, g.N+1), to: make([]int32, len(g.Edges))}
	pred = csr{start: make([]int32, g.N+1), to: make([]int32, len(g.Edges))}
	for _, e := range g.Edges {
		succ.start[e.From+1]++
		pred.start[e.To+1]++
	}
	for v := range g.N {
		succ.start[v+1] += succ.start[v]
		pred.start[v+1] += pred.start[v]
	}
	sfill := slices.Clone(succ.start[:g.N])
	pfill := slices.Clone(pred.start[:g.N])
	for _, e := range g.Edges {
		succ.to[sfill[e.From]] = int32(e.To)
		sfill[e.From]++
		pred.to[pfill[e.To]] = int32(e.From)
		pfill[e.To]++
	}
	return succ, pred
}

// reach marks the nodes reachable from start along adj, through nodes
// allowed (all, when allowed is nil).
func reach(n, start int, adj csr, allowed []bool) []bool {
	seen := make([]bool, n)
	seen[start] = true
	work := []int32{int32(start)}
	for len(work) > 0 {
		v := work[len(work)-1]
		work = work[:len(work)-1]
		for _, w := range adj.of(int(v)) {
			if !seen[w] && (allowed == nil || allowed[w]) {
				seen[w] = true
				work = append(work, w)
			}
		}
	}
	return seen
}

// components numbers the strongly connected components of the subgraph
// induced by the nodes in, by Kosaraju's two searches, both iterative;
// nodes outside it get -1.
func components(n int, succ, pred csr, in []bool) []int32 {
	// First search: nodes in order of finishing.
	finished := make([]int32, 0, n)
	visited := make([]bool, n)
	pos := make([]int32, n)
	var stack []int32
	for s := range n {
		if !in[s] || visited[s] {
			continue
		}
		visited[s] = true
		pos[s] = succ.start[s]
		stack = append(stack[:0], int32(s))
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			if pos[v] == succ.start[v+1] {
				stack = stack[:len(stack)-1]
				finished = append(finished, v)
				continue
			}
			w := succ.to[pos[v]]
			pos[v]++
			if in[w] && !visited[w] {
				visited[w] = true
				pos[w] = succ.start[w]
				stack = append(stack, w)
			}
		}
	}
	// Second search, on the reversed graph, latest finisher first: each
	// tree is one component.
	comp := make([]int32, n)
	for v := range comp {
		comp[v] = -1
	}
	next := int32(0)
	for i := len(finished) - 1; i >= 0; i-- {
		s := finished[i]
		if comp[s] >= 0 {
			continue
		}
		comp[s] = next
		stack = append(stack[:0], s)
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, u := range pred.of(int(v)) {
				if in[u] && comp[u] < 0 {
					comp[u] = next
					stack = append(stack, u)
				}
			}
		}
		next++
	}
	return comp
}
