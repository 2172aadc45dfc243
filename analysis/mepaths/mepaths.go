// Package mepaths owns ProfileMe's path reconstruction (the ProfileMe
// paper, sec. 5.3): from a sampled instruction's PC and its global branch
// history (the directions of the conditional branches fetched before it,
// newest in bit 0), the path segments of the program's control-flow
// graphs (analysis/cfg) that could have led to it, walking backward from
// the PC; a paired sample's other PC can narrow them further; and, for the
// paper's baseline, the one segment execution counts make likeliest.
//
// A path segment ends at the sampled instruction's block and grows
// backward until it includes h conditional branches (h the history bits
// used) or, intraprocedurally, reaches the beginning of the sampled
// instruction's routine. The history is global, so walking back over a
// call continues at the called procedure's exits (its returns, and the
// returns of procedures it tail-calls) and comes back to the call site at
// the callee's entry; the callee's blocks are part of the segment.
// Interprocedurally, a walk that reaches the routine's entry continues at
// every call site that calls it, so a segment is complete only with h
// branches (or at a routine nothing calls). This is the paper's definition,
// not an acyclic prefix: a segment may run through a loop's iterations,
// and longer histories mean longer segments, so success can fall as h
// grows.
//
// Blocks are built with calls ending them (cfg.Options.SplitAtCalls), so a
// call's return starts a block and every element of a segment is a whole
// block but the sampled one.
package mepaths

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"dcpi/analysis/cfg"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
)

// Mode is how far back a segment may go.
type Mode uint8

const (
	// Intraprocedural segments stop at the sampled routine's entry (the
	// paper's left graph).
	Intraprocedural Mode = iota
	// Interprocedural segments continue through the routine's call sites
	// (the right graph).
	Interprocedural
)

func (m Mode) String() string {
	if m == Interprocedural {
		return "interprocedural"
	}
	return "intraprocedural"
}

// Node is one basic block of a segment, [Start, End).
type Node struct{ Start, End uint64 }

// Path is a path segment: its blocks, the sampled instruction's first,
// back to where the segment begins.
type Path []Node

// Contains reports whether pc is in one of p's blocks.
func (p Path) Contains(pc uint64) bool {
	return slices.ContainsFunc(p, func(n Node) bool { return pc >= n.Start && pc < n.End })
}

// Program is an image's code prepared for reconstruction: procedures'
// graphs are built on first use. Not safe for concurrent use.
type Program struct {
	code    *cfg.Code
	procs   map[uint64]*proc // by procedure start; nil: cannot be built
	callers map[uint64][]frame
}

// proc is one procedure's graph with what the walk asks of its blocks.
type proc struct {
	p    *cfg.Proc
	cond []bool // the block ends in a conditional branch
	call []int  // index into p.Calls of the call ending the block, -1
	rets []int  // blocks ending in a return
	// tails are the edges leaving the procedure by a tail call to a
	// known procedure.
	tails []int
}

// frame is where a walk goes when it reaches the entry of the procedure
// it descended into: the block that called it (or tail-called it), and the
// direction that block's conditional branch took (-1: not conditional).
type frame struct {
	proc  *proc
	block int
	bit   int
}

// NewProgram prepares im's code.
func NewProgram(im *elfimage.Image) (*Program, error) {
	code, err := cfg.NewCode(im, cfg.Options{SplitAtCalls: true})
	if err != nil {
		return nil, err
	}
	return &Program{code: code, procs: map[uint64]*proc{}}, nil
}

// Procedure returns the procedure holding pc.
func (pr *Program) Procedure(pc uint64) (cfg.Range, error) { return pr.code.At(pc) }

// Graph returns the graph of the procedure holding pc, or an error if
// there is none or it cannot be built.
func (pr *Program) Graph(pc uint64) (*cfg.Proc, error) {
	p := pr.procAt(pc)
	if p == nil {
		return nil, fmt.Errorf("mepaths: no procedure graph at %#x", pc)
	}
	return p.p, nil
}

func (pr *Program) procAt(pc uint64) *proc {
	r, err := pr.code.At(pc)
	if err != nil {
		return nil
	}
	if p, ok := pr.procs[r.Start]; ok {
		return p
	}
	var p *proc
	if cp, err := pr.code.Build(r); err == nil {
		p = newProc(cp)
	}
	pr.procs[r.Start] = p
	return p
}

func newProc(cp *cfg.Proc) *proc {
	n := len(cp.Blocks)
	p := &proc{p: cp, cond: make([]bool, n), call: make([]int, n)}
	for i := range cp.Blocks {
		p.call[i] = -1
		ins := cp.BlockInsns(i)
		p.cond[i] = len(ins) > 0 && IsCond(ins[len(ins)-1])
		for _, e := range cp.Blocks[i].Succs {
			switch cp.Edges[e].Kind {
			case cfg.Return:
				p.rets = append(p.rets, i)
			case cfg.TailCall:
				p.tails = append(p.tails, e)
			}
		}
	}
	for k, c := range cp.Calls {
		if c.Block >= 0 && c.Block < n && cp.Blocks[c.Block].End == c.PC+4 {
			p.call[c.Block] = k
		}
	}
	p.rets = slices.Compact(p.rets)
	return p
}

