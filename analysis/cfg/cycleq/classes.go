package cycleq

// Classes partitions g's blocks and edges into frequency equivalence
// classes (DCPI sec. 6.1.2).
//
// With opt.MissingEdges every block and edge is a class of its own.
// Otherwise:
//
//   - Blocks not reachable from Entry never execute; each, and each edge
//     touching one, is a class of its own (Exit excepted: it stays in the
//     graph as the target of the added edges below).
//   - An edge exit→entry is added, and for every exitless region — a
//     strongly connected set of reachable blocks that cannot reach Exit and
//     that no edge leaves: an infinite loop, or a block with no successor
//     such as one ending in a call that never returns — an edge from the
//     region's header to Exit. The header is the lowest-numbered block of
//     the region that is Entry or has a predecessor outside the region,
//     so for a natural loop it is the loop's header. The graph is then
//     strongly connected, and the classes are its cycle equivalence
//     classes, with each block split into in-node → block edge → out-node.
//
// What a class promises: on every invocation that returns (reaches Exit),
// its blocks and edges execute the same number of times. An invocation
// that stops elsewhere — one the profile caught still running, an idle
// loop, a call that never returns — counts as leaving by an added edge,
// and then shifts the counts within a class apart by at most one per such
// invocation: its path, extended along a simple path inside its region (or
// to Exit) and then the added edge, is a returning one. Classes of loops
// running millions of times stay exact to within a handful of counts.
//
// The error, which wraps ErrBadGraph, reports a node count below one or
// nodes or edges above MaxSize, an Entry or Exit outside the nodes, or an
// edge with an end outside them.
// Time and memory are linear in the size of g.
func Classes(g Graph, opt Options) (Partition, error) {
	if err := validate(g); err != nil {
		return Partition{}, err
	}
	if opt.MissingEdges {
		return singletons(g), nil
	}
	a := augment(g)

	// The split graph: block v is the edge in(v)=2v → out(v)=2v+1; edge
	// u→v becomes out(u) → in(v). Core edge k is block k for k < N, then
	// the kept edges of g, then the added edges.
	in := func(v int) int32 { return int32(2 * v) }
	out := func(v int) int32 { return int32(2*v + 1) }
	ends := make([][2]int32, 0, g.N+len(g.Edges)+len(a.added))
	blockEdge := make([]int32, g.N)
	for v := range g.N {
		blockEdge[v] = -1
		if a.included[v] {
			blockEdge[v] = int32(len(ends))
			ends = append(ends, [2]int32{in(v), out(v)})
		}
	}
	edgeEdge := make([]int32, len(g.Edges))
	for i, e := range g.Edges {
		edgeEdge[i] = -1
		if a.included[e.From] && a.included[e.To] {
			edgeEdge[i] = int32(len(ends))
			ends = append(ends, [2]int32{out(e.From), in(e.To)})
		}
	}
	firstAdded := len(ends)
	for _, e := range a.added {
		ends = append(ends, [2]int32{out(e.From), in(e.To)})
	}
	core := undirectedClasses(2*g.N, ends, int(in(g.Entry)))

	// Dense numbers in order of first appearance; an excluded block or
	// edge takes a fresh number.
	num := make([]int32, len(ends)) // core class → dense number+1, 0 unseen
	count := 0
	number := func(k int32) int {
		if k < 0 {
			count++
			return count - 1
		}
		if num[core[k]] == 0 {
			count++
			num[core[k]] = int32(count)
		}
		return int(num[core[k]]) - 1
	}
	p := Partition{Node: make([]int, g.N), Edge: make([]int, len(g.Edges))}
	for v := range g.N {
		p.Node[v] = number(blockEdge[v])
	}
	for i := range g.Edges {
		p.Edge[i] = number(edgeEdge[i])
	}
	for j, e := range a.added {
		p.Added = append(p.Added, AddedEdge{Edge: e, Class: number(int32(firstAdded + j))})
	}
	p.Count = count
	return p, nil
}

// singletons is the partition of a CFG missing edges: one class per block,
// per edge, and for the exit→entry edge.
func singletons(g Graph) Partition {
	p := Partition{Node: make([]int, g.N), Edge: make([]int, len(g.Edges))}
	for v := range p.Node {
		p.Node[v] = v
	}
	for i := range p.Edge {
		p.Edge[i] = g.N + i
	}
	p.Added = []AddedEdge{{Edge: Edge{g.Exit, g.Entry}, Class: g.N + len(g.Edges)}}
	p.Count = g.N + len(g.Edges) + 1
	return p
}
