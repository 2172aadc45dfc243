// Package cct owns the calling context tree (Ammons, Ball and Larus,
// PLDI'97, sec. 4): one record per calling context, keyed under its parent
// by (procedure entry address, call site), recursion folded into the
// ancestor record of the same procedure (a backedge), so no root-to-leaf
// chain holds a procedure twice and the depth is at most the number of
// procedures. Each record carries a metric vector (uint64: calls, cycles,
// event counts; the tree's Metrics names say which) and optionally the
// procedure's path counts in that context (path ID -> count).
//
// Producers: the hwsim oracle (ground truth, analysis/oracle), the
// instrumenter's dump reader, sampled call stacks. The package is pure: it
// builds, merges, measures (the paper's Table 3), renders and encodes
// trees.
package cct

import (
	"fmt"
	"slices"
)

// Key names a record under its parent: the procedure's entry address and
// the call site (the address of the call instruction in the parent's
// procedure; 0 when the producer does not distinguish call sites or the
// record is a root's child).
type Key struct {
	Proc     uint64
	CallSite uint64
}

// Node is one call record.
type Node struct {
	Key
	Parent   *Node
	Children []*Node // in creation order; Sorted returns them in key order
	// Recursive are the backedges: calls from this record's procedure,
	// at CallSite, to the ancestor record To of the same procedure.
	Recursive []Backedge
	Metrics   []uint64 // len(Tree.Metrics)
	// Paths counts the procedure's Ball-Larus paths run in this context,
	// by path ID; nil when the producer records none.
	Paths map[uint64]uint64

	depth int
	index map[Key]*Node
}

// Backedge is a recursive call folded into an ancestor record.
type Backedge struct {
	CallSite uint64
	To       *Node
}

// Tree is a calling context tree. Root is the paper's "T": it stands for no
// procedure (Key zero) and accumulates nothing by convention, though
// producers may charge it what ran outside any known procedure.
type Tree struct {
	Metrics []string
	Root    *Node
}

// New returns an empty tree whose records carry the named metrics.
func New(metrics ...string) *Tree {
	t := &Tree{Metrics: append([]string(nil), metrics...)}
	t.Root = t.newNode(nil, Key{})
	return t
}

func (t *Tree) newNode(parent *Node, k Key) *Node {
	n := &Node{Key: k, Parent: parent, Metrics: make([]uint64, len(t.Metrics))}
	if parent != nil {
		n.depth = parent.depth + 1
		parent.Children = append(parent.Children, n)
		if parent.index == nil {
			parent.index = map[Key]*Node{}
		}
		parent.index[k] = n
	}
	return n
}

// Metric returns the index of the named metric, -1 if the tree has none.
func (t *Tree) Metric(name string) int { return slices.Index(t.Metrics, name) }

// Depth returns the record's depth: 0 for the root, 1 for its children.
func (n *Node) Depth() int { return n.depth }

// Child returns the record of a call from parent at callSite to the
// procedure at proc: the existing child, or the ancestor of the same
// procedure (recursion: a backedge is recorded on parent, once per call
// site and target), or a new child.
func (t *Tree) Child(parent *Node, proc, callSite uint64) *Node {
	k := Key{Proc: proc, CallSite: callSite}
	if c := parent.index[k]; c != nil {
		return c
	}
	for a := parent; a != nil && a != t.Root; a = a.Parent {
		if a.Proc == proc {
			for _, b := range parent.Recursive {
				if b.CallSite == callSite && b.To == a {
					return a
				}
			}
			parent.Recursive = append(parent.Recursive, Backedge{CallSite: callSite, To: a})
			return a
		}
	}
	return t.newNode(parent, k)
}

// Lookup returns parent's child with key k, without creating it.
func (n *Node) Lookup(k Key) *Node { return n.index[k] }

// AddPath counts count runs of path id in n's context.
func (n *Node) AddPath(id, count uint64) {
	if n.Paths == nil {
		n.Paths = map[uint64]uint64{}
	}
	n.Paths[id] += count
}

// Sorted returns n's children in key order (call site, then procedure).
func (n *Node) Sorted() []*Node {
	c := append([]*Node(nil), n.Children...)
	slices.SortFunc(c, func(a, b *Node) int { return compareKey(a.Key, b.Key) })
	return c
}

func compareKey(a, b Key) int {
	if a.CallSite != b.CallSite {
		if a.CallSite < b.CallSite {
			return -1
		}
		return 1
	}
	if a.Proc != b.Proc {
		if a.Proc < b.Proc {
			return -1
		}
		return 1
	}
	return 0
}

// Walk calls f on every record in preorder (children in key order), the
// root first.
func (t *Tree) Walk(f func(n *Node)) {
	var walk func(n *Node)
	walk = func(n *Node) {
		f(n)
		for _, c := range n.Sorted() {
			walk(c)
		}
	}
	walk(t.Root)
}

// Totals sums each metric over every record.
func (t *Tree) Totals() []uint64 {
	tot := make([]uint64, len(t.Metrics))
	t.Walk(func(n *Node) {
		for i, v := range n.Metrics {
			tot[i] += v
		}
	})
	return tot
}

// ByProc sums each metric over the records of each procedure.
func (t *Tree) ByProc() map[uint64][]uint64 {
	out := map[uint64][]uint64{}
	t.Walk(func(n *Node) {
		if n == t.Root {
			return
		}
		s := out[n.Proc]
		if s == nil {
			s = make([]uint64, len(t.Metrics))
			out[n.Proc] = s
		}
		for i, v := range n.Metrics {
			s[i] += v
		}
	})
	return out
}

// Merge adds o's records into t (fleet-wide merging): records with the same
// chain of keys add their metrics and path counts. The metric names must
// be the same.
func (t *Tree) Merge(o *Tree) error {
	if !slices.Equal(t.Metrics, o.Metrics) {
		return fmt.Errorf("cct: merging trees with metrics %v and %v", t.Metrics, o.Metrics)
	}
	mapped := map[*Node]*Node{o.Root: t.Root}
	var walk func(dst, src *Node)
	walk = func(dst, src *Node) {
		for i, v := range src.Metrics {
			dst.Metrics[i] += v
		}
		for id, c := range src.Paths {
			dst.AddPath(id, c)
		}
		for _, c := range src.Sorted() {
			d := dst.index[c.Key]
			if d == nil {
				d = t.newNode(dst, c.Key)
			}
			mapped[c] = d
			walk(d, c)
		}
	}
	walk(t.Root, o.Root)
	// Backedges last: their targets (ancestors) are mapped by now.
	o.Walk(func(src *Node) {
		dst := mapped[src]
	next:
		for _, b := range src.Recursive {
			to := mapped[b.To]
			for _, have := range dst.Recursive {
				if have.CallSite == b.CallSite && have.To == to {
					continue next
				}
			}
			dst.Recursive = append(dst.Recursive, Backedge{CallSite: b.CallSite, To: to})
		}
	})
	return nil
}