// buildCallers indexes every known call and tail call by its target, for
// interprocedural walks.
func (pr *Program) buildCallers() {
	if pr.callers != nil {
		return
	}
	pr.callers = map[uint64][]frame{}
	for _, r := range pr.code.Procedures() {
		p := pr.procAt(r.Start)
		if p == nil {
			continue
		}
		for i, k := range p.call {
			if k >= 0 && p.p.Calls[k].Known {
				t := p.p.Calls[k].Target
				pr.callers[t] = append(pr.callers[t], frame{p, i, -1})
			}
		}
		for _, e := range p.tails {
			ed := p.p.Edges[e]
			pr.callers[ed.Target] = append(pr.callers[ed.Target], frame{p, ed.From, tailBit(p, ed.From)})
		}
	}
}

// tailBit is the direction bit of block b's tail call: taken if b ends in
// a conditional branch, none otherwise.
func tailBit(p *proc, b int) int {
	if p.cond[b] {
		return 1
	}
	return -1
}

// IsCond reports whether in is a conditional branch: what the history
// register records.
func IsCond(in cfg.Insn) bool {
	switch in.Dec.Op {
	case alpha.OpBEQ, alpha.OpBNE, alpha.OpBLT, alpha.OpBLE, alpha.OpBGT, alpha.OpBGE,
		alpha.OpBLBC, alpha.OpBLBS, alpha.OpFBEQ, alpha.OpFBNE, alpha.OpFBLT, alpha.OpFBLE,
		alpha.OpFBGT, alpha.OpFBGE:
		return true
	}
	return false
}

// IsCall reports whether in is a call (bsr, jsr, jsr_coroutine).
func IsCall(in cfg.Insn) bool {
	switch in.Dec.Op {
	case alpha.OpBR:
		return in.Word>>26 == 0x34 // bsr
	case alpha.OpJMP:
		return (in.Dec.Imm>>14)&3 == 1 || (in.Dec.Imm>>14)&3 == 3 // jsr, jsr_coroutine
	}
	return false
}

// IsReturn reports whether in is a ret.
func IsReturn(in cfg.Insn) bool { return in.Dec.Op == alpha.OpJMP && (in.Dec.Imm>>14)&3 == 2 }

// Query is one reconstruction: the sampled PC, its history, how many of
// the history's bits to use (1 to 16), the mode, optionally a paired
// sample's other PC fetched Distance instructions before it, and the most
// candidates to enumerate.
type Query struct {
	PC       uint64
	History  uint16
	Bits     int
	Mode     Mode
	Partner  uint64
	Distance int
	Limit    int // 0: 256
}

// Result is a reconstruction's candidates. Truncated is set when the walk
// gave up (more candidates than the limit, or too long a walk); Blocked
// counts walks stopped at a call whose callee is unknown (an indirect
// call) or cannot be built. A result with either is not a
// reconstruction.
type Result struct {
	Paths     []Path
	Truncated bool
	Blocked   int
	// Narrowed is set when the partner removed candidates.
	Narrowed bool
}

// Unique returns the one path reconstructed, if exactly one remains and
// the walk was complete.
func (r *Result) Unique() (Path, bool) {
	if r.Truncated || r.Blocked > 0 || len(r.Paths) != 1 {
		return nil, false
	}
	return r.Paths[0], true
}

// Counts are execution counts from a profile, for the execution-count
// scheme: how often control entered the block at start, and went from
// the instruction at from (a block's last) to to (a block's start).
type Counts interface {
	Entered(start uint64) uint64
	Edge(from, to uint64) uint64
}

// ErrNoCode is returned when the PC is in no procedure that can be built.
var ErrNoCode = errors.New("mepaths: no procedure graph")

const (
	maxNodes = 4096   // longest segment walked
	maxSteps = 20_000 // most steps of one reconstruction
	maxTails = 3      // tail calls followed from one callee's exits
)

// move is one way back from a walk's state.
type move struct {
	proc   *proc
	block  int
	bit    int     // direction of the predecessor's conditional branch, -1 none
	push   []frame // frames to push, outermost first
	pop    bool
	end    bool // the segment ends here (a routine's beginning)
	weight uint64
}

type walker struct {
	pr      *Program
	q       Query
	counts  Counts
	steps   int
	blocked int
	trunc   bool
}

