// Package mepaths owns ProfileMe's path reconstruction (the ProfileMe
// paper, sec. 5.3): from a sampled instruction's PC and its path-history
// register (the directions of the conditional branches fetched before it,
// newest in bit 0), the paths of the procedure's control-flow graph
// (analysis/cfg) that could have led to it; a paired sample's other PC can
// narrow them further.
//
// A path here is an acyclic path prefix in Ball and Larus's sense (the
// paths analysis/paths and analysis/oracle number): it ends at the sampled
// instruction's block and starts where control last entered the
// procedure's acyclic graph, at an entry block (a call) or at a loop
// header (a backedge, found by depth-first search from the entry). Its
// conditional branches, newest first, must agree with the history bits
// used; the branch of the backedge that started it counts too. A call
// inside the path ends the bits' use: the callee's branches are in the
// global history, in unknown number, so older bits say nothing about this
// procedure. A path is reconstructed when exactly one candidate remains.
//
// Why acyclic prefixes rather than paths of h branches across loop
// iterations: a loop's iterations repeat its blocks, so paths of fixed
// branch count are not comparable across history lengths; with prefixes,
// more bits can only remove candidates, and the true prefix (what the
// oracle's path numbering identifies) is always one of them when the
// history is right.
package mepaths

import (
	"fmt"

	"dcpi/analysis/cfg"
	"dcpi/hwsim/alpha"
)

// Graph is one procedure prepared for reconstruction.
type Graph struct {
	Proc *cfg.Proc
	// back marks the backedges (retreating edges of a depth-first search
	// from Entry), by edge index.
	back []bool
	// header marks blocks that are the target of a backedge; entry those
	// with an edge from Entry.
	header, entry []bool
	// cond marks blocks ending in a conditional branch; call the index of
	// a block's first call instruction, -1 for none.
	cond []bool
	call []int
}

// NewGraph prepares p.
func NewGraph(p *cfg.Proc) *Graph {
	n := len(p.Blocks)
	g := &Graph{Proc: p, back: make([]bool, len(p.Edges)), header: make([]bool, n), entry: make([]bool, n),
		cond: make([]bool, n), call: make([]int, n)}
	for i := range p.Blocks {
		g.call[i] = -1
		for j, in := range p.BlockInsns(i) {
			if isCall(in) && g.call[i] < 0 {
				g.call[i] = j
			}
		}
		ins := p.BlockInsns(i)
		g.cond[i] = len(ins) > 0 && isCond(ins[len(ins)-1])
	}
	for _, e := range p.Out(p.Entry()) {
		if to := p.Edges[e].To; to < n {
			g.entry[to] = true
		}
	}
	// Iterative DFS from Entry, then from every block it did not reach
	// (code only an unresolved jump leads to): an edge to a node on the
	// stack retreats, so the other edges form a DAG.
	const (
		white = iota
		grey
		black
	)
	color := make([]uint8, p.NumNodes())
	var stack []struct{ node, next int }
	for _, root := range append([]int{p.Entry()}, func() []int {
		r := make([]int, n)
		for i := range r {
			r[i] = i
		}
		return r
	}()...) {
		if color[root] != white {
			continue
		}
		color[root] = grey
		stack = append(stack[:0], struct{ node, next int }{root, 0})
		g.dfs(stack, color)
	}
	return g
}

// dfs runs the depth-first search from stack's root, marking backedges.
func (g *Graph) dfs(stack []struct{ node, next int }, color []uint8) {
	p, n := g.Proc, len(g.Proc.Blocks)
	const (
		white = iota
		grey
		black
	)
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		out := p.Out(f.node)
		if f.next == len(out) {
			color[f.node] = black
			stack = stack[:len(stack)-1]
			continue
		}
		e := out[f.next]
		f.next++
		to := p.Edges[e].To
		switch color[to] {
		case grey:
			g.back[e] = true
			if to < n {
				g.header[to] = true
			}
		case white:
			color[to] = grey
			stack = append(stack, struct{ node, next int }{to, 0})
		}
	}
}

// IsBack reports whether the edge from block from to block to is a
// backedge (false if there is no such edge).
func (g *Graph) IsBack(from, to int) bool {
	for _, e := range g.Proc.Blocks[from].Succs {
		if g.Proc.Edges[e].To == to {
			return g.back[e]
		}
	}
	return false
}

func isCond(in cfg.Insn) bool {
	switch in.Dec.Op {
	case alpha.OpBEQ, alpha.OpBNE, alpha.OpBLT, alpha.OpBLE, alpha.OpBGT, alpha.OpBGE,
		alpha.OpBLBC, alpha.OpBLBS, alpha.OpFBEQ, alpha.OpFBNE, alpha.OpFBLT, alpha.OpFBLE,
		alpha.OpFBGT, alpha.OpFBGE:
		return true
	}
	return false
}

func isCall(in cfg.Insn) bool {
	switch in.Dec.Op {
	case alpha.OpBR:
		return in.Word>>26 == 0x34 // bsr
	case alpha.OpJMP:
		return (in.Dec.Imm>>14)&3 == 1 || (in.Dec.Imm>>14)&3 == 3 // jsr, jsr_coroutine
	}
	return false
}

// IsCond reports whether in is a conditional branch, IsCall whether it
// is a call (bsr, jsr): what the history register and the reconstruction
// count.
func IsCond(in cfg.Insn) bool { return isCond(in) }

// IsCall reports whether in is a call (bsr, jsr, jsr_coroutine).
func IsCall(in cfg.Insn) bool { return isCall(in) }

// Path is a reconstructed path: its blocks, the sampled instruction's
// first, back to where the path starts.
type Path []int

