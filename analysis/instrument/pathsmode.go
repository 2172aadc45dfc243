package instrument

import (
	"fmt"
	"math"
	"sort"

	"dcpi/analysis/cfg"
	"dcpi/analysis/paths"
)

// The paths mode (PLDI'97 sec. 2) counts Ball-Larus paths. Each
// activation of a counted procedure keeps its path register r in a slot
// of a per-process path stack in the added segment (single-threaded
// programs; fork copies it with the rest of memory):
//
//   - on an Entry edge (at the entry instruction) a slot {r = Start,
//     entry sp, procedure} is pushed; slots whose entry sp lies below the
//     new entry sp belong to activations that are gone (a longjmp
//     skipped their exits): they are popped and counted as "lost";
//   - an Add edge adds to the top slot's r;
//   - a Count edge (to Exit: return, tail call, fall-out) does
//     count[r+Add]++ and pops; a Back edge does count[r+Add]++ and r =
//     Start. Both first find this activation's slot, popping (as lost)
//     the slots of activations a longjmp skipped; if there is none,
//     nothing is counted and "unmatched" goes up;
//   - a ret through ra that does not go where the activation's entry ra
//     said (glibc's __longjmp returns to setjmp's caller) marks the slot
//     below as landed on: like the oracle, that activation counts no path
//     until its next backedge restarts one (its exit counts as lost).
//
// Counters: four named ones first (below), then per counted procedure an
// array of NumPaths counters, or, with more than MaxArrayPaths paths, one
// overflow counter, its paths going to the hash table all such procedures
// share (HashSlots open-addressed slots keyed by procedure and path ID; a
// path that finds the table full is counted in its procedure's overflow
// counter, never lost silently). Procedures paths.Number refuses are left
// uncounted and listed.
const (
	// MaxArrayPaths bounds the paths of a procedure counted in an array.
	MaxArrayPaths = 4096
	// HashSlots is the hash table's capacity (a power of two); one slot
	// stays empty, so it holds HashSlots-1 distinct paths. The table is
	// 1+3*HashSlots counters: slots used, then (path ID + 1, procedure
	// ID, count) triples.
	HashSlots = 1 << hashBits
	hashBits  = 14
	hashMul   = 0x9e37 // spreads procedures over the table
	// pathStackSlots is the path stack's capacity (activations deep).
	pathStackSlots = 1 << 16
	slotSize       = 32 // r, ^entry sp, procedure ID, return address
	// metricsSlotSize adds the path's start values: rpcc, rdpic's v0, t0.
	metricsSlotSize = 64
	topOff          = -72
	modePaths       = 2
)

// PathSpecialCounters name the first counters of a paths-mode dump.
var PathSpecialCounters = []string{"lost", "out_of_range", "stack_overflow", "unmatched"}

const (
	cLost = iota
	cRange
	cOverflow
	cUnmatched
)

// pathOp is one Ball-Larus action as emitted code.
type pathOp struct {
	kind       paths.ActionKind
	add, start int64
	id         int    // the procedure's ID (its slot tag), from 1
	base       int    // its first counter (hashed: its overflow counter)
	hashBase   int    // the hash table's first counter
	np         uint64 // its NumPaths
	hashed     bool   // counted in a hash table, not an array
	// ret: a Count at a ret through ra, which checks that it returns
	// where the activation was called from.
	ret bool
	// metrics: accumulate cycles and rdpic's two events per path
	// (metrics.go).
	metrics bool
	// cct: a CCT-mode action (cctmode.go) placed by this mode's planner.
	cct *cctOp
}

// slot returns the path stack's slot size in bytes.
func (o pathOp) slot() int16 {
	if o.metrics {
		return metricsSlotSize
	}
	return slotSize
}

// pathPoint is what a paths-mode stub does around one instruction.
type pathPoint struct {
	pre        []pathOp // before the instruction, on every arrival
	body       bool     // an entry: internal edges enter after pre (no Init)
	taken      []pathOp // conditional branch arms
	fall       []pathOp
	takenRoute bool // the arm goes to the target's body label
	fallRoute  bool
	brRoute    bool // an unconditional br to an entry's body label
	afterRoute bool // a plain instruction continuing at the next one's body
	jump       map[uint64][]pathOp
	jumpRoute  map[uint64]bool
}

