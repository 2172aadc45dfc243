package cycleq

import (
	"errors"
	"fmt"
)

// Graph is a control-flow graph: nodes 0..N-1 (basic blocks), Entry and
// Exit among them, and directed edges. Parallel edges (a conditional branch
// whose target is also its fall-through) and self-loops are allowed; each
// edge is a separate member of the partition. Entry may equal Exit (a
// procedure of one block).
type Graph struct {
	N           int
	Entry, Exit int
	Edges       []Edge
}

// Edge is a control-flow edge from block From to block To.
type Edge struct {
	From, To int
}

// Options selects how the partition is made.
type Options struct {
	// MissingEdges says the CFG lacks edges the code may take (an indirect
	// jump whose targets were not resolved, sec. 6.1.1). Cycle equivalence
	// over an incomplete graph would claim equalities the missing edges
	// break, so every block and every edge gets a class of its own
	// (sec. 6.1.2).
	MissingEdges bool
}

// Partition is the frequency equivalence classes of a Graph. Class numbers
// are shared by blocks and edges (a block and an edge with the same number
// execute equally often) and are dense, 0..Count-1, numbered in order of
// first appearance in Node, then Edge, then Added, so equal graphs give
// equal numbers.
type Partition struct {
	// Node[n] is the class of block n (of its block edge).
	Node []int
	// Edge[i] is the class of Graph.Edges[i].
	Edge []int
	// Added are the edges the analysis added to make the graph strongly
	// connected, with their classes: Added[0] is exit→entry, whose count
	// is the number of invocations; then one edge from the header of each
	// exitless region to exit, in header order. A class may hold only
	// added edges.
	Added []AddedEdge
	// Count is the number of classes.
	Count int
}

// AddedEdge is an edge the analysis added and its class.
type AddedEdge struct {
	Edge
	Class int
}

// ErrBadGraph is wrapped by every error about a malformed Graph.
var ErrBadGraph = errors.New("cycleq: bad graph")

// MaxSize bounds a Graph's nodes and its edges, each: the search indexes
// them in 32 bits, and no procedure comes near it.
const MaxSize = 1 << 28

// validate reports the first thing wrong with g.
func validate(g Graph) error {
	if g.N <= 0 {
		return fmt.Errorf("%w: %d nodes (a procedure has at least its entry block)", ErrBadGraph, g.N)
	}
	if g.N > MaxSize || len(g.Edges) > MaxSize {
		return fmt.Errorf("%w: %d nodes and %d edges, more than %d", ErrBadGraph, g.N, len(g.Edges), MaxSize)
	}
	if g.Entry < 0 || g.Entry >= g.N {
		return fmt.Errorf("%w: entry %d outside nodes 0..%d", ErrBadGraph, g.Entry, g.N-1)
	}
	if g.Exit < 0 || g.Exit >= g.N {
		return fmt.Errorf("%w: exit %d outside nodes 0..%d", ErrBadGraph, g.Exit, g.N-1)
	}
	for i, e := range g.Edges {
		if e.From < 0 || e.From >= g.N || e.To < 0 || e.To >= g.N {
			return fmt.Errorf("%w: edge %d (%d→%d) has an end outside nodes 0..%d", ErrBadGraph, i, e.From, e.To, g.N-1)
		}
	}
	return nil
}