// Query is one reconstruction: the sampled PC, its history, how many of
// the history's bits to use (0 to 16), and optionally a paired sample's
// other PC (Partner, 0: none) and the most candidates to enumerate.
type Query struct {
	PC      uint64
	History uint16
	Bits    int
	Partner uint64
	Limit   int // 0: 1024
}

// Result is a reconstruction's candidates; Truncated when there were more
// than the limit (then it is not a reconstruction).
type Result struct {
	Paths     []Path
	Truncated bool
	// Narrowed is set when the partner removed candidates.
	Narrowed bool
}

// Unique returns the one path reconstructed, if exactly one remains.
func (r *Result) Unique() (Path, bool) {
	if r.Truncated || len(r.Paths) != 1 {
		return nil, false
	}
	return r.Paths[0], true
}

// Reconstruct returns the acyclic path prefixes ending at q.PC that agree
// with the first q.Bits bits of q.History; with a partner PC inside the
// procedure, the candidates holding the partner's block are kept when
// some do (a partner fetched before the path began says nothing).
func (g *Graph) Reconstruct(q Query) (Result, error) {
	p := g.Proc
	b0, ok := p.BlockOf(q.PC)
	if !ok {
		return Result{}, fmt.Errorf("mepaths: %#x is not in %s [%#x, %#x)", q.PC, p.Name, p.Start, p.End)
	}
	if q.Bits < 0 || q.Bits > 16 {
		return Result{}, fmt.Errorf("mepaths: %d history bits: want 0 to 16", q.Bits)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 1024
	}
	var res Result
	// Bits are consumed while active: a call inside the path stops them.
	active := q.Bits > 0
	if c := g.call[b0]; c >= 0 && p.Blocks[b0].Start+4*uint64(c) < q.PC {
		active = false
	}
	path := Path{b0}
	memo := map[[2]int]int8{}
	var walk func(b, used int, active bool)
	walk = func(b, used int, active bool) {
		if res.Truncated {
			return
		}
		// b may start the path: control came in from Entry or a backedge
		// whose branch, and some way back to it, agree with the bits left.
		starts := g.entry[b]
		if !starts && g.header[b] {
			for _, e := range p.Blocks[b].Preds {
				if !g.back[e] {
					continue
				}
				if ok, u, act := g.step(e, used, active, q); ok && g.reaches(p.Edges[e].From, u, act, q, memo) {
					starts = true
					break
				}
			}
		}
		if starts {
			if len(res.Paths) == limit {
				res.Truncated = true
				return
			}
			res.Paths = append(res.Paths, append(Path(nil), path...))
		}
		for _, e := range p.Blocks[b].Preds {
			from := p.Edges[e].From
			if g.back[e] || from >= len(p.Blocks) {
				continue
			}
			ok, u, act := g.step(e, used, active, q)
			if !ok {
				continue
			}
			if act && g.call[from] >= 0 {
				act = false // the predecessor calls: older bits are the callee's too
			}
			path = append(path, from)
			walk(from, u, act)
			path = path[:len(path)-1]
		}
	}
	walk(b0, 0, active)
	if q.Partner != 0 && !res.Truncated {
		if pb, ok := p.BlockOf(q.Partner); ok {
			var keep []Path
			for _, c := range res.Paths {
				for _, b := range c {
					if b == pb {
						keep = append(keep, c)
						break
					}
				}
			}
			if len(keep) > 0 && len(keep) < len(res.Paths) {
				res.Paths, res.Narrowed = keep, true
			}
		}
	}
	return res, nil
}

// reaches reports whether some backward walk from block b, over any
// edges (earlier iterations too), agrees with the bits from used on: the
// bits run out, a call or the procedure's entry ends their use, or a
// walk does. Answers are memoized per (block, bits used), except those
// that depended on a state still being explored (a cycle with no
// conditional branch), which count as no only there.
func (g *Graph) reaches(b, used int, active bool, q Query, memo map[[2]int]int8) bool {
	ok, _ := g.reach(b, used, active, q, memo)
	return ok
}

func (g *Graph) reach(b, used int, active bool, q Query, memo map[[2]int]int8) (ok, cut bool) {
	if !active || b >= len(g.Proc.Blocks) || g.call[b] >= 0 {
		return true, false
	}
	k := [2]int{b, used}
	switch memo[k] {
	case 1:
		return true, false
	case -1:
		return false, false
	case 2:
		return false, true // on the walk's stack
	}
	memo[k] = 2
	for _, e := range g.Proc.Blocks[b].Preds {
		from := g.Proc.Edges[e].From
		if from >= len(g.Proc.Blocks) {
			ok = true // from Entry: a call, the caller's branches are unknown
			break
		}
		st, u, act := g.step(e, used, active, q)
		if !st {
			continue
		}
		r, c := g.reach(from, u, act, q, memo)
		cut = cut || c
		if r {
			ok = true
			break
		}
	}
	switch {
	case ok:
		memo[k] = 1
		cut = false
	case cut:
		delete(memo, k)
	default:
		memo[k] = -1
	}
	return ok, cut
}

// step checks walking back over edge e with used bits consumed: when bits
// are active and e leaves a block ending in a conditional branch, e's
// direction must be the next bit (1 taken); it returns the bits then
// used and whether they are still active.
func (g *Graph) step(e, used int, active bool, q Query) (ok bool, u int, act bool) {
	from := g.Proc.Edges[e].From
	if !active || from >= len(g.Proc.Blocks) || !g.cond[from] {
		return true, used, active
	}
	taken := uint16(0)
	if g.Proc.Edges[e].Kind == cfg.Taken {
		taken = 1
	}
	if q.History>>used&1 != taken {
		return false, used, active
	}
	used++
	return true, used, used < q.Bits
}
