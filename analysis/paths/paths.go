// Package paths owns Ball-Larus path numbering of a procedure's control-flow
// graph (Ball and Larus, "Efficient path profiling", 1996; Ammons, Ball and
// Larus, PLDI'97, sec. 2): every acyclic path through a procedure gets a
// unique ID in 0..NumPaths-1, and a small set of edge actions lets an
// instrumenter (or an oracle following executed edges) compute the ID of
// the path it runs in one register.
//
// Loops are cut as the paper's sec. 2.2 says: a depth-first search from
// Entry finds the backedges, and each backedge v->w is replaced by a dummy
// v->Exit (the path ends with the backedge) and a dummy Entry->w (the next
// path starts at w). One difference from the paper: backedges into the same
// block share a single Entry->w dummy, because the paths after either are
// the same sequence of edges; that keeps the IDs a bijection onto edge
// sequences (Path can invert them) and the ID space no larger than needed.
//
// The package is pure: Number reads a *cfg.Proc and returns a value.
package paths

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sort"

	"dcpi/analysis/cfg"
)

// MetricInstructions names the metric of a path's instructions executed
// (the oracle's and the instrumented runs' profiles carry it); reports
// rank paths by it where a profile has it.
const MetricInstructions = "instructions"

// ActionKind says what an instrumenter does on an edge.
type ActionKind uint8

// Edge actions. r is the path register.
const (
	None  ActionKind = iota // nothing
	Init                    // on an edge from Entry: r = Start
	Add                     // r += Add
	Count                   // on an edge to Exit: count[r + Add]++ (the path ends)
	Back                    // on a backedge: count[r + Add]++ ; r = Start (one path ends, the next starts)
)

var actionNames = [...]string{"none", "init", "add", "count", "back"}

func (k ActionKind) String() string {
	if int(k) < len(actionNames) {
		return actionNames[k]
	}
	return fmt.Sprintf("ActionKind(%d)", uint8(k))
}

// Action is what happens on one edge. Add and Start may be negative: the
// increments of a spanning-tree placement are differences of path sums.
type Action struct {
	Kind  ActionKind
	Add   int64
	Start int64
}

func (a Action) String() string {
	switch a.Kind {
	case Init:
		return fmt.Sprintf("r=%d", a.Start)
	case Add:
		return fmt.Sprintf("r+=%d", a.Add)
	case Count:
		return fmt.Sprintf("count[r+%d]++", a.Add)
	case Back:
		return fmt.Sprintf("count[r+%d]++; r=%d", a.Add, a.Start)
	}
	return "-"
}

// Numbering is a procedure's path numbering.
type Numbering struct {
	Proc      *cfg.Proc
	NumPaths  uint64 // path IDs are 0..NumPaths-1
	Backedges []int  // indices into Proc.Edges
	// Actions[e] is what an instrumenter does on Proc.Edges[e] (same index):
	Actions []Action

	// The acyclic graph: real non-back edges, one Entry->w dummy per
	// backedge target, one v->Exit dummy per backedge.
	g      []agEdge
	out    [][]int  // by node: indices into g, in the order Val was assigned
	np     []uint64 // by node: paths from the node to Exit
	isBack []bool   // by Proc.Edges index
}

// Errors Number returns (wrapped, with the procedure's name).
var (
	ErrMissingEdges = errors.New("an unresolved jmp leaves the graph without some edges: its paths are unknown")
	ErrTooManyPaths = errors.New("more paths than an int64 path register can number")
	ErrNoExit       = errors.New("a block reachable from Entry cannot reach Exit even after cutting backedges")
)

type agKind uint8

const (
	agReal  agKind = iota // a Proc edge that is not a backedge
	agStart               // Entry->w for the backedges into w
	agEnd                 // v->Exit for one backedge
	agLoop                // Exit->Entry, only for the spanning tree
)

type agEdge struct {
	from, to int
	kind     agKind
	edge     int // agReal, agEnd: the Proc edge (for agEnd, the backedge)
	val      uint64
	inc      int64
}

