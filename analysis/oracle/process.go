package oracle

import (
	"fmt"
	"sort"

	"dcpi/analysis/cct"
	"dcpi/analysis/cfg"
	"dcpi/analysis/paths"
	"dcpi/hwsim"
)

// frame is one activation on a process's shadow stack.
type frame struct {
	proc     *Proc     // nil: code outside every procedure
	parent   *cct.Node // the caller's record (the root for the first frame)
	node     *cct.Node // this activation's record (an ancestor's, under recursion)
	callSite uint64    // the call in the caller (0 for the first frame)
	retAddr  uint64    // where a return to the caller goes (0: none)
	tracking bool      // following the path: the numbering is known and the entry was an entry edge
	// resync: walking the blocks without a path register, after a
	// longjmp landed mid-procedure, until a backedge starts a path.
	resync bool
	from   uint64    // when resyncing: where the first block of trail was entered
	block  int       // the current block, when walking
	r      int64     // the Ball-Larus path register
	trail  []int     // the current path's blocks so far
	insns  uint64    // the current path's instructions so far
	cost   [3]uint64 // and its cycles, I-cache and D-cache misses
}

// process is one process's view: its image, shadow stack and the next
// user instruction it will run.
type process struct {
	img    *Image
	frames []*frame
	pc     uint64    // the next user instruction
	last   [3]uint64 // the CPU's cycles, I-cache and D-cache misses at the last charge
	fresh  bool      // exec'd or spawned: the next resume enters the image
	path   string    // the image exec named
}

// ProcessEvent follows fork, exec and exit (hwsim.EventSink).
func (o *Oracle) ProcessEvent(e hwsim.Event) {
	switch e.Kind {
	case hwsim.EventFork:
		parent := o.procs[e.PPID]
		if parent == nil || parent.img == nil {
			return
		}
		child := parent.fork()
		o.procs[e.PID] = child
		child.recordForked()
	case hwsim.EventExec:
		p := o.procs[e.PID]
		if p == nil {
			p = &process{}
			o.procs[e.PID] = p
		}
		p.abandon(o, "exec")
		p.img, p.fresh, p.path = nil, true, e.Path
	case hwsim.EventExit:
		if p := o.procs[e.PID]; p != nil {
			p.abandon(o, "exit")
			delete(o.procs, e.PID)
		}
	}
}

// fork copies the shadow stack: the child returns from fork in the same
// activations (sharing their CCT records) and goes on alone.
func (p *process) fork() *process {
	c := *p
	c.frames = make([]*frame, len(p.frames))
	for i, f := range p.frames {
		g := *f
		g.trail = append([]int(nil), f.trail...)
		c.frames[i] = &g
	}
	return &c
}

// recordForked notes the open paths' prefixes a forked child inherits:
// they ran once, before fork, but the paths end in both processes.
func (p *process) recordForked() {
	upto := p.pc
	for i := len(p.frames) - 1; i >= 0; i-- {
		f := p.frames[i]
		if f.proc != nil && f.walking() && len(f.trail) > 0 {
			p.img.Forked = append(p.img.Forked, Partial{Proc: f.proc, Blocks: append([]int(nil), f.trail...), From: f.from, Upto: upto, Out: -1, Reason: "fork"})
		}
		upto = f.retAddr
	}
}

// abandon ends every open activation without a path: their partial paths
// are kept as Partials (reason says why). The top frame stopped at p.pc,
// each frame below it at its call (the return address of the frame above).
func (p *process) abandon(o *Oracle, reason string) {
	upto := p.pc
	for len(p.frames) > 0 {
		f := p.frames[len(p.frames)-1]
		p.popPartial(o, reason, upto)
		upto = f.retAddr
	}
}

// popPartial pops the top frame, whose path did not end: it ran up to,
// not including, upto.
func (p *process) popPartial(o *Oracle, reason string, upto uint64) {
	f := p.frames[len(p.frames)-1]
	p.frames = p.frames[:len(p.frames)-1]
	if f.proc == nil {
		return
	}
	if !f.walking() {
		f.proc.Unknown++
		o.Counters.UnknownActivations++
		return
	}
	p.cut(f, reason, upto, -1)
}

// walking reports whether the frame follows its blocks (with or without
// the path register).
func (f *frame) walking() bool { return f.tracking || f.resync }

// cut keeps f's open path as a Partial: its trail, the last block run up
// to upto, and the edge out that ended it (-1: none).
func (p *process) cut(f *frame, reason string, upto uint64, out int) {
	if len(f.trail) == 0 {
		return
	}
	p.img.Partials = append(p.img.Partials, Partial{Proc: f.proc, Blocks: f.trail, From: f.from, Upto: upto, Out: out, Reason: reason})
	f.trail, f.from = nil, 0
}

