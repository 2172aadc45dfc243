package cycleq

// undirectedClasses computes the cycle equivalence classes of the edges of
// an undirected multigraph with nodes 0..n-1 and edge i joining ends[i][0]
// and ends[i][1], by Johnson, Pearson and Pingali's procedure CycleEquiv
// (PLDI 1994). It returns a class number per edge, not dense.
//
// The component of root must be 2-edge-connected, as it is when it comes
// from a strongly connected digraph, the only use here: the paper shows
// that there directed and undirected cycle equivalence agree (the tests
// check it against the directed definition). Edges outside that component
// get classes of their own, as do self-loops, which lie on no cycle but
// their own. Every loop is iterative: a procedure's depth-first tree can
// be as deep as it has blocks.
func undirectedClasses(n int, ends [][2]int32, root int) []int32 {
	m := len(ends)
	class := make([]int32, m)
	for i := range class {
		class[i] = -1
	}
	next := int32(0)
	newClass := func() int32 { next++; return next - 1 }

	// Incidence lists, each edge at both ends; self-loops are left out.
	start := make([]int32, n+1)
	for i, e := range ends {
		if e[0] == e[1] {
			class[i] = newClass()
			continue
		}
		start[e[0]+1]++
		start[e[1]+1]++
	}
	for v := range n {
		start[v+1] += start[v]
	}
	adj := make([]int32, start[n])
	fill := make([]int32, n)
	copy(fill, start[:n])
	for i, e := range ends {
		if e[0] == e[1] {
			continue
		}
		adj[fill[e[0]]] = int32(i)
		fill[e[0]]++
		adj[fill[e[1]]] = int32(i)
		fill[e[1]]++
	}

	// Undirected depth-first search. Every non-tree edge joins a node to
	// one of its ancestors (a backedge); it is met first from the lower
	// end, whose other end is then on the stack.
	const unseen = -1
	dfsnum := make([]int32, n)
	for v := range dfsnum {
		dfsnum[v] = unseen
	}
	parentEdge := make([]int32, n) // tree edge to the parent, -1 at the root
	preorder := make([]int32, 0, n)
	isTree := make([]bool, m)
	seen := make([]bool, m) // edge already classified as tree or backedge
	upper := make([]int32, m)
	lower := make([]int32, m)
	pos := make([]int32, n) // next incidence to scan, per node on the stack
	stack := []int32{int32(root)}
	dfsnum[root] = 0
	parentEdge[root] = -1
	preorder = append(preorder, int32(root))
	pos[root] = start[root]
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		if pos[v] == start[v+1] {
			stack = stack[:len(stack)-1]
			continue
		}
		e := adj[pos[v]]
		pos[v]++
		if seen[e] {
			continue
		}
		seen[e] = true
		w := ends[e][0]
		if w == v {
			w = ends[e][1]
		}
		if dfsnum[w] == unseen {
			isTree[e] = true
			dfsnum[w] = int32(len(preorder))
			preorder = append(preorder, w)
			parentEdge[w] = e
			pos[w] = start[w]
			stack = append(stack, w)
			continue
		}
		lower[e], upper[e] = v, w // backedge from v up to ancestor w
	}

	// Backedges by their ends: up[v] leave v for an ancestor, down[v]
	// arrive at v from a descendant (CSR layout, two passes).
	upStart := make([]int32, n+1)
	downStart := make([]int32, n+1)
	for e := range m {
		if seen[e] && !isTree[e] {
			upStart[lower[e]+1]++
			downStart[upper[e]+1]++
		}
	}
	for v := range n {
		upStart[v+1] += upStart[v]
		downStart[v+1] += downStart[v]
	}
	up := make([]int32, upStart[n])
	down := make([]int32, downStart[n])
	upFill := make([]int32, n)
	downFill := make([]int32, n)
	copy(upFill, upStart[:n])
	copy(downFill, downStart[:n])
	for e := range m {
		if seen[e] && !isTree[e] {
			up[upFill[lower[e]]] = int32(e)
			upFill[lower[e]]++
			down[downFill[upper[e]]] = int32(e)
			downFill[upper[e]]++
		}
	}

	// Brackets: backedge e is bracket e; the capping backedge made at
	// node v is bracket m+v. A bracket list is doubly linked from top
	// (most recently pushed) to bottom, with its size, so that create,
	// push, top, delete and concat are O(1).
	nb := m + n
	prev := make([]int32, nb)
	nxt := make([]int32, nb)
	recentSize := make([]int32, nb)
	recentClass := make([]int32, nb)
	type blist struct{ top, bottom, size int32 }
	lists := make([]blist, n)
	for v := range lists {
		lists[v] = blist{-1, -1, 0}
	}
	push := func(l *blist, b int32) {
		prev[b], nxt[b] = -1, l.top
		if l.top >= 0 {
			prev[l.top] = b
		} else {
			l.bottom = b
		}
		l.top = b
		l.size++
	}
	del := func(l *blist, b int32) {
		if prev[b] >= 0 {
			nxt[prev[b]] = nxt[b]
		} else {
			l.top = nxt[b]
		}
		if nxt[b] >= 0 {
			prev[nxt[b]] = prev[b]
		} else {
			l.bottom = prev[b]
		}
		l.size--
	}
	// concatOnto puts list c on top of list l.
	concatOnto := func(l *blist, c blist) {
		if c.size == 0 {
			return
		}
		if l.size == 0 {
			*l = c
			return
		}
		nxt[c.bottom] = l.top
		prev[l.top] = c.bottom
		l.top = c.top
		l.size += c.size
	}
	// Capping backedges arriving at a node, as a linked list through
	// cappingNext (at most one capping backedge leaves each node).
	cappingHead := make([]int32, n)
	cappingNext := make([]int32, n)
	for v := range cappingHead {
		cappingHead[v] = -1
	}

	// hi is the highest (smallest dfsnum) node a backedge from the
	// subtree reaches; hi1 and hi2 the best and second best over the
	// children, gathered as each child finishes.
	const infinity = int32(1<<31 - 1)
	hi := make([]int32, n)
	hi1 := make([]int32, n)
	hi2 := make([]int32, n)
	for v := range n {
		hi1[v], hi2[v] = infinity, infinity
	}
	for i := len(preorder) - 1; i >= 0; i-- {
		v := preorder[i]
		hi0 := infinity
		for _, e := range up[upStart[v]:upStart[v+1]] {
			hi0 = min(hi0, dfsnum[upper[e]])
		}
		hi[v] = min(hi0, hi1[v])

		l := &lists[v] // the children's lists are already on it
		for c := cappingHead[v]; c >= 0; c = cappingNext[c] {
			del(l, int32(m)+c)
		}
		for _, b := range down[downStart[v]:downStart[v+1]] {
			del(l, b)
			if class[b] < 0 {
				class[b] = newClass()
			}
		}
		for _, e := range up[upStart[v]:upStart[v+1]] {
			push(l, e)
		}
		if hi2[v] < hi0 && hi2[v] < dfsnum[v] {
			// A second child's brackets reach above v's own: a capping
			// backedge from v to that height keeps the top bracket
			// naming the bracket set exactly (procedure CycleEquiv). The paper
			// leaves implicit that the height must be above v: brackets
			// of the second child that end at v need no cap (and a cap
			// from v to v would never be deleted).
			target := preorder[hi2[v]]
			cappingNext[v] = cappingHead[target]
			cappingHead[target] = v
			push(l, int32(m)+v)
		}

		pe := parentEdge[v]
		if pe < 0 {
			continue // the root
		}
		if l.size == 0 {
			class[pe] = newClass() // a bridge: on no cycle
		} else {
			b := l.top
			if recentSize[b] != l.size {
				recentSize[b] = l.size
				recentClass[b] = newClass()
			}
			class[pe] = recentClass[b]
			if l.size == 1 && int(b) < m {
				class[b] = class[pe] // the tree edge's only bracket
			}
		}
		p := ends[pe][0]
		if p == v {
			p = ends[pe][1]
		}
		switch {
		case hi[v] < hi1[p]:
			hi2[p], hi1[p] = hi1[p], hi[v]
		case hi[v] < hi2[p]:
			hi2[p] = hi[v]
		}
		concatOnto(&lists[p], *l)
	}
	for e := range class {
		if class[e] < 0 {
			class[e] = newClass() // outside root's component
		}
	}
	return class
}