// Number numbers p's paths (sec. 2.1-2.2): backedges found by DFS from Entry are cut (v->w becomes
// Entry->w and v->Exit dummy edges), NP and Val computed in reverse topological order, and the
// increments placed on a minimal set of edges (Ball-Larus 1996: chords of a maximum spanning tree
// of the graph with Exit->Entry added; weights from a static estimate, loops weighted higher).
// Errors: p.MissingEdges (an unresolved jmp: the paths are unknown), paths overflowing uint64,
// a block reachable from Entry that cannot reach Exit even after cutting backedges.
func Number(p *cfg.Proc) (*Numbering, error) {
	if p == nil {
		return nil, errors.New("paths: nil procedure")
	}
	if p.MissingEdges {
		return nil, fmt.Errorf("paths: %s: %w", p.Name, ErrMissingEdges)
	}
	n := &Numbering{Proc: p, Actions: make([]Action, len(p.Edges)), isBack: make([]bool, len(p.Edges))}
	post, reached := n.dfs()
	n.cut(reached)
	if err := n.count(post, reached); err != nil {
		return nil, fmt.Errorf("paths: %s: %w", p.Name, err)
	}
	n.place(reached)
	n.act()
	return n, nil
}

// dfs finds the backedges (edges to a node on the DFS stack) and returns
// the nodes in postorder and which nodes Entry reaches.
func (n *Numbering) dfs() (post []int, reached []bool) {
	p := n.Proc
	const (
		white = iota
		gray
		black
	)
	color := make([]uint8, p.NumNodes())
	reached = make([]bool, p.NumNodes())
	type frame struct{ node, next int }
	stack := []frame{{p.Entry(), 0}}
	color[p.Entry()] = gray
	reached[p.Entry()] = true
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		out := p.Out(top.node)
		if top.next == len(out) {
			color[top.node] = black
			post = append(post, top.node)
			stack = stack[:len(stack)-1]
			continue
		}
		e := out[top.next]
		top.next++
		w := p.Edges[e].To
		switch color[w] {
		case white:
			color[w] = gray
			reached[w] = true
			stack = append(stack, frame{w, 0})
		case gray:
			n.isBack[e] = true
			n.Backedges = append(n.Backedges, e)
		}
	}
	sort.Ints(n.Backedges)
	return post, reached
}

// cut builds the acyclic graph over the reached nodes.
func (n *Numbering) cut(reached []bool) {
	p := n.Proc
	n.out = make([][]int, p.NumNodes())
	add := func(e agEdge) {
		n.out[e.from] = append(n.out[e.from], len(n.g))
		n.g = append(n.g, e)
	}
	for node := 0; node < p.NumNodes(); node++ {
		if !reached[node] {
			continue
		}
		for _, e := range p.Out(node) {
			if n.isBack[e] {
				add(agEdge{from: node, to: p.Exit(), kind: agEnd, edge: e})
			} else {
				add(agEdge{from: node, to: p.Edges[e].To, kind: agReal, edge: e})
			}
		}
	}
	var heads []int
	seen := map[int]bool{}
	for _, e := range n.Backedges {
		if w := p.Edges[e].To; !seen[w] {
			seen[w] = true
			heads = append(heads, w)
		}
	}
	sort.Ints(heads)
	for _, w := range heads {
		add(agEdge{from: p.Entry(), to: w, kind: agStart, edge: -1})
	}
}

// count computes NP in reverse topological order (Exit, then the DFS
// postorder: every non-back edge goes from a later node to an earlier
// one) and each edge's Val.
func (n *Numbering) count(post []int, reached []bool) error {
	p := n.Proc
	n.np = make([]uint64, p.NumNodes())
	n.np[p.Exit()] = 1
	for _, v := range post {
		if v == p.Exit() {
			continue
		}
		var sum uint64
		for _, ge := range n.out[v] {
			e := &n.g[ge]
			e.val = sum
			var carry uint64
			sum, carry = bits.Add64(sum, n.np[e.to], 0)
			if carry != 0 || sum > math.MaxInt64 {
				return ErrTooManyPaths
			}
		}
		if sum == 0 {
			return fmt.Errorf("%w (block %d at %#x)", ErrNoExit, v, p.Blocks[v].Start)
		}
		n.np[v] = sum
	}
	n.NumPaths = n.np[p.Entry()]
	return nil
}

// weight is the static estimate of how often an edge runs: 10 per loop
// level of its source, split among the source's successors. Edges that
// carry an action anyway (from Entry, into Exit, the dummies) weigh
// least, so the spanning tree leaves them as chords and their increments
// fold into Init, Count and Back for free; Exit->Entry weighs most so it
// is in the tree (its increment must be 0).
func (n *Numbering) weights(reached []bool) []float64 {
	p := n.Proc
	depth := n.loopDepth(reached)
	w := make([]float64, len(n.g))
	for i, e := range n.g {
		switch {
		case e.kind == agLoop:
			w[i] = math.Inf(1)
		case e.kind != agReal || e.from == p.Entry() || e.to == p.Exit():
			w[i] = 0
		default:
			w[i] = math.Pow(10, float64(min(depth[e.from], 12))) / float64(len(n.out[e.from]))
		}
	}
	return w
}

