package report

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"slices"

	"dcpi/analysis"
	"dcpi/analysis/symbolize"
	"dcpi/storage"
	"dcpi/wire"
)

// TruncatedRoot names the synthetic outermost frame of a truncated stack
// (one the unwinder gave up on before main), so its samples stay visible
// as a partial chain instead of passing for a stack rooted where it was cut.
const TruncatedRoot = "[truncated]"

// StackQuery selects the call stacks of one event.
type StackQuery struct {
	// Filter selects stacks with storage.Query's rules (a stack by its
	// leaf's image); its Events are replaced by Event.
	Filter storage.Query
	// Event is the event whose samples are counted (0, cycles, by
	// default).
	Event uint8
	// ImagePaths selects stacks by their leaf image's path, with
	// ProfQuery.ImagePaths's rules; nil selects all.
	ImagePaths []string
}

// StackProc names a procedure in a stack: its symbol and its image's path
// (the key's string when the image was never uploaded; "" for a frame no
// image map covered, whose procedure is symbolize.UnknownProcedure).
type StackProc struct {
	Procedure string `json:"procedure"`
	Image     string `json:"image"`
}

func (p StackProc) String() string {
	if p.Image == "" {
		return p.Procedure
	}
	return p.Procedure + " (" + path.Base(p.Image) + ")"
}

// stackReader turns stored stacks into procedure chains.
type stackReader struct {
	syms *symbolize.Symbolizer
	q    StackQuery
}

// proc is the procedure of frame i of st: the leaf at its PC, a caller at
// its call site, the instruction before the return address.
func (r *stackReader) proc(ctx context.Context, f wire.Frame, leaf bool) (StackProc, error) {
	if f.Image.IsZero() {
		return StackProc{Procedure: symbolize.UnknownProcedure}, nil
	}
	t, err := r.syms.Table(ctx, f.Image)
	if err != nil {
		return StackProc{}, err
	}
	off := f.Offset
	if !leaf && off >= 4 {
		off -= 4
	}
	p := StackProc{Procedure: symbolize.UnknownProcedure, Image: t.Path}
	if sym, _, ok := t.Lookup(off); ok {
		p.Procedure = sym.Name
	}
	return p, nil
}

// each calls fn with every selected stack's procedures, leaf first (a
// truncated stack's last being TruncatedRoot), and its samples.
func (r *stackReader) each(ctx context.Context, fn func(procs []StackProc, count uint64)) error {
	q := r.q.Filter
	q.Events = []uint8{r.q.Event}
	var procs []StackProc
	return analysis.Stacks(ctx, r.syms, q, func(st *storage.Stack, _ uint8, _ string, count uint64) error {
		procs = procs[:0]
		for i, f := range st.Frames {
			p, err := r.proc(ctx, f, i == 0)
			if err != nil {
				return err
			}
			if i == 0 && r.q.ImagePaths != nil && (f.Image.IsZero() || !analysis.MatchImagePath(r.q.ImagePaths, p.Image)) {
				return nil
			}
			procs = append(procs, p)
		}
		if st.Truncated {
			procs = append(procs, StackProc{Procedure: TruncatedRoot})
		}
		fn(procs, count)
		return nil
	})
}

// CallerShare is one caller of a procedure and the samples it accounts for.
type CallerShare struct {
	Caller  StackProc `json:"caller"`
	Samples uint64    `json:"samples"`
	Percent float64   `json:"percent"` // of the callee's inclusive samples
}

// CalleeRow is one procedure of a by-caller table: its samples as the leaf
// (self) and anywhere on the stack (inclusive, each stack counted once),
// and who called it, by share of the inclusive samples. A stack that ends
// at the procedure without a caller (main, or a stack of one frame) counts
// under the caller "[root]".
type CalleeRow struct {
	Proc      StackProc     `json:"proc"`
	Self      uint64        `json:"self"`
	Inclusive uint64        `json:"inclusive"`
	Percent   float64       `json:"percent"` // inclusive, of all the stacks' samples
	Callers   []CallerShare `json:"callers"`
}

// CallerTable is `dcpi prof --by-caller`'s output as data.
type CallerTable struct {
	Event   string      `json:"event"`
	Total   uint64      `json:"total"` // samples of the selected stacks
	Rows    []CalleeRow `json:"rows"`
	Omitted int         `json:"omitted_rows"`
}

// RootCaller stands for "no caller" in a CallerTable.
var RootCaller = StackProc{Procedure: "[root]"}

// CallersQuery is a by-caller request (dcpi prof --by-caller): the stacks
// to read and how many rows to keep.
type CallersQuery struct {
	StackQuery
	// Limit keeps the first Limit rows; 0 keeps all. Percentages and the
	// total are of every selected stack, kept or not.
	Limit int
}