func fitsInt32(v int64) bool { return v > math.MinInt32+(1<<15) && v < math.MaxInt32-(1<<15) }

// planPaths plans the paths mode.
func planPaths(procs []*cfg.Proc, opt Options) (*planned, error) {
	pl := &planned{points: map[uint64]*point{}, manifest: &Manifest{Version: ManifestVersion, Mode: opt.Mode, DumpPath: opt.DumpPath, Special: PathSpecialCounters}}
	m := pl.manifest
	m.Counters = len(PathSpecialCounters)
	metrics := opt.Metrics
	words := 1 // counters per path
	if metrics {
		m.Metrics = metricNames(opt.PIC)
		words = pathWords
	}
	nextID := 1
	for _, p := range procs {
		// Every callsys is hooked, as in pixie mode.
		var live []regSet
		skip := ""
		var num *paths.Numbering
		if p.MissingEdges {
			skip = "indirect jump the CFG cannot resolve"
			for _, j := range p.Jumps {
				if !j.Resolved {
					skip = fmt.Sprintf("indirect jump at %#x the CFG cannot resolve (%s)", j.PC, j.Note)
					break
				}
			}
		} else if n, err := paths.Number(p); err != nil {
			skip = err.Error()
		} else {
			num = n
			live = liveIn(p)
		}
		if skip != "" && opt.Strict {
			return nil, refuse("procedure %s: %s", p.Name, skip)
		}
		local := map[uint64]*point{}
		at := func(pc uint64) *point {
			if pt := local[pc]; pt != nil {
				return pt
			}
			if pt := pl.points[pc]; pt != nil {
				local[pc] = pt
				return pt
			}
			i := (pc - p.Start) / 4
			pt := &point{pc: pc, word: p.Insns[i].Word, blockCounter: -1}
			if live != nil {
				pt.free = allRegs &^ live[i]
			}
			local[pc] = pt
			return pt
		}
		for bi := range p.Blocks {
			b := &p.Blocks[bi]
			if !b.Reachable {
				continue
			}
			for pc := b.Start; pc < b.End; pc += 4 {
				if p.Insns[(pc-p.Start)/4].Word == opPAL<<26|palCall {
					pt := at(pc)
					pt.syscall = true
					pt.path = &pathPoint{} // exit dumps too (pathStub)
				}
			}
		}
		if num != nil {
			if why := planProcPaths(p, num, at, nextID, m.Counters, num.NumPaths > MaxArrayPaths, metrics); why != "" {
				skip = why
				if opt.Strict {
					return nil, refuse("procedure %s: %s", p.Name, skip)
				}
				// Keep only the system call hooks.
				for pc, pt := range local {
					if pt.syscall {
						pt.path = &pathPoint{}
					} else {
						delete(local, pc)
					}
				}
			} else {
				pi := ProcInfo{Name: p.Name, Start: p.Start, End: p.End, ID: nextID, NumPaths: num.NumPaths, PathBase: m.Counters}
				if num.NumPaths > MaxArrayPaths {
					pi.Hashed = true
					m.Counters++
				} else {
					m.Counters += words * int(num.NumPaths)
				}
				m.Procs = append(m.Procs, pi)
				nextID++
			}
		}
		if skip != "" {
			m.Skipped = append(m.Skipped, Skip{Name: p.Name, Reason: skip})
		}
		for pc, pt := range local {
			pl.points[pc] = pt
		}
	}
	// The hash table goes last, if any procedure needs it; the ops learn
	// its place now.
	for _, p := range m.Procs {
		if p.Hashed {
			m.HashBase = m.Counters
			m.HashSlots = HashSlots
			m.Counters += 1 + hashWords(metrics)*HashSlots
			break
		}
	}
	hooked := false
	for _, pt := range pl.points {
		hooked = hooked || pt.syscall
		if x := pt.path; x != nil {
			for _, list := range [][]pathOp{x.pre, x.taken, x.fall} {
				for i := range list {
					list[i].hashBase = m.HashBase
				}
			}
			for _, list := range x.jump {
				for i := range list {
					list[i].hashBase = m.HashBase
				}
			}
		}
	}
	if !hooked {
		return nil, refuse("no system call found to hook the exit path (exit_group) on")
	}
	return pl, nil
}