// loopDepth counts, per node, the natural loops (one per backedge target:
// the target and every node that reaches a backedge's source without
// passing the target) it lies in.
func (n *Numbering) loopDepth(reached []bool) []int {
	p := n.Proc
	depth := make([]int, p.NumNodes())
	byHead := map[int][]int{}
	for _, e := range n.Backedges {
		byHead[p.Edges[e].To] = append(byHead[p.Edges[e].To], p.Edges[e].From)
	}
	in := make([]bool, p.NumNodes())
	for head, tails := range byHead {
		clear(in)
		in[head] = true
		stack := append([]int(nil), tails...)
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if in[v] || !reached[v] {
				continue
			}
			in[v] = true
			stack = append(stack, p.Predecessors(v)...)
		}
		for v, ok := range in {
			if ok {
				depth[v]++
			}
		}
	}
	return depth
}

// place puts the increments on the chords of a maximum spanning tree of
// the acyclic graph plus Exit->Entry: with potentials phi over the tree
// (phi(to) = phi(from) + Val on tree edges), Inc(e) = Val(e) + phi(from) -
// phi(to) is 0 on tree edges, and along any Entry-Exit path the
// increments sum to the Vals, since phi(Entry) = phi(Exit). If a
// potential would overflow int64, the increments stay the Vals.
func (n *Numbering) place(reached []bool) {
	p := n.Proc
	g := append(n.g[:len(n.g):len(n.g)], agEdge{from: p.Exit(), to: p.Entry(), kind: agLoop, edge: -1})
	saved := n.g
	n.g = g
	w := n.weights(reached)
	n.g = saved
	order := make([]int, len(g))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return w[order[a]] > w[order[b]] })
	parent := make([]int, p.NumNodes())
	for i := range parent {
		parent[i] = i
	}
	find := func(x int) int {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	adj := make([][]int, p.NumNodes()) // tree edges by node
	for _, i := range order {
		a, b := find(g[i].from), find(g[i].to)
		if a == b {
			continue
		}
		parent[a] = b
		adj[g[i].from] = append(adj[g[i].from], i)
		adj[g[i].to] = append(adj[g[i].to], i)
	}
	phi := make([]int64, p.NumNodes())
	done := make([]bool, p.NumNodes())
	ok := true
	stack := []int{p.Entry()}
	done[p.Entry()] = true
	for len(stack) > 0 && ok {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, i := range adj[v] {
			e := g[i]
			var u int
			var val int64
			var good bool
			if e.from == v {
				u = e.to
				val, good = addInt64(phi[v], int64(e.val))
			} else {
				u = e.from
				val, good = addInt64(phi[v], -int64(e.val))
			}
			if done[u] {
				continue
			}
			if !good {
				ok = false
				break
			}
			phi[u], done[u] = val, true
			stack = append(stack, u)
		}
	}
	for i := range n.g {
		e := &n.g[i]
		inc, good := int64(e.val), ok
		if ok {
			var g1, g2 bool
			inc, g1 = addInt64(int64(e.val), phi[e.from])
			inc, g2 = addInt64(inc, -phi[e.to])
			good = g1 && g2
		}
		if !good {
			for j := range n.g {
				n.g[j].inc = int64(n.g[j].val)
			}
			return
		}
		e.inc = inc
	}
}

func addInt64(a, b int64) (int64, bool) {
	s := a + b
	return s, (a >= 0) != (b >= 0) || (s >= 0) == (a >= 0)
}

// act turns the increments into the edges' actions.
func (n *Numbering) act() {
	p := n.Proc
	startOf := map[int]int64{} // backedge target -> its dummy's increment
	for _, e := range n.g {
		if e.kind == agStart {
			startOf[e.to] = e.inc
		}
	}
	for _, e := range n.g {
		switch e.kind {
		case agEnd:
			n.Actions[e.edge] = Action{Kind: Back, Add: e.inc, Start: startOf[p.Edges[e.edge].To]}
		case agReal:
			switch {
			case e.from == p.Entry():
				n.Actions[e.edge] = Action{Kind: Init, Start: e.inc}
			case e.to == p.Exit():
				n.Actions[e.edge] = Action{Kind: Count, Add: e.inc}
			case e.inc != 0:
				n.Actions[e.edge] = Action{Kind: Add, Add: e.inc}
			}
		}
	}
}