// Transfer follows one observed transfer (hwsim.TransferObserver).
func (o *Oracle) Transfer(t *hwsim.Transfer) {
	switch t.Kind {
	case hwsim.TransferUser:
		p := o.procs[t.PID]
		if p == nil || p.img == nil || len(p.frames) == 0 {
			return
		}
		p.run(o, t.From+4)
		p.charge(t)
		p.transfer(o, t.From, t.To)
	case hwsim.TransferKernelEntry:
		o.Counters.KernelEntries++
		p := o.procs[t.PID]
		if p == nil || p.img == nil || len(p.frames) == 0 {
			return
		}
		p.run(o, t.From)
		p.charge(t)
	case hwsim.TransferUserResume:
		p := o.procs[t.PID]
		if p == nil {
			p = &process{fresh: true}
			o.procs[t.PID] = p
		}
		p.last = costs(t)
		switch {
		case p.fresh:
			p.fresh = false
			p.img = o.image(p.path)
			if p.img == nil {
				o.Counters.UnresolvedImages++
				return
			}
			p.pc = t.To
			p.enter(o, p.img.Tree.Root, t.To, 0, 0)
		case p.img == nil:
		case t.To+4 == p.pc && p.isCallPal(t.To):
			// A blocked system call restarts: the CALL_PAL runs again.
			o.Counters.RestartedSyscalls++
			p.pc = t.To
		case t.To != p.pc:
			o.Counters.UnexpectedResumes++
			if len(o.Notes) < maxNotes {
				o.Notes = append(o.Notes, fmt.Sprintf("pid %d resumed at %#x, left at %#x", t.PID, t.To, p.pc))
			}
			p.abandon(o, "restart")
			p.pc = t.To
			p.enter(o, p.img.Tree.Root, t.To, 0, 0)
		}
	}
}

// costs are the counters charged per straight-line segment.
func costs(t *hwsim.Transfer) [3]uint64 { return [3]uint64{t.Cycle, t.IMiss, t.DMiss} }

// charge gives the cycles and misses since the last charge (a resume or
// a transfer on the same CPU) to the top activation.
func (p *process) charge(t *hwsim.Transfer) {
	now := costs(t)
	if len(p.frames) > 0 {
		f := p.frames[len(p.frames)-1]
		for i := range now {
			d := now[i] - p.last[i]
			f.cost[i] += d
			f.node.Metrics[mCycles+i] += d
		}
	}
	p.last = now
}

// enter pushes an activation of the code at addr, called from parent's
// record at callSite (returning to retAddr).
func (p *process) enter(o *Oracle, parent *cct.Node, addr, callSite, retAddr uint64) {
	pr := p.img.procAt(addr)
	key := addr
	if pr != nil {
		key = pr.Entry
	}
	f := &frame{proc: pr, parent: parent, callSite: callSite, retAddr: retAddr}
	f.node = p.img.Tree.Child(parent, key, callSite)
	f.node.Metrics[mCalls]++
	p.frames = append(p.frames, f)
	if pr == nil || pr.Numbering == nil {
		return
	}
	P := pr.CFG
	for _, e := range P.Out(P.Entry()) {
		if P.Edges[e].PC == addr {
			f.tracking = true
			f.take(o, p, e)
			return
		}
	}
	o.Counters.EnteredMidProcedure++
}

// take follows edge e of the top frame's procedure: its Ball-Larus action
// and the block it leads to.
func (f *frame) take(o *Oracle, p *process, e int) {
	n := f.proc.Numbering
	a := n.Actions[e]
	if f.resync {
		// No path register: a backedge starts the next path (r = Start,
		// as after any backedge); leaving ends the walk. Either way the
		// blocks walked since the landing are a Partial.
		if a.Kind == paths.Back || a.Kind == paths.Count {
			last := f.trail[len(f.trail)-1]
			p.cut(f, "longjmp", f.proc.CFG.Blocks[last].End, e)
			f.resync, f.tracking = false, true
			f.r, f.insns, f.cost = a.Start, 0, [3]uint64{}
		}
		if to := f.proc.CFG.Edges[e].To; to != f.proc.CFG.Exit() {
			f.block = to
			f.trail = append(f.trail, to)
		}
		return
	}
	switch a.Kind {
	case paths.Init:
		f.r = a.Start
	case paths.Add:
		f.r += a.Add
	case paths.Count, paths.Back:
		f.count(o, p, f.r+a.Add)
		f.r = a.Start
	}
	if to := f.proc.CFG.Edges[e].To; to != f.proc.CFG.Exit() {
		f.block = to
		f.trail = append(f.trail, to)
	}
}