// planProcPaths places p's actions on points; it returns why p cannot be
// counted, or "".
func planProcPaths(p *cfg.Proc, n *paths.Numbering, at func(uint64) *point, id, base int, hashed, metrics bool) string {
	locked := lockWindows(p)
	isEntry := map[uint64]bool{}
	for _, e := range p.Entries {
		isEntry[e] = true
	}
	pp := func(pc uint64) (*pathPoint, string) {
		if locked[pc] {
			return nil, fmt.Sprintf("an action falls at %#x, inside a locked (ldx_l/stx_c) sequence", pc)
		}
		if !displaceable(p.Insns[(pc-p.Start)/4].Word) {
			return nil, fmt.Sprintf("an action falls at %#x, a jump whose link is its target register", pc)
		}
		pt := at(pc)
		if pt.path == nil {
			pt.path = &pathPoint{}
		}
		return pt.path, ""
	}
	op := func(a paths.Action) ([]pathOp, string) {
		if a.Kind == paths.None {
			return nil, ""
		}
		if !fitsInt32(a.Add) || !fitsInt32(a.Start) {
			return nil, "an increment beyond 32 bits"
		}
		return []pathOp{{kind: a.Kind, add: a.Add, start: a.Start, id: id, base: base, np: n.NumPaths, hashed: hashed, metrics: metrics}}, ""
	}
	// Entries first: their Init runs before any other action there.
	for _, e := range p.Out(p.Entry()) {
		E := p.Edges[e]
		x, why := pp(E.PC)
		if why != "" {
			return why
		}
		o, why := op(n.Actions[e])
		if why != "" {
			return why
		}
		x.pre = append(o, x.pre...)
		x.body = true
	}
	routed := func(E cfg.Edge) bool { return E.To != p.Exit() && isEntry[p.Blocks[E.To].Start] }
	for bi := range p.Blocks {
		b := &p.Blocks[bi]
		if !b.Reachable {
			continue
		}
		pc := b.End - 4
		w := p.Insns[(pc-p.Start)/4].Word
		for _, e := range b.Succs {
			E := p.Edges[e]
			o, why := op(n.Actions[e])
			if why != "" {
				return why
			}
			route := routed(E)
			if o == nil && !route {
				continue
			}
			x, why := pp(pc)
			if why != "" {
				return why
			}
			switch opc := w >> 26; {
			case condBranch(w):
				fall := E.Kind == cfg.Fallthrough || E.Kind == cfg.FallOut
				both := E.Kind == cfg.Fallthrough && branchTarget(pc, w) == pc+4
				if fall || both {
					x.fall, x.fallRoute = append(x.fall, o...), route
				}
				if !fall || both {
					x.taken, x.takenRoute = append(x.taken, o...), route
				}
			case opc == opJMP && E.Kind == cfg.JumpTable:
				if (w>>21)&31 != regZero {
					return fmt.Sprintf("jump table jmp at %#x with a link register", pc)
				}
				if x.jump == nil {
					x.jump, x.jumpRoute = map[uint64][]pathOp{}, map[uint64]bool{}
				}
				t := p.Blocks[E.To].Start
				x.jump[t], x.jumpRoute[t] = o, route
			case opc == opBR || opc == opBSR:
				x.pre = append(x.pre, o...)
				x.brRoute = route
			case opc == opJMP && (w>>14)&3 == 2 && (w>>16)&31 == regRA && E.Kind == cfg.Return:
				for i := range o {
					o[i].ret = true
				}
				x.pre = append(x.pre, o...)
			default:
				if route {
					if isCall(w) || opc == opJMP || w == palCallsys {
						return fmt.Sprintf("a call or jump at %#x falls into an entry", pc)
					}
					x.afterRoute = true
				}
				x.pre = append(x.pre, o...)
			}
		}
	}
	return ""
}

func bodyLabel(pc uint64) string { return fmt.Sprintf("body_%x", pc) }