// IsBackedge reports whether Proc.Edges[e] is a backedge.
func (n *Numbering) IsBackedge(e int) bool { return e >= 0 && e < len(n.isBack) && n.isBack[e] }

// Path returns the edges (indices into Proc.Edges, in order, the first from Entry or the target
// of a backedge's dummy, the last to Exit or a backedge) of path id.
func (n *Numbering) Path(id uint64) ([]int, error) {
	if id >= n.NumPaths {
		return nil, fmt.Errorf("paths: %s: path %d out of range (%d paths)", n.Proc.Name, id, n.NumPaths)
	}
	p := n.Proc
	var edges []int
	rem, v := id, p.Entry()
	for v != p.Exit() {
		out := n.out[v]
		// The last edge whose Val is <= rem: Vals ascend in out's order.
		k := sort.Search(len(out), func(i int) bool { return n.g[out[i]].val > rem }) - 1
		if k < 0 {
			return nil, fmt.Errorf("paths: %s: path %d: no edge out of node %d", p.Name, id, v)
		}
		e := n.g[out[k]]
		rem -= e.val
		if e.kind != agStart {
			edges = append(edges, e.edge)
		}
		v = e.to
	}
	return edges, nil
}

// Blocks returns the blocks path id runs through, in order.
func (n *Numbering) Blocks(id uint64) ([]int, error) {
	edges, err := n.Path(id)
	if err != nil {
		return nil, err
	}
	return n.blocksOf(edges), nil
}

func (n *Numbering) blocksOf(edges []int) []int {
	p := n.Proc
	var blocks []int
	if from := p.Edges[edges[0]].From; from != p.Entry() {
		blocks = append(blocks, from)
	}
	for i, e := range edges {
		if i == len(edges)-1 && n.isBack[e] {
			break
		}
		if to := p.Edges[e].To; to != p.Exit() {
			blocks = append(blocks, to)
		}
	}
	return blocks
}

// ID returns the ID of the path that runs edges (as Path returns them),
// by following the actions as an instrumenter would.
func (n *Numbering) ID(edges []int) (uint64, error) {
	p := n.Proc
	if len(edges) == 0 {
		return 0, fmt.Errorf("paths: %s: empty path", p.Name)
	}
	var r int64
	first := edges[0]
	if first < 0 || first >= len(p.Edges) {
		return 0, fmt.Errorf("paths: %s: edge %d out of range", p.Name, first)
	}
	if p.Edges[first].From != p.Entry() {
		start, ok := n.StartAfterBackedge(p.Edges[first].From)
		if !ok {
			return 0, fmt.Errorf("paths: %s: path starts at block %d, which is neither Entry nor a backedge's target", p.Name, p.Edges[first].From)
		}
		r = start
	}
	for i, e := range edges {
		if e < 0 || e >= len(p.Edges) {
			return 0, fmt.Errorf("paths: %s: edge %d out of range", p.Name, e)
		}
		if i > 0 && p.Edges[e].From != p.Edges[edges[i-1]].To {
			return 0, fmt.Errorf("paths: %s: edge %d does not continue edge %d", p.Name, e, edges[i-1])
		}
		a := n.Actions[e]
		last := i == len(edges)-1
		switch a.Kind {
		case Init:
			if i != 0 {
				return 0, fmt.Errorf("paths: %s: Entry edge %d inside a path", p.Name, e)
			}
			r = a.Start
		case Add:
			r += a.Add
		case Count, Back:
			if !last {
				return 0, fmt.Errorf("paths: %s: path goes on after edge %d, which ends paths", p.Name, e)
			}
			id := r + a.Add
			if id < 0 || uint64(id) >= n.NumPaths {
				return 0, fmt.Errorf("paths: %s: edges sum to %d, out of range", p.Name, id)
			}
			return uint64(id), nil
		}
	}
	return 0, fmt.Errorf("paths: %s: path does not end at Exit or a backedge", p.Name)
}

// StartAfterBackedge returns the value r starts at after a backedge into
// block w (the Start of every backedge into w), and whether any backedge
// enters w.
func (n *Numbering) StartAfterBackedge(w int) (int64, bool) {
	for _, ge := range n.out[n.Proc.Entry()] {
		if e := n.g[ge]; e.kind == agStart && e.to == w {
			return e.inc, true
		}
	}
	return 0, false
}

// ProcName names a procedure for a report: its symbol, else its entry
// address.
func ProcName(name string, entry uint64) string {
	if name != "" {
		return name
	}
	return fmt.Sprintf("%#x", entry)
}