// moves lists the ways back from block b of p with stack.
func (w *walker) moves(p *proc, b int, stack *frames) []move {
	var out []move
	var internal uint64
	entry := false
	start := p.p.Blocks[b].Start
	for _, e := range p.p.Blocks[b].Preds {
		ed := p.p.Edges[e]
		if ed.From >= len(p.p.Blocks) {
			entry = true
			continue
		}
		from := ed.From
		if k := p.call[from]; k >= 0 && ed.Kind == cfg.Fallthrough {
			// b is the return point of a call: back into the callee's exits.
			c := p.p.Calls[k]
			var callee *proc
			if c.Known {
				callee = w.pr.procAt(c.Target)
			}
			if callee == nil || callee.p.Start != c.Target && !slices.Contains(callee.p.Entries, c.Target) {
				w.blocked++
				continue
			}
			for _, x := range w.exits(callee, 0) {
				x.push = append([]frame{{p, from, -1}}, x.push...)
				x.weight = w.edge(x.proc, x.block, start)
				internal += x.weight
				out = append(out, x)
			}
			continue
		}
		bit := -1
		if p.cond[from] {
			bit = 0
			if ed.Kind == cfg.Taken {
				bit = 1
			}
		}
		m := move{proc: p, block: from, bit: bit, weight: w.edge(p, from, start)}
		internal += m.weight
		out = append(out, m)
	}
	if entry || p.p.Blocks[b].Start == p.p.Start {
		var outside uint64
		if w.counts != nil {
			if n := w.counts.Entered(start); n > internal {
				outside = n - internal
			}
		}
		switch {
		case stack != nil:
			top := stack.top
			out = append(out, move{proc: top.proc, block: top.block, bit: top.bit, pop: true, weight: outside})
		case w.q.Mode == Intraprocedural:
			out = append(out, move{end: true, weight: outside})
		default:
			w.pr.buildCallers()
			cs := w.pr.callers[start]
			for _, c := range cs {
				out = append(out, move{proc: c.proc, block: c.block, bit: c.bit, weight: w.edge(c.proc, c.block, start)})
			}
			if len(cs) == 0 {
				out = append(out, move{end: true, weight: outside})
			}
		}
	}
	return out
}

// edge is the profile's count of control going from block b of p to
// start (0 without counts).
func (w *walker) edge(p *proc, b int, start uint64) uint64 {
	if w.counts == nil {
		return 0
	}
	return w.counts.Edge(p.p.Blocks[b].End-4, start)
}

// exits lists the blocks control can return from when p was called: its
// returns, and those of the procedures it tail-calls, with the frames
// that lead back through the tail calls.
func (w *walker) exits(p *proc, depth int) []move {
	var out []move
	for _, r := range p.rets {
		out = append(out, move{proc: p, block: r, bit: -1})
	}
	if depth >= maxTails {
		return out
	}
	for _, e := range p.tails {
		ed := p.p.Edges[e]
		t := w.pr.procAt(ed.Target)
		if t == nil || t == p {
			w.blocked++
			continue
		}
		for _, x := range w.exits(t, depth+1) {
			x.push = append([]frame{{p, ed.From, tailBit(p, ed.From)}}, x.push...)
			out = append(out, x)
		}
	}
	return out
}

// frames is a walk's stack of frames, shared between the walks that
// branch from one state (a walk tries several moves from each).
type frames struct {
	top  frame
	rest *frames
}

// apply returns the stack after m.
func (w *walker) apply(m move, stack *frames) *frames {
	if m.pop {
		return stack.rest
	}
	for _, f := range m.push {
		stack = &frames{f, stack}
	}
	return stack
}

func node(p *proc, b int) Node { return Node{p.p.Blocks[b].Start, p.p.Blocks[b].End} }

// start finds q.PC's procedure and block.
func (pr *Program) start(q Query) (*proc, int, error) {
	if q.Bits < 1 || q.Bits > 16 {
		return nil, 0, fmt.Errorf("mepaths: %d history bits: want 1 to 16", q.Bits)
	}
	p := pr.procAt(q.PC)
	if p == nil {
		return nil, 0, fmt.Errorf("%w at %#x", ErrNoCode, q.PC)
	}
	b, ok := p.p.BlockOf(q.PC)
	if !ok {
		return nil, 0, fmt.Errorf("%w at %#x", ErrNoCode, q.PC)
	}
	return p, b, nil
}