// pathStub emits a paths-mode stub.
func pathStub(a *asm, pt *point, l string, lay layout, spills *int) {
	x := pt.path
	w, pc := pt.word, pt.pc
	free := pt.free
	if pt.syscall {
		free |= syscallClobbered
	}
	k := 0
	ops := func(list []pathOp, free regSet, avoid regSet) {
		for _, o := range list {
			pathAction(a, o, free, avoid, fmt.Sprintf("%sa%d_", l, k), lay, spills)
			k++
		}
	}
	ops(x.pre, free, 0)
	a.label(bodyLabel(pc))
	goTo := func(t uint64, route bool) {
		if route {
			a.branchTo(opBR, regZero, bodyLabel(t))
		} else {
			a.branchAbs(opBR, regZero, t)
		}
	}
	switch opc := w >> 26; {
	case pt.syscall:
		syscallHook(a, pc, l, true)
	case condBranch(w) && (x.taken != nil || x.fall != nil || x.takenRoute || x.fallRoute):
		a.branchTo(opc, (w>>21)&31, l+"taken")
		ops(x.fall, free, 0)
		goTo(pc+4, x.fallRoute)
		a.label(l + "taken")
		ops(x.taken, free, 0)
		goTo(branchTarget(pc, w), x.takenRoute)
	case x.jump != nil:
		rb := (w >> 16) & 31
		ts := make([]uint64, 0, len(x.jump))
		for t := range x.jump {
			ts = append(ts, t)
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		for i, t := range ts {
			o := x.jump[t]
			next := fmt.Sprintf("%sj%d", l, i)
			regs, spilled := acquire(a, free, reg(rb), 1, spills)
			a.loadAddr(regs[0], t)
			a.emit(encOp(opINTA, 0x2d, rb, regs[0], regs[0])) // cmpeq
			a.branchTo(opBEQ, regs[0], next+"r")
			release(a, regs, spilled)
			ops(o, free, 0)
			goTo(t, x.jumpRoute[t])
			a.label(next + "r")
			release(a, regs, spilled)
		}
		displace(a, pc, w)
	case x.brRoute:
		if ra := (w >> 21) & 31; ra != regZero {
			a.loadAddr(ra, pc+4)
		}
		a.branchTo(opBR, regZero, bodyLabel(branchTarget(pc, w)))
	case x.afterRoute:
		a.emit(w)
		a.branchTo(opBR, regZero, bodyLabel(pc+4))
	default:
		displace(a, pc, w)
	}
}

// acquire returns n scratch registers outside avoid: dead ones if there
// are enough, else pushed on the stack (sp moves first: no red zone).
// release undoes a push; it may be emitted on several branches.
func acquire(a *asm, free, avoid regSet, n int, spills *int) ([]uint32, bool) {
	if regs, ok := pick(free&^avoid, n); ok {
		return regs, false
	}
	regs, _ := pick(allRegs&^avoid, n)
	*spills++
	a.emit(encMem(opLDA, regSP, regSP, int16(-8*n)))
	for i, r := range regs {
		a.emit(encMem(opSTQ, r, regSP, int16(8*i)))
	}
	return regs, true
}

func release(a *asm, regs []uint32, spilled bool) {
	if !spilled {
		return
	}
	for i, r := range regs {
		a.emit(encMem(opLDQ, r, regSP, int16(8*i)))
	}
	a.emit(encMem(opLDA, regSP, regSP, int16(8*len(regs))))
}

func pick(free regSet, n int) ([]uint32, bool) {
	free &^= neverScratch
	var out []uint32
	for r := uint32(0); r < 31 && len(out) < n; r++ {
		if free&(1<<r) != 0 {
			out = append(out, r)
		}
	}
	return out, len(out) == n
}

// addConst emits r += v (v within 32 bits) in two words.
func addConst(a *asm, r uint32, v int64, from uint32) {
	lo := int16(v)
	hi := int16((v - int64(lo)) >> 16)
	a.emit(encMem(opLDAH, r, from, hi))
	a.emit(encMem(opLDA, r, r, lo))
}

// bump increments the counter at off(x) using scratch t.
func bump(a *asm, x, t uint32, off int16) {
	a.emit(encMem(opLDQ, t, x, off))
	a.emit(encOpLit(opINTA, 0x20, t, 1, t))
	a.emit(encMem(opSTQ, t, x, off))
}

// pathAction emits one action. x holds the counters' address (the stack
// top pointer sits at topOff from it), y the top slot.
func pathAction(a *asm, o pathOp, free, avoid regSet, l string, lay layout, spills *int) {
	if o.cct != nil {
		if o.cct.kind == cctAdd {
			cctInlineAdd(a, o.cct, free, avoid, l, lay, spills)
			return
		}
		cctAction(a, o.cct)
		return
	}
	reads := o.metrics && o.kind != paths.Add // reads rpcc and rdpic
	n := 3
	if reads {
		n = 4 // Init pauses the caller's path with a fourth
	}
	if o.kind == paths.Count || o.kind == paths.Back {
		n = 4
		if o.hashed {
			n = 5
		}
		if o.metrics {
			n = 6
		}
	}
	if o.kind == paths.Init || o.ret {
		avoid |= reg(regRA) // read after the scratch registers are set
	}
	if reads {
		avoid |= picRegs // rdpic writes them
	}
	regs, spilled := acquire(a, free, avoid, n, spills)
	picSpilled := reads && acquirePIC(a, free, spills)
	x, y, z := regs[0], regs[1], regs[2]
	delta := int16(0)
	if spilled {
		delta = int16(8 * n)
	}
	if picSpilled {
		delta += 16
	}
	ss := o.slot()
	a.loadAddr(x, lay.countersAddr)
	a.emit(encMem(opLDQ, y, x, topOff))
	switch o.kind {
	case paths.Init:
		// Pop the slots of activations that are gone (entry sp below ours).
		a.label(l + "loop")
		a.emit(encMem(opLDQ, z, y, 8))
		a.emit(encOp(opINTL, 0x28, regZero, z, z)) // ornot: z = slot's entry sp
		a.emit(encMem(opLDA, z, z, -delta))
		a.emit(encOp(opINTA, 0x1d, z, regSP, z)) // cmpult z, sp
		a.branchTo(opBEQ, z, l+"push")
		a.emit(encMem(opLDA, y, y, -ss))
		bump(a, x, z, 8*cLost)
		markResync(a, y, z, l+"m")
		a.branchTo(opBR, regZero, l+"loop")
		a.label(l + "push")
		a.loadAddr(z, lay.stackLast)
		a.emit(encOp(opINTA, 0x1d, y, z, z)) // y < last slot
		a.branchTo(opBNE, z, l+"room")
		bump(a, x, z, 8*cOverflow)
		a.branchTo(opBR, regZero, l+"done")
		a.label(l + "room")
		a.emit(encMem(opLDA, y, y, ss))
		a.emit(encMem(opSTQ, y, x, topOff))
		addConst(a, z, o.start, regZero)
		a.emit(encMem(opSTQ, z, y, 0))
		a.emit(encMem(opLDA, z, regSP, delta))
		a.emit(encOp(opINTL, 0x28, regZero, z, z))
		a.emit(encMem(opSTQ, z, y, 8))
		addConst(a, z, int64(o.id), regZero)
		a.emit(encMem(opSTQ, z, y, 16))
		a.emit(encMem(opSTQ, regRA, y, 24))
		if o.metrics {
			enterMetrics(a, y, z, regs[3], ss)
		}
	case paths.Add:
		a.emit(encMem(opLDQ, z, y, 0))
		addConst(a, z, o.add, z)
		a.emit(encMem(opSTQ, z, y, 0))
	case paths.Count, paths.Back:
		t := regs[3]
		// Find this activation's slot: pop the slots of activations that
		// are gone (entry sp below ours, or at ours and another
		// procedure's: a longjmp skipped their exits), counting each as
		// lost. A slot found after pops, or marked by an Init's pops, is
		// the activation a longjmp landed in: its r is unknown, so its
		// path is not counted (lost); a Back starts the next path afresh.
		a.emit(encOp(opINTL, 0x20, regZero, regZero, t)) // t = 0: nothing popped
		a.label(l + "find")
		a.emit(encMem(opLDQ, z, y, 8))
		a.emit(encOp(opINTL, 0x28, regZero, z, z))
		a.emit(encMem(opLDA, z, z, -delta))
		a.emit(encOp(opINTA, 0x1d, z, regSP, z)) // slot's sp < ours
		a.branchTo(opBNE, z, l+"stale")
		a.emit(encMem(opLDQ, z, y, 16))
		addConst(a, z, -int64(o.id), z)
		a.branchTo(opBEQ, z, l+"found")
		a.emit(encMem(opLDQ, z, y, 16))
		addConst(a, z, int64(o.id), z)
		a.branchTo(opBEQ, z, l+"marked")
		a.emit(encMem(opLDQ, z, y, 8))
		a.emit(encOp(opINTL, 0x28, regZero, z, z))
		a.emit(encMem(opLDA, z, z, -delta))
		a.emit(encOp(opINTA, 0x2d, z, regSP, z)) // cmpeq: at our sp, another procedure's
		a.branchTo(opBEQ, z, l+"unmatched")
		a.label(l + "stale")
		a.emit(encMem(opLDA, y, y, -ss))
		bump(a, x, z, 8*cLost)
		a.emit(encMem(opLDA, t, regZero, 1))
		a.branchTo(opBR, regZero, l+"find")
		a.label(l + "marked")
		a.emit(encMem(opLDA, t, regZero, 1))
		a.label(l + "found")
		a.emit(encMem(opSTQ, y, x, topOff))
		a.branchTo(opBEQ, t, l+"live")
		bump(a, x, z, 8*cLost)
		if o.kind == paths.Count {
			a.emit(encMem(opLDA, y, y, -ss))
			a.emit(encMem(opSTQ, y, x, topOff))
			if o.metrics {
				a.emit(rpcc(regs[4]))
				a.emit(PalRDPIC)
				resumeMetrics(a, y, regs[5], func(off int16) uint32 { return [3]uint32{regs[4], 0, 1}[(off-slotCycles)/8] })
			}
		} else {
			addConst(a, t, o.start, regZero)
			a.emit(encMem(opSTQ, t, y, 0))
			addConst(a, t, int64(o.id), regZero)
			a.emit(encMem(opSTQ, t, y, 16))
			if o.metrics {
				startMetrics(a, y, z) // the next path starts now
			}
		}
		a.branchTo(opBR, regZero, l+"done")
		a.label(l + "live")
		if o.ret {
			a.emit(encMem(opLDQ, z, y, 24))
			a.emit(encOp(opINTA, 0x29, z, regRA, z)) // subq
			a.branchTo(opBEQ, z, l+"home")
			a.emit(encMem(opLDA, y, y, -ss))
			markResync(a, y, z, l+"m")
			a.emit(encMem(opLDA, y, y, ss))
			a.label(l + "home")
		}
		if o.metrics {
			endMetrics(a, y, regs[4], regs[5])
		}
		a.emit(encMem(opLDQ, z, y, 0))
		addConst(a, z, o.add, z)
		if o.kind == paths.Count {
			a.emit(encMem(opLDA, y, y, -ss))
			a.emit(encMem(opSTQ, y, x, topOff))
			if o.metrics {
				// endMetrics left the values read in the popped slot.
				resumeMetrics(a, y, regs[5], func(off int16) uint32 {
					a.emit(encMem(opLDQ, t, y, ss+off))
					return t
				})
			}
		} else {
			addConst(a, t, o.start, regZero)
			a.emit(encMem(opSTQ, t, y, 0))
		}
		if o.np < math.MaxInt32-(1<<15) {
			addConst(a, t, int64(o.np), regZero)
			a.emit(encOp(opINTA, 0x1d, z, t, t)) // cmpult: 0 <= id < np
			a.branchTo(opBEQ, t, l+"range")
		} // else the reader checks the IDs it finds in the table
		switch {
		case o.hashed && o.metrics:
			hashCount(a, o, x, y, z, t, regs[5], l, regs[4])
		case o.hashed:
			hashCount(a, o, x, y, z, t, regs[4], l)
		case o.metrics:
			addConst(a, t, int64(8*o.base), x)
			a.emit(encOpLit(0x12, 0x39, z, 5, regs[5])) // sll: pathWords counters a path
			a.emit(encOp(opINTA, 0x20, t, regs[5], t))  // addq
			bump(a, t, z, 0)
			addMetrics(a, t, z, regs[4], 0)
		default:
			addConst(a, t, int64(8*o.base), x)
			a.emit(encOp(opINTA, 0x32, z, t, t)) // s8addq
			bump(a, t, z, 0)
		}
		a.branchTo(opBR, regZero, l+"done")
		a.label(l + "range")
		bump(a, x, z, 8*cRange)
		a.branchTo(opBR, regZero, l+"done")
		a.label(l + "unmatched")
		// Not ours (__longjmp's ret runs on the sp it restored, so its own
		// slot and its caller's look gone): the stale slots popped on the
		// way stay popped, and the survivor was landed on.
		a.emit(encMem(opSTQ, y, x, topOff))
		a.branchTo(opBEQ, t, l+"um")
		markResync(a, y, z, l+"m2")
		a.label(l + "um")
		bump(a, x, z, 8*cUnmatched)
	}
	a.label(l + "done")
	if picSpilled {
		releasePIC(a)
	}
	release(a, regs, spilled)
}

// PathCounts are a paths-mode dump read back: the path profile (the same
// type and encoding analysis/oracle writes) and the special counters.
type PathCounts struct {
	Manifest *Manifest
	Records  int
	Profile  *paths.Profile
	// Special holds the named counters (PathSpecialCounters), summed.
	Special map[string]uint64
	// HashOverflow counts, by procedure, the paths that found the
	// procedure's hash table full (not in Profile).
	HashOverflow map[string]uint64
}

// ProfileSource is the source of a path profile read from an
// instrumented program's dump: a measurement, unlike the oracle's.
const ProfileSource = "dcpi-pp-instrument"

// ReadPaths reads a paths-mode dump with the instrumented image that
// wrote it.
func ReadPaths(instrumented, dump []byte) (*PathCounts, error) {
	m, recs, sum, err := readSummed(instrumented, dump, ModePaths, "")
	if err != nil {
		return nil, err
	}
	if len(m.Special) > len(sum) {
		return nil, fmt.Errorf("manifest: %d special counters, %d counters", len(m.Special), len(sum))
	}
	pc := &PathCounts{Manifest: m, Records: len(recs), Special: map[string]uint64{}, HashOverflow: map[string]uint64{}}
	for i, name := range m.Special {
		pc.Special[name] = sum[i]
	}
	id := m.OriginalID
	if id == "" {
		id = "sha256:" + m.Original
	}
	im := paths.ImageProfile{ID: id}
	nm := len(m.Metrics) // metrics per path
	if nm != 0 && nm != pathWords-1 {
		return nil, fmt.Errorf("manifest: %d metrics, want %d", nm, pathWords-1)
	}
	words, hw := 1, hashWords(nm > 0)
	if nm > 0 {
		words = pathWords
	}
	if m.HashSlots < 0 || m.HashSlots > 1<<24 || m.HashSlots > 0 && (m.HashBase < len(m.Special) || m.HashBase+1+hw*m.HashSlots > len(sum)) {
		return nil, fmt.Errorf("manifest: hash table out of range")
	}
	// The hash table: each record's is its own (slots differ between
	// processes), so it is read record by record.
	hashed := map[int]map[uint64][]uint64{} // procedure ID -> path ID -> count, metrics
	for _, r := range recs {
		if m.HashSlots == 0 {
			break
		}
		t := r.Counters[m.HashBase+1:]
		for k := range m.HashSlots {
			e := t[hw*k : hw*(k+1)]
			key, proc := e[0], e[1]
			if key == 0 {
				continue
			}
			if hashed[int(proc)] == nil {
				hashed[int(proc)] = map[uint64][]uint64{}
			}
			acc := hashed[int(proc)][key-1]
			if acc == nil {
				acc = make([]uint64, 1+nm)
				hashed[int(proc)][key-1] = acc
			}
			for i, v := range e[2:] {
				acc[i] += v
			}
		}
	}
	for _, p := range m.Procs {
		size := p.NumPaths
		if p.Hashed {
			size = 1
		} else if size > uint64(len(sum)) {
			return nil, fmt.Errorf("manifest: procedure %s: path counters out of range", p.Name)
		} else {
			size *= uint64(words)
		}
		if p.NumPaths == 0 || p.PathBase < len(m.Special) || size > uint64(len(sum)) || uint64(p.PathBase)+size > uint64(len(sum)) {
			return nil, fmt.Errorf("manifest: procedure %s: path counters out of range", p.Name)
		}
		pp := paths.ProcProfile{Entry: p.Start, Name: p.Name, NumPaths: p.NumPaths}
		if p.Hashed {
			if v := sum[p.PathBase]; v > 0 {
				pc.HashOverflow[p.Name] = v
			}
			for id, acc := range hashed[p.ID] {
				if id >= p.NumPaths {
					pc.Special[PathSpecialCounters[cRange]] += acc[0]
					continue
				}
				pp.Paths = append(pp.Paths, paths.PathCount{ID: id, Count: acc[0], Metrics: acc[1:]})
			}
		} else {
			for k := range p.NumPaths {
				c := sum[p.PathBase+words*int(k):][:words]
				if c[0] > 0 {
					pp.Paths = append(pp.Paths, paths.PathCount{ID: k, Count: c[0], Metrics: append([]uint64{}, c[1:]...)})
				}
			}
		}
		if len(pp.Paths) > 0 {
			im.Procs = append(im.Procs, pp)
		}
	}
	metrics := append([]string{}, m.Metrics...)
	pc.Profile = &paths.Profile{Source: ProfileSource, Metrics: metrics, Images: []paths.ImageProfile{im}}
	pc.Profile.Sort()
	if err := pc.Profile.Validate(); err != nil {
		return nil, err
	}
	return pc, nil
}

// hashCount counts path z (x: the counters) in the shared hash table:
// linear probing from (ID+1 + procedure*hashMul) mod HashSlots for the
// key (ID+1, procedure) or an empty slot; a new key that would fill the
// last empty slot goes to the procedure's overflow counter instead.
//
// With metrics (m: the register holding the path's cycles; its events are
// in v0 and t0) a slot is six counters, the path's metrics after its
// count.
func hashCount(a *asm, o pathOp, x, y, z, t, u uint32, l string, m ...uint32) {
	const sll, srl, s8addq, subq, addq = 0x39, 0x34, 0x32, 0x29, 0x20
	wrap := func() { // t mod HashSlots
		a.emit(encOpLit(0x12, sll, t, 64-hashBits, t))
		a.emit(encOpLit(0x12, srl, t, 64-hashBits, t))
	}
	addConst(a, y, int64(8*o.hashBase), x) // y = the table; 0(y) = slots used
	a.emit(encMem(opLDA, z, z, 1))         // z = key
	addConst(a, t, int64(o.id)*hashMul, z)
	wrap()
	a.label(l + "probe")
	a.emit(encOpLit(0x12, sll, t, 4, u))
	a.emit(encOp(opINTA, s8addq, t, u, u)) // u = 24*slot
	if len(m) > 0 {
		a.emit(encOp(opINTA, addq, u, u, u)) // 48*slot
	}
	a.emit(encOp(opINTA, addq, u, y, u)) // the slot is 8(u), 16(u), 24(u)
	a.emit(encMem(opLDQ, x, u, 8))
	a.emit(encOp(opINTA, subq, x, z, x))
	a.branchTo(opBNE, x, l+"miss")
	a.emit(encMem(opLDQ, x, u, 16))
	addConst(a, x, -int64(o.id), x)
	a.branchTo(opBEQ, x, l+"hit")
	a.label(l + "miss")
	a.emit(encMem(opLDQ, x, u, 8))
	a.branchTo(opBEQ, x, l+"empty")
	a.emit(encOpLit(opINTA, addq, t, 1, t))
	wrap()
	a.branchTo(opBR, regZero, l+"probe")
	a.label(l + "empty")
	a.emit(encMem(opLDQ, x, y, 0))
	a.emit(encMem(opLDA, x, x, 1))
	a.emit(encMem(opLDA, t, x, -(HashSlots - 1)))
	a.branchTo(opBGT, t, l+"full")
	a.emit(encMem(opSTQ, x, y, 0))
	a.emit(encMem(opSTQ, z, u, 8))
	addConst(a, x, int64(o.id), regZero)
	a.emit(encMem(opSTQ, x, u, 16))
	a.label(l + "hit")
	bump(a, u, x, 24)
	if len(m) > 0 {
		addMetrics(a, u, x, m[0], 24)
	}
	a.branchTo(opBR, regZero, l+"done")
	a.label(l + "full")
	addConst(a, y, int64(8*(o.base-o.hashBase)), y)
	bump(a, y, x, 0)
}

// markResync marks the slot at y (unless the sentinel or marked already)
// as an activation a longjmp may have landed in: its procedure ID is
// negated, so its next Count or Back counts nothing and restarts.
func markResync(a *asm, y, z uint32, l string) {
	a.emit(encMem(opLDQ, z, y, 16))
	a.branchTo(0x3b, z, l+"skip") // ble
	a.emit(encOp(opINTA, 0x29, regZero, z, z))
	a.emit(encMem(opSTQ, z, y, 16))
	a.label(l + "skip")
}
