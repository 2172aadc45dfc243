package cycleq

import "slices"

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
	for i, e := range ends {
		if e[0] == e[1] {
			class[i] = newClass()
		}
	}
	t := search(n, ends, incidence(n, ends), root)
	preorder, dfsnum, parentEdge, upper := t.preorder, t.dfsnum, t.parentEdge, t.upper
	up, down := t.up, t.down

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
		for _, e := range up.of(int(v)) {
			hi0 = min(hi0, dfsnum[upper[e]])
		}
		hi[v] = min(hi0, hi1[v])

		l := &lists[v] // the children's lists are already on it
		for c := cappingHead[v]; c >= 0; c = cappingNext[c] {
			del(l, int32(m)+c)
		}
		for _, b := range down.of(int(v)) {
			del(l, b)
			if class[b] < 0 {
				class[b] = newClass()
			}
		}
		for _, e := range up.of(int(v)) {
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

// incidence lists each edge that is not a self-loop at both its ends.
func incidence(n int, ends [][2]int32) csr {
	c := csr{start: make([]int32, n+1)}
	for _, e := range ends {
		if e[0] != e[1] {
			c.start[e[0]+1]++
			c.start[e[1]+1]++
		}
	}
	for v := range n {
		c.start[v+1] += c.start[v]
	}
	c.to = make([]int32, c.start[n])
	fill := slices.Clone(c.start[:n])
	for i, e := range ends {
		if e[0] != e[1] {
			c.to[fill[e[0]]] = int32(i)
			fill[e[0]]++
			c.to[fill[e[1]]] = int32(i)
			fill[e[1]]++
		}
	}
	return c
}

// searchTree is an undirected depth-first search tree with its backedges.
type searchTree struct {
	preorder   []int32 // the nodes reached, in preorder
	dfsnum     []int32 // preorder number, -1 if not reached
	parentEdge []int32 // tree edge to the parent, -1 at the root
	upper      []int32 // a backedge's end nearer the root
	up, down   csr     // backedges leaving a node for an ancestor, arriving from a descendant
}

// search runs an iterative undirected depth-first search from root. Every
// non-tree edge joins a node to one of its ancestors (a backedge); it is
// met first from the lower end, whose other end is then on the stack.
func search(n int, ends [][2]int32, inc csr, root int) searchTree {
	m := len(ends)
	t := searchTree{
		preorder:   make([]int32, 0, n),
		dfsnum:     make([]int32, n),
		parentEdge: make([]int32, n),
		upper:      make([]int32, m),
	}
	for v := range t.dfsnum {
		t.dfsnum[v] = -1
	}
	const (
		unmet = iota
		tree
		back
	)
	kind := make([]uint8, m)
	lower := make([]int32, m)
	pos := make([]int32, n) // next incidence to scan, per node on the stack
	stack := []int32{int32(root)}
	t.dfsnum[root] = 0
	t.parentEdge[root] = -1
	t.preorder = append(t.preorder, int32(root))
	pos[root] = inc.start[root]
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		if pos[v] == inc.start[v+1] {
			stack = stack[:len(stack)-1]
			continue
		}
		e := inc.to[pos[v]]
		pos[v]++
		if kind[e] != unmet {
			continue
		}
		w := ends[e][0]
		if w == v {
			w = ends[e][1]
		}
		if t.dfsnum[w] < 0 {
			kind[e] = tree
			t.dfsnum[w] = int32(len(t.preorder))
			t.preorder = append(t.preorder, w)
			t.parentEdge[w] = e
			pos[w] = inc.start[w]
			stack = append(stack, w)
			continue
		}
		kind[e] = back
		lower[e], t.upper[e] = v, w
	}

	// Backedges by their ends, in compressed lists.
	t.up.start = make([]int32, n+1)
	t.down.start = make([]int32, n+1)
	for e := range m {
		if kind[e] == back {
			t.up.start[lower[e]+1]++
			t.down.start[t.upper[e]+1]++
		}
	}
	for v := range n {
		t.up.start[v+1] += t.up.start[v]
		t.down.start[v+1] += t.down.start[v]
	}
	t.up.to = make([]int32, t.up.start[n])
	t.down.to = make([]int32, t.down.start[n])
	upFill := slices.Clone(t.up.start[:n])
	downFill := slices.Clone(t.down.start[:n])
	for e := range m {
		if kind[e] == back {
			t.up.to[upFill[lower[e]]] = int32(e)
			upFill[lower[e]]++
			t.down.to[downFill[t.upper[e]]] = int32(e)
			downFill[t.upper[e]]++
		}
	}
	return t
}