// Callers tabulates each procedure's callers over q's stacks: rows by
// inclusive samples, then self, the first q.Limit of them. A procedure
// recursing on itself is counted once per stack, at its innermost call, so
// its inclusive samples never exceed the total.
func Callers(ctx context.Context, src analysis.Source, q CallersQuery) (*CallerTable, error) {
	limit := q.Limit
	r := &stackReader{syms: symbolize.New(src), q: q.StackQuery}
	type acc struct {
		self, incl uint64
		callers    map[StackProc]uint64
	}
	by := map[StackProc]*acc{}
	var total uint64
	seen := map[StackProc]bool{}
	err := r.each(ctx, func(procs []StackProc, n uint64) {
		total = satAdd(total, n)
		clear(seen)
		for i, p := range procs {
			if p == (StackProc{Procedure: TruncatedRoot}) || seen[p] {
				continue
			}
			seen[p] = true
			a := by[p]
			if a == nil {
				a = &acc{callers: map[StackProc]uint64{}}
				by[p] = a
			}
			if i == 0 {
				a.self = satAdd(a.self, n)
			}
			a.incl = satAdd(a.incl, n)
			caller := RootCaller
			if i+1 < len(procs) {
				caller = procs[i+1]
			}
			a.callers[caller] = satAdd(a.callers[caller], n)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("analysis: by caller: %w", err)
	}
	t := &CallerTable{Event: analysis.EventName(q.Event), Total: total}
	for p, a := range by {
		row := CalleeRow{Proc: p, Self: a.self, Inclusive: a.incl, Percent: share(a.incl, total)}
		for c, n := range a.callers {
			row.Callers = append(row.Callers, CallerShare{Caller: c, Samples: n, Percent: share(n, a.incl)})
		}
		slices.SortFunc(row.Callers, func(x, y CallerShare) int {
			if c := cmp.Compare(y.Samples, x.Samples); c != 0 {
				return c
			}
			return compareProcs(x.Caller, y.Caller)
		})
		t.Rows = append(t.Rows, row)
	}
	slices.SortFunc(t.Rows, func(x, y CalleeRow) int {
		if c := cmp.Compare(y.Inclusive, x.Inclusive); c != 0 {
			return c
		}
		if c := cmp.Compare(y.Self, x.Self); c != 0 {
			return c
		}
		return compareProcs(x.Proc, y.Proc)
	})
	if limit > 0 && len(t.Rows) > limit {
		t.Omitted = len(t.Rows) - limit
		t.Rows = t.Rows[:limit]
	}
	return t, nil
}

func compareProcs(a, b StackProc) int {
	if c := cmp.Compare(a.Procedure, b.Procedure); c != 0 {
		return c
	}
	return cmp.Compare(a.Image, b.Image)
}

func share(n, total uint64) float64 {
	if total == 0 {
		return 0
	}
	return 100 * float64(n) / float64(total)
}

// TreeNode is a node of a call tree: a procedure reached by the path from
// the root, its samples on that path (Total: the subtree's; Self: stacks
// that end here), and its children by Total, largest first.
type TreeNode struct {
	Proc     StackProc   `json:"proc"`
	Total    uint64      `json:"total"`
	Self     uint64      `json:"self"`
	Children []*TreeNode `json:"children,omitempty"`
}

// TreeQuery is a call-tree request (dcpi prof --tree): the stacks to read
// and which way their paths run.
type TreeQuery struct {
	StackQuery
	// TopDown runs paths from the outermost caller to the sampled
	// procedure; false runs them from the sampled procedure through its
	// callers (bottom-up).
	TopDown bool
}

// CallTree is a call tree as data: its root, and which way it was built.
type CallTree struct {
	TopDown bool
	Root    *TreeNode
}

// Tree builds the call tree of q's stacks. Top-down, paths run from the
// outermost caller (main, or TruncatedRoot for a truncated stack) to the
// sampled procedure, so a node's Total is the samples spent in it and what
// it called on that path; bottom-up they run from the sampled procedure
// through its callers, so the first level is the flat profile by procedure
// and each node's children say who called it. The root is a synthetic
// node, "[all]", holding every selected sample.
func Tree(ctx context.Context, src analysis.Source, q TreeQuery) (*CallTree, error) {
	topDown := q.TopDown
	r := &stackReader{syms: symbolize.New(src), q: q.StackQuery}
	root := &TreeNode{Proc: StackProc{Procedure: "[all]"}}
	index := map[*TreeNode]map[StackProc]*TreeNode{}
	child := func(n *TreeNode, p StackProc) *TreeNode {
		m := index[n]
		if m == nil {
			m = map[StackProc]*TreeNode{}
			index[n] = m
		}
		c := m[p]
		if c == nil {
			c = &TreeNode{Proc: p}
			m[p] = c
			n.Children = append(n.Children, c)
		}
		return c
	}
	err := r.each(ctx, func(procs []StackProc, n uint64) {
		root.Total = satAdd(root.Total, n)
		node := root
		for i := range procs {
			p := procs[i]
			if topDown {
				p = procs[len(procs)-1-i]
			}
			node = child(node, p)
			node.Total = satAdd(node.Total, n)
		}
		node.Self = satAdd(node.Self, n)
	})
	if err != nil {
		return nil, fmt.Errorf("analysis: call tree: %w", err)
	}
	var sortTree func(n *TreeNode)
	sortTree = func(n *TreeNode) {
		slices.SortFunc(n.Children, func(x, y *TreeNode) int {
			if c := cmp.Compare(y.Total, x.Total); c != 0 {
				return c
			}
			return compareProcs(x.Proc, y.Proc)
		})
		for _, c := range n.Children {
			sortTree(c)
		}
	}
	sortTree(root)
	return &CallTree{TopDown: topDown, Root: root}, nil
}
