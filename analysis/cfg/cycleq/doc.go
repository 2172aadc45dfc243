// Package cycleq groups the blocks and edges of a procedure's control-flow
// graph into frequency equivalence classes (DCPI sec. 6.1.2): sets of blocks
// and edges guaranteed to execute the same number of times, so that one
// frequency estimate (sec. 6.1.3) serves the whole set.
//
// Two edges are cycle equivalent when every cycle through one passes
// through the other, once an edge from exit back to entry closes every
// execution into a cycle; cycle-equivalent edges execute equally often on
// every run that returns. Blocks join the edges by splitting each block
// into an in-node, a block edge and an out-node. The classes are computed
// in time linear in the size of the graph by the algorithm of R. Johnson,
// D. Pearson and K. Pingali, "The Program Structure Tree: Computing Control
// Regions in Linear Time", PLDI 1994 (procedure CycleEquiv: an undirected
// depth-first search, bracket lists named by their top bracket and size,
// capping backedges), extended, as DCPI's was, for graphs from which exit
// cannot be reached: an idle loop that never returns, a block ending in a
// call that does not return. Each such exitless region gets an edge from
// its header to exit, which reads as "the profile stopped here"; see
// Classes for what the classes then promise, and for unreachable blocks
// and CFGs missing edges.
//
// The package owns only this partition. It takes a plain graph of numbered
// nodes and edges, not the CFG of package cfg, and neither decodes code nor
// estimates frequencies.
package cycleq