// count ends the current path with ID id.
func (f *frame) count(o *Oracle, p *process, id int64) {
	if id < 0 || uint64(id) >= f.proc.Numbering.NumPaths {
		f.lose(o, p, fmt.Sprintf("path sum %d out of range", id))
		return
	}
	s := f.proc.Paths[uint64(id)]
	if s == nil {
		s = &PathStat{}
		f.proc.Paths[uint64(id)] = s
	}
	s.Count++
	s.Instructions += f.insns
	s.Cycles += f.cost[0]
	s.IMiss += f.cost[1]
	s.DMiss += f.cost[2]
	f.node.AddPath(uint64(id), 1)
	f.insns, f.cost = 0, [3]uint64{}
	f.trail = f.trail[:0]
}

// lose stops following the top frame's path: the layout cannot explain
// what ran.
func (f *frame) lose(o *Oracle, p *process, why string) {
	o.Counters.Inconsistent++
	f.tracking, f.resync = false, false
	if len(o.Notes) < maxNotes {
		name := "?"
		if f.proc != nil {
			name = f.proc.Name
		}
		o.Notes = append(o.Notes, fmt.Sprintf("%s at %#x: %s", name, p.pc, why))
	}
}

// run executes the straight-line user code from p.pc up to end
// (exclusive), taking the fall-through edges it crosses.
func (p *process) run(o *Oracle, end uint64) {
	for p.pc < end && len(p.frames) > 0 {
		f := p.frames[len(p.frames)-1]
		if f.proc == nil || f.proc.CFG == nil {
			n := (end - p.pc) / 4
			f.node.Metrics[mInsns] += n
			if f.proc == nil {
				o.Counters.UnknownCode += n
			} else {
				f.proc.UnknownIns += n
			}
			p.pc = end
			return
		}
		P := f.proc.CFG
		if p.pc == P.End {
			// Running off the procedure's end into the next one.
			if f.walking() {
				if e, ok := exitEdge(P, f.block, cfg.FallOut, 0); ok {
					f.take(o, p, e)
				} else {
					f.lose(o, p, "ran off the end with no fall-out edge")
				}
			}
			p.replace(o, p.pc)
			continue
		}
		if p.pc < P.Start || p.pc > P.End {
			f.lose(o, p, "running outside the procedure")
			p.replace(o, p.pc)
			continue
		}
		stop := min(end, P.End)
		if f.walking() {
			b := &P.Blocks[f.block]
			if p.pc == b.End {
				if e, ok := fallEdge(P, f.block); ok {
					f.take(o, p, e)
				} else {
					f.lose(o, p, fmt.Sprintf("block %d has no fall-through edge", f.block))
				}
				continue
			}
			if p.pc < b.Start || p.pc > b.End {
				f.lose(o, p, fmt.Sprintf("outside block %d", f.block))
				continue
			}
			stop = min(end, b.End)
		}
		n := (stop - p.pc) / 4
		f.insns += n
		f.node.Metrics[mInsns] += n
		if !f.tracking {
			f.proc.UnknownIns += n
		}
		p.pc = stop
	}
}

// fallEdge returns the edge from block b to the next block: its
// fall-through, or a branch or jump-table entry to the next instruction,
// which the observer does not report (its successor is pc+4).
func fallEdge(P *cfg.Proc, b int) (int, bool) {
	for _, e := range P.Blocks[b].Succs {
		E := P.Edges[e]
		if E.Kind == cfg.Fallthrough || (E.To == b+1 && (E.Kind == cfg.Taken || E.Kind == cfg.JumpTable)) {
			return e, true
		}
	}
	return 0, false
}

// exitEdge returns block b's edge of kind k to Exit (with target t, when
// the edge knows it).
func exitEdge(P *cfg.Proc, b int, k cfg.EdgeKind, t uint64) (int, bool) {
	for _, e := range P.Blocks[b].Succs {
		if E := P.Edges[e]; E.Kind == k && (E.Target == 0 || t == 0 || E.Target == t) {
			return e, true
		}
	}
	return 0, false
}

// replace ends the top activation (its path already counted by the edge
// that left it) and starts one of the code at addr in its place: a tail
// call, a jump into another procedure, running off the end. The new
// activation has the old one's caller and call site.
func (p *process) replace(o *Oracle, addr uint64) {
	f := p.frames[len(p.frames)-1]
	p.frames = p.frames[:len(p.frames)-1]
	p.leave(o, f)
	p.enter(o, f.parent, addr, f.callSite, f.retAddr)
}

// leave accounts for an activation that left normally.
func (p *process) leave(o *Oracle, f *frame) {
	if f.proc != nil && !f.tracking {
		f.proc.Unknown++
		o.Counters.UnknownActivations++
	}
}