// Reconstruct returns the path segments ending at q.PC whose conditional
// branches agree with the first q.Bits bits of q.History. With a partner,
// a candidate at least q.Distance instructions long that does not hold
// the partner's PC is discarded (the paper's rule, applied only where it
// is sound: a shorter candidate began after the partner was fetched).
func (pr *Program) Reconstruct(q Query) (Result, error) {
	p0, b0, err := pr.start(q)
	if err != nil {
		return Result{}, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 256
	}
	w := &walker{pr: pr, q: q}
	var res Result
	path := Path{{p0.p.Blocks[b0].Start, p0.p.Blocks[b0].End}}
	var walk func(p *proc, b, used int, stack *frames)
	walk = func(p *proc, b, used int, stack *frames) {
		if w.trunc {
			return
		}
		if w.steps++; w.steps > maxSteps || len(path) > maxNodes {
			w.trunc = true
			return
		}
		for _, m := range w.moves(p, b, stack) {
			if m.end {
				if len(res.Paths) == limit {
					w.trunc = true
					return
				}
				res.Paths = append(res.Paths, slices.Clone(path))
				continue
			}
			u := used
			if m.bit >= 0 {
				if int(q.History>>u&1) != m.bit {
					continue
				}
				u++
			}
			path = append(path, node(m.proc, m.block))
			if u == q.Bits {
				if len(res.Paths) == limit {
					w.trunc = true
					return
				}
				res.Paths = append(res.Paths, slices.Clone(path))
			} else {
				walk(m.proc, m.block, u, w.apply(m, stack))
			}
			path = path[:len(path)-1]
		}
	}
	walk(p0, b0, 0, nil)
	res.Truncated, res.Blocked = w.trunc, w.blocked
	if q.Partner != 0 && q.Distance > 0 {
		res = res.WithPartner(q.PC, q.Partner, q.Distance)
	}
	return res, nil
}

// WithPartner is r narrowed by a paired sample's other PC, partner,
// fetched distance instructions before the sample at pc: a candidate at
// least distance instructions long that does not hold partner is
// discarded (the paper's rule, applied only where it is sound: a shorter
// candidate began after the partner was fetched, so it says nothing).
func (r Result) WithPartner(pc, partner uint64, distance int) Result {
	if r.Truncated {
		return r
	}
	keep := r.Paths[:0:0]
	for _, c := range r.Paths {
		if c.Contains(partner) || Length(c, pc) < distance {
			keep = append(keep, c)
		}
	}
	r.Narrowed = len(keep) < len(r.Paths)
	r.Paths = keep
	return r
}

// Length is how many instructions path runs before pc (its first
// block's instruction at pc).
func Length(path Path, pc uint64) int {
	if len(path) == 0 {
		return 0
	}
	n := int((pc - path[0].Start) / 4)
	for _, b := range path[1:] {
		n += int((b.End - b.Start) / 4)
	}
	return n
}

// Likeliest is the execution-count scheme (trace scheduling's): ignoring
// the history bits, it walks back from q.PC taking at every merge the
// predecessor the profile's counts say control came from most often (the
// lower address on a tie), until the segment includes q.Bits conditional
// branches or ends as Reconstruct's would. With among (Reconstruct's
// candidates), it takes only steps that stay on one of them: the counts
// choose within the set the history bits (and a partner) restricted, so
// whenever the unrestricted walk finds a candidate, the restricted one
// finds the same. ok is false when the walk met a call it cannot follow,
// left among, or ran too long.
func (pr *Program) Likeliest(q Query, counts Counts, among []Path) (path Path, ok bool, err error) {
	if counts == nil {
		return nil, false, fmt.Errorf("mepaths: the execution-count scheme needs counts")
	}
	p, b, err := pr.start(q)
	if err != nil {
		return nil, false, err
	}
	w := &walker{pr: pr, q: q, counts: counts}
	path = Path{node(p, b)}
	var stack *frames
	used := 0
	for len(path) <= maxNodes {
		ms := w.moves(p, b, stack)
		if among != nil {
			ms = slices.DeleteFunc(ms, func(m move) bool { return !onSome(among, path, m) })
		}
		if w.blocked > 0 || len(ms) == 0 {
			return path, false, nil
		}
		best := slices.MaxFunc(ms, func(a, b move) int {
			if c := cmp.Compare(a.weight, b.weight); c != 0 {
				return c
			}
			return cmp.Compare(moveAddr(b), moveAddr(a))
		})
		if best.end {
			return path, true, nil
		}
		path = append(path, node(best.proc, best.block))
		if best.bit >= 0 {
			if used++; used == q.Bits {
				return path, true, nil
			}
		}
		stack = w.apply(best, stack)
		p, b = best.proc, best.block
	}
	return path, false, nil
}

func moveAddr(m move) uint64 {
	if m.end {
		return 0
	}
	return m.proc.p.Blocks[m.block].Start
}

// onSome reports whether the walk's path after m is one of among or the
// beginning of one.
func onSome(among []Path, path Path, m move) bool {
	return slices.ContainsFunc(among, func(c Path) bool {
		if m.end {
			return slices.Equal(c, path)
		}
		return len(c) > len(path) && c[len(path)] == node(m.proc, m.block) && slices.Equal(c[:len(path)], path)
	})
}