// transfer follows a control transfer from the instruction at from (just
// run) to to.
func (p *process) transfer(o *Oracle, from, to uint64) {
	f := p.frames[len(p.frames)-1]
	if f.proc == nil || f.proc.CFG == nil {
		if !p.ret(o, to) {
			p.replace(o, to)
		}
		p.pc = to
		return
	}
	P := f.proc.CFG
	if isCall(P, from) {
		p.pc = to
		p.enter(o, f.node, to, from, from+4)
		return
	}
	bi, ok := P.BlockOf(from)
	if !ok {
		f.lose(o, p, fmt.Sprintf("transfer from %#x outside the procedure", from))
		p.replace(o, to)
		p.pc = to
		return
	}
	if f.walking() && (bi != f.block || P.Blocks[bi].End != from+4) {
		f.lose(o, p, fmt.Sprintf("transfer %#x->%#x not at the end of block %d", from, to, f.block))
	}
	for _, e := range P.Blocks[bi].Succs {
		E := P.Edges[e]
		switch E.Kind {
		case cfg.Taken, cfg.JumpTable:
			if E.To == P.Exit() || P.Blocks[E.To].Start != to {
				continue
			}
			if f.walking() {
				f.take(o, p, e)
			}
			p.pc = to
			return
		case cfg.Return:
			if f.walking() {
				f.take(o, p, e)
			}
			if !p.ret(o, to) && !p.land(o, to) {
				o.Counters.UnmatchedReturns++
				p.replace(o, to)
			}
			p.pc = to
			return
		case cfg.TailCall, cfg.Outside:
			if E.Target != 0 && E.Target != to {
				continue
			}
			if f.walking() {
				f.take(o, p, e)
			}
			p.pc = to
			if !p.ret(o, to) {
				p.replace(o, to)
			}
			return
		}
	}
	// No edge explains it: an unresolved jmp (the procedure has no
	// numbering) or a layout the CFG got wrong.
	if f.walking() {
		f.lose(o, p, fmt.Sprintf("no edge for the transfer %#x->%#x", from, to))
	}
	p.pc = to
	switch {
	case to >= P.Start && to < P.End:
		// stays in the procedure, untracked
	case p.ret(o, to):
	default:
		p.replace(o, to)
	}
}

// ret pops to the frame whose return address is to, if any: the top
// frame returns; when the match is further down (longjmp-like), the frames
// between are unwound, each stopped at its call.
func (p *process) ret(o *Oracle, to uint64) bool {
	for i := len(p.frames) - 1; i >= 1; i-- {
		if p.frames[i].retAddr != to {
			continue
		}
		top := p.frames[len(p.frames)-1]
		p.frames = p.frames[:len(p.frames)-1]
		p.leave(o, top)
		upto := top.retAddr
		for len(p.frames) > i {
			o.Counters.Unwound++
			g := p.frames[len(p.frames)-1]
			p.popPartial(o, "unwind", upto)
			upto = g.retAddr
		}
		return true
	}
	return false
}

// land follows a return to no return address into the code of a frame
// below the top: longjmp (glibc's __longjmp ends with a ret to the
// setjmp call's return address, whose frame is long gone). The frames
// above are unwound, the landing frame's open path is cut, and it walks
// on without a path register until a backedge or its exit (resync).
func (p *process) land(o *Oracle, to uint64) bool {
	for i := len(p.frames) - 2; i >= 0; i-- {
		g := p.frames[i]
		if g.proc == nil || g.proc.CFG == nil || to < g.proc.CFG.Start || to >= g.proc.CFG.End {
			continue
		}
		top := p.frames[len(p.frames)-1]
		p.frames = p.frames[:len(p.frames)-1]
		p.leave(o, top)
		upto := top.retAddr
		for len(p.frames) > i+1 {
			o.Counters.Unwound++
			h := p.frames[len(p.frames)-1]
			p.popPartial(o, "unwind", upto)
			upto = h.retAddr
		}
		o.Counters.Longjmps++
		if g.walking() {
			p.cut(g, "longjmp", upto, -1)
			b, _ := g.proc.CFG.BlockOf(to)
			g.tracking, g.resync = false, true
			g.block, g.trail, g.from = b, []int{b}, to
			g.insns, g.cost = 0, [3]uint64{}
		}
		return true
	}
	return false
}

// isCall reports whether the instruction at pc is one of P's call sites.
func isCall(P *cfg.Proc, pc uint64) bool {
	i := sort.Search(len(P.Calls), func(i int) bool { return P.Calls[i].PC >= pc })
	return i < len(P.Calls) && P.Calls[i].PC == pc
}

// isCallPal reports whether the top activation's instruction at pc is a
// CALL_PAL.
func (p *process) isCallPal(pc uint64) bool {
	if len(p.frames) == 0 {
		return false
	}
	f := p.frames[len(p.frames)-1]
	if f.proc == nil || f.proc.CFG == nil {
		return false
	}
	in, ok := f.proc.CFG.Insn(pc)
	return ok && in.Word>>26 == 0
}
