package instrument

import (
	"encoding/binary"
	"fmt"

	"dcpi/analysis/cfg"
	"dcpi/analysis/paths"
)

// The CCT mode (PLDI'97 sec. 4) builds the calling context tree at run
// time in the instrumented program, as the paper's call records:
//
//   - a record per context: a header word (size<<2 | 1), the procedure's
//     ID (its start address), the parent record, NM metric accumulators
//     ("calls"; with metrics also "cycles" and two rdpic events, the
//     record's own: see cctRuntime), then one callee slot per call site
//     of the procedure (its cfg.Proc.Calls, in address order);
//   - a slot is tagged in its low two bits, as the paper's: 1 is
//     uninitialised (the address of the record holding the slot, tag 1),
//     0 a pointer to the one callee record seen there, 2 a pointer to a
//     callee list; list nodes are {header (24<<2 | 2), callee record,
//     next}, the last next being the holding record's address with tag 1.
//     An indirect call site (jsr) gets a list from its first callee; a
//     direct one gets a list when a second procedure arrives through it
//     (a tail call out of the callee). Found callees move to the list's
//     front;
//   - gCSP, the callee slot pointer, lives in memory in the added
//     segment (Alpha has no register to spare): a call site sets it to
//     its slot in the current record (bit 2 set for an indirect site);
//   - a procedure entry reads the slot gCSP points to: a record of this
//     procedure is the context; otherwise it searches the ancestors of the
//     caller's record for this procedure (recursion folds into the
//     ancestor, which goes into the slot as a backedge), else allocates a
//     record under the caller's. It then pushes an activation {saved
//     gCSP, entry sp, procedure, record} on a per-process activation
//     stack (the paper saves gCSP on the machine stack and keeps lCRP in
//     a register; Alpha has no register for lCRP and the program's frames
//     are not ours to grow) and counts a call in the record; with
//     metrics an activation also holds the counters' values when its
//     record last began to be charged;
//   - an exit (return, tail call, branch out, fall-out) restores gCSP
//     from its activation and pops it. Activations a longjmp skipped
//     (entry sp below the current sp) are popped as "lost" wherever the
//     stack is next used; an exit that finds no activation of its
//     procedure counts "unmatched";
//   - records and list nodes are bump-allocated in a heap of chunks: the
//     first in the segment's bss, more mapped with mmap through callsys
//     when it is full ("demand-grown"); each chunk opens with a header
//     {16<<2 | 3, its own address}. A heap that cannot grow counts
//     "heap_exhausted" and charges the context to its caller's record;
//   - the dump is one writev of the record header, the named counters and
//     every chunk's used bytes; a fork's child zeroes the metrics (its
//     records are copies of the parent's, whose counts the parent dumps);
//     a failed execve, which dumped, does the same.
//
// The root record T (procedure 0, one slot) stands for the kernel's entry
// into the program and accumulates nothing.

// CCTSpecialCounters name the named counters that open a CCT-mode record.
var CCTSpecialCounters = []string{"lost", "unmatched", "stack_overflow", "heap_exhausted"}

// CCTMetrics are the metrics each call record accumulates, in order,
// without --metrics. With it (cctMetricNames) the record also
// accumulates its own cycles and two rdpic events (callees excluded; see
// "Hardware metrics per context" below).
var CCTMetrics = []string{"calls"}

// cctSpecials returns a CCT-mode manifest's named counters: with paths
// (Context+Flow) also "out_of_range", a path sum outside 0..NumPaths-1.
func cctSpecials(opt Options) []string {
	if !opt.CCTPaths {
		return CCTSpecialCounters
	}
	return append(append([]string{}, CCTSpecialCounters...), "out_of_range")
}

// CCTMaxArrayPaths bounds the paths of a procedure whose call records
// count them in an array (one counter per path, in the record); a
// procedure with more keeps, in each record, the head of a list of
// {path ID, count} nodes allocated on the heap as its paths first run.
const CCTMaxArrayPaths = 64

// cctMetricNames returns a CCT-mode manifest's record metrics: calls, and
// with opt.Metrics cycles and the two events rdpic is expected to count.
func cctMetricNames(opt Options) []string {
	if !opt.Metrics {
		return CCTMetrics
	}
	return append(append([]string{}, CCTMetrics...), metricNames(opt.PIC)...)
}

const (
	modeCCT = 3
	// Default heap chunk sizes: the first lies in the segment's bss, the
	// rest are mapped as needed.
	defaultCCTFirstChunk = 256 << 10
	defaultCCTGrowChunk  = 1 << 20
	// cctMaxChunks bounds the chunks (and the writev's iovecs, with the
	// header's): Linux's UIO_MAXIOV.
	cctMaxChunks = 1023

	cctRecordHead = 24 // header, ID, parent
	cctListNode   = 24
	kindRecord    = 1
	kindList      = 2
	kindChunk     = 3
	chunkHead     = 16
	tagUninit     = 1
	tagList       = 2
	indirectBit   = 4

	// Offsets of the globals (from lay.cct.globals).
	gCSP    = 0
	gTop    = 8
	gNext   = 16
	gLimit  = 24
	gChunks = 32 // iovecs in use (the header's and the chunks')
	gIOV    = 64 // the iovec array, 16 bytes each
	// Activation slot fields.
	actGCSP = 0
	actSP   = 8 // complemented: the zero sentinel never looks stale
	actID   = 16
	actRec  = 24
	// With metrics, the activation's start values: what rpcc and rdpic
	// read when its record last began to be charged.
	actCyc = 32
	actP0  = 40
	actP1  = 48
	// cctMetricsSlot is an activation slot's size with metrics.
	cctMetricsSlot = 64
	// Offsets in a call record of the metrics after calls.
	recCycles = cctRecordHead + 8
	recPIC0   = cctRecordHead + 16
)

// cctActSlot is an activation slot's size for records of nm metrics,
// with or without paths.
func cctActSlot(nm int, withPaths bool) uint64 {
	if nm > 1 || withPaths {
		return cctMetricsSlot
	}
	return slotSize
}

const (
	cLostCCT = iota
	cUnmatchedCCT
	cOverflowCCT
	cHeapCCT
	cRangeCCT // with paths only
)

// With paths (Context+Flow) an activation also holds its path register
// r, and a record has, after its metrics, the number P of its path words
// and, after its callee slots, P path words: NumPaths counters, or the
// head of its path list (0: empty). A path list node is {header
// (32<<2 | 2), path ID, count, next (0 ends)}.
const (
	actR         = 56
	cctPathNode  = 32
	pathListFlag = 1 // in a path op's offset operand: the record keeps a list
	// resyncMark is the r of an activation a longjmp landed in (the
	// survivor of stale pops): its path is unknown, so its next Count
	// counts nothing (lost) and its next Back restarts.
	resyncMarkShift = 62
)

// cctLayout places the CCT runtime's data.
type cctLayout struct {
	globals, root, chunkEnd, stackBase, stackLast uint64
	grow                                          uint64
	slot                                          uint64 // an activation slot's bytes
}

type cctKind int

const (
	cctEnter cctKind = iota + 1
	cctExit
	cctCall
	cctAdd  // paths: r += add
	cctBack // paths: count r+add, r = start
)

// cctOp is one CCT action in a stub.
type cctOp struct {
	kind   cctKind
	id     uint64 // the procedure's start address
	size   uint64 // enter: the record's bytes
	nslots uint64 // enter: its call sites
	slot   uint64 // call: the slot's offset in the record | indirectBit
	// With paths (Context+Flow): enter's r = start and the record's path
	// words; a counting exit's or back's path sum r+add, NumPaths and the
	// path words' offset in the record (| pathListFlag).
	withPaths  bool // the mode has paths: enter takes start and pwords
	counts     bool // exit: counts a path
	add, start int64
	pwords     uint64
	np         uint64
	poff       uint64
}

// cctMutation makes the planner instrument wrongly, for the tests that
// show the oracle comparison catches it: cctOmitIndirect leaves out the
// indirect call sites' actions, cctOneSlot sends every call site of a
// procedure to its first slot.
var cctMutation int

const (
	cctOmitIndirect = iota + 1
	cctOneSlot
	cctWrongAdd // paths: every Add adds one more
)

// cctSlotOffset is the offset of callee slot k in a record of nm metrics.
func cctSlotOffset(nm, k int) uint64 { return cctRecordHead + 8*uint64(nm) + 8*uint64(k) }

// planCCT plans the CCT mode: an enter action at every entry, an exit
// action on every edge to Exit, a call action at every call site. The
// entries and exits are placed by the paths mode's planner (pathsmode.go)
// from a stand-in numbering whose Init actions are the entries and whose
// Count actions are the exits, so internal edges into an entry block are
// routed past its enter action exactly as the paths mode routes them past
// Init.
func planCCT(procs []*cfg.Proc, opt Options) (*planned, error) {
	grow := uint64(opt.CCTChunkBytes)
	if grow == 0 {
		grow = defaultCCTGrowChunk
	}
	pl := &planned{points: map[uint64]*point{}, manifest: &Manifest{Version: ManifestVersion, Mode: opt.Mode, DumpPath: opt.DumpPath,
		Special: cctSpecials(opt), CCTMetrics: cctMetricNames(opt), CCTPaths: opt.CCTPaths}}
	m := pl.manifest
	hw := cctHeadWords(m)
	m.Counters = len(m.Special)
	for _, p := range procs {
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
			local[pc] = pt
			return pt
		}
		for bi := range p.Blocks {
			b := &p.Blocks[bi]
			if !b.Reachable {
				continue
			}
			for pc := b.Start; pc < b.End; pc += 4 {
				if p.Insns[(pc-p.Start)/4].Word == palCallsys {
					pt := at(pc)
					pt.syscall = true
					pt.path = &pathPoint{}
				}
			}
		}
		skip, np, list := cctPlanProc(p, at, grow, hw, opt.CCTPaths)
		if skip != "" {
			if opt.Strict {
				return nil, refuse("procedure %s: %s", p.Name, skip)
			}
			m.Skipped = append(m.Skipped, Skip{Name: p.Name, Reason: skip})
			for pc, pt := range local {
				if pt.syscall {
					pt.path = &pathPoint{}
				} else {
					delete(local, pc)
				}
			}
		} else {
			pi := ProcInfo{Name: p.Name, Start: p.Start, End: p.End, CallSites: []uint64{}, NumPaths: np, Hashed: list}
			for _, c := range p.Calls {
				pi.CallSites = append(pi.CallSites, c.PC)
			}
			m.Procs = append(m.Procs, pi)
		}
		for pc, pt := range local {
			pl.points[pc] = pt
		}
	}
	hooked := false
	for _, pt := range pl.points {
		hooked = hooked || pt.syscall
	}
	if !hooked {
		return nil, refuse("no system call found to hook the exit path (exit_group) on")
	}
	return pl, nil
}

// cctHeadWords is the number of a record's words between its parent and
// its first callee slot: its metrics, and with paths its path words' count.
func cctHeadWords(m *Manifest) int {
	if m.CCTPaths {
		return len(m.CCTMetrics) + 1
	}
	return len(m.CCTMetrics)
}

// cctPlanProc places p's actions; it returns why p cannot be
// instrumented, or "", and with paths the NumPaths of the numbering its
// records count (0: its paths are not counted) and whether they count
// them in a list.
func cctPlanProc(p *cfg.Proc, at func(uint64) *point, grow uint64, hw int, withPaths bool) (why string, np uint64, list bool) {
	if p.MissingEdges {
		for _, j := range p.Jumps {
			if !j.Resolved {
				return fmt.Sprintf("indirect jump at %#x the CFG cannot resolve (%s)", j.PC, j.Note), 0, false
			}
		}
		return "indirect jump the CFG cannot resolve", 0, false
	}
	size := cctSlotOffset(hw, len(p.Calls))
	if size > grow-16 {
		return fmt.Sprintf("%d call sites: its record would not fit a heap chunk", len(p.Calls)), 0, false
	}
	// With paths, the Ball-Larus numbering, if it can be placed (a dry
	// run on scratch points); else the stand-in numbering, entries Init,
	// exits Count, one path, whose records count no paths.
	var n *paths.Numbering
	pwords := uint64(0)
	if withPaths {
		if num, err := paths.Number(p); err == nil {
			scratch := map[uint64]*point{}
			dry := func(pc uint64) *point {
				if pt := scratch[pc]; pt != nil {
					return pt
				}
				pt := &point{pc: pc, word: p.Insns[(pc-p.Start)/4].Word, blockCounter: -1}
				scratch[pc] = pt
				return pt
			}
			if planProcPaths(p, num, dry, 1, 0, false, false) == "" {
				n, np = num, num.NumPaths
				pwords = np
				if np > CCTMaxArrayPaths || size+8*np > grow-16 {
					pwords, list = 1, true
				}
			}
		}
	}
	if n == nil {
		n = &paths.Numbering{Proc: p, NumPaths: 1, Actions: make([]paths.Action, len(p.Edges))}
		for e, E := range p.Edges {
			switch {
			case E.From == p.Entry():
				n.Actions[e] = paths.Action{Kind: paths.Init}
			case E.To == p.Exit():
				n.Actions[e] = paths.Action{Kind: paths.Count}
			}
		}
	}
	poff := size
	if list {
		poff |= pathListFlag
	}
	size += 8 * pwords
	if why := planProcPaths(p, n, at, 1, 0, false, false); why != "" {
		return why, 0, false
	}
	locked := lockWindows(p)
	for k, c := range p.Calls {
		b := &p.Blocks[c.Block]
		if !b.Reachable {
			continue
		}
		w := p.Insns[(c.PC-p.Start)/4].Word
		if locked[c.PC] {
			return fmt.Sprintf("call at %#x inside a locked (ldx_l/stx_c) sequence", c.PC), 0, false
		}
		if !displaceable(w) {
			return fmt.Sprintf("call at %#x is a jsr whose link is its target register", c.PC), 0, false
		}
		if c.Indirect && cctMutation == cctOmitIndirect {
			continue
		}
		if cctMutation == cctOneSlot {
			k = 0
		}
		slot := cctSlotOffset(hw, k)
		if c.Indirect {
			slot |= indirectBit
		}
		pt := at(c.PC)
		if pt.path == nil {
			pt.path = &pathPoint{}
		}
		pt.path.pre = append(pt.path.pre, pathOp{cct: &cctOp{kind: cctCall, id: p.Start, slot: slot}})
	}
	// The stand-in actions become enter and exit actions.
	conv := func(list []pathOp) {
		for i := range list {
			o := &list[i]
			if o.cct != nil {
				continue
			}
			counted := np > 0
			switch o.kind {
			case paths.Init:
				o.cct = &cctOp{kind: cctEnter, id: p.Start, size: size, nslots: uint64(len(p.Calls)), withPaths: withPaths, start: o.start, pwords: pwords}
			case paths.Count:
				o.cct = &cctOp{kind: cctExit, id: p.Start, counts: counted, add: o.add, np: np, poff: poff}
			case paths.Back:
				o.cct = &cctOp{kind: cctBack, id: p.Start, add: o.add, start: o.start, np: np, poff: poff}
			case paths.Add:
				add := o.add
				if cctMutation == cctWrongAdd {
					add++
				}
				o.cct = &cctOp{kind: cctAdd, id: p.Start, add: add}
			}
		}
	}
	for bi := range p.Blocks {
		b := &p.Blocks[bi]
		for pc := b.Start; pc < b.End; pc += 4 {
			pt := at(pc)
			if pt.path == nil {
				continue
			}
			conv(pt.path.pre)
			conv(pt.path.taken)
			conv(pt.path.fall)
			for _, l := range pt.path.jump {
				conv(l)
			}
		}
	}
	return "", np, list
}

// cctAction emits a stub's call of the runtime routine for o (an Add is
// cctInlineAdd's): t11 pushed
// (the routines save every other register they touch), bsr t11, the
// operands inline as 8-byte-aligned quadwords the routine skips on its
// way back, t11 popped.
func cctAction(a *asm, o *cctOp) {
	a.emit(encMem(opLDA, regSP, regSP, -16))
	a.emit(encMem(opSTQ, regT11, regSP, 0))
	if (a.pc()+4)%8 != 0 {
		a.emit(nop)
	}
	var data []uint64
	switch o.kind {
	case cctEnter:
		a.branchTo(opBSR, regT11, "rt_cct_enter")
		data = []uint64{o.id, o.size, o.nslots}
		if o.withPaths {
			data = append(data, uint64(o.start), o.pwords)
		}
	case cctExit:
		if o.counts {
			a.branchTo(opBSR, regT11, "rt_cct_exitp")
			data = []uint64{o.id, uint64(o.add), 0, o.np, o.poff}
		} else {
			a.branchTo(opBSR, regT11, "rt_cct_exit")
			data = []uint64{o.id}
		}
	case cctBack:
		a.branchTo(opBSR, regT11, "rt_cct_back")
		data = []uint64{o.id, uint64(o.add), uint64(o.start), o.np, o.poff}
	case cctCall:
		a.branchTo(opBSR, regT11, "rt_cct_call")
		data = []uint64{o.slot, o.id}
	}
	for _, d := range data {
		a.emit(uint32(d))
		a.emit(uint32(d >> 32))
	}
	a.emit(encMem(opLDQ, regT11, regSP, 0))
	a.emit(encMem(opLDA, regSP, regSP, 16))
}

// cctInlineAdd emits a Context+Flow Add inline, as the paths mode's:
// r += add in the top activation if it is the procedure's (a context
// whose push overflowed the stack is not), with three scratch registers.
func cctInlineAdd(a *asm, o *cctOp, free, avoid regSet, l string, lay layout, spills *int) {
	regs, spilled := acquire(a, free, avoid, 3, spills)
	x, y, z := regs[0], regs[1], regs[2]
	a.loadAddr(x, lay.cct.globals)
	a.emit(encMem(opLDQ, y, x, gTop))
	a.emit(encMem(opLDQ, z, y, actID))
	a.loadAddr(x, o.id)
	a.emit(encOp(opINTA, 0x29, z, x, z)) // subq
	a.branchTo(opBNE, z, l+"addout")
	a.emit(encMem(opLDQ, z, y, actR))
	addConst(a, z, o.add, z)
	a.emit(encMem(opSTQ, z, y, actR))
	a.label(l + "addout")
	release(a, regs, spilled)
}

const nop = opINTL<<26 | regZero<<21 | regZero<<16 | 0x20<<5 | regZero // bis zero,zero,zero

// Registers of the CCT routines.
const (
	rZ = 0  // v0: the allocator's scratch
	rX = 1  // the globals
	rY = 2  // the activation stack's top slot
	rS = 3  // the program's sp
	rV = 4  // a slot's value, a list node
	rR = 5  // the context's record
	rC = 6  // the caller's record
	rT = 7  // scratch
	rU = 8  // the slot gCSP points to
	rI = 22 // the procedure's ID
	rW = 23 // scratch; the allocator's size
	rL = 24 // the allocator's link
	rD = regT11
)

type cctEmitter struct {
	a   *asm
	lay layout
	// metrics: records carry cycles and two events, activations their
	// start values (slot bytes each).
	metrics bool
	slot    int
	// paths: activations carry r, records their path words (Context+Flow).
	paths bool
	// nspec: the named counters before the globals.
	nspec int
}

func (e cctEmitter) ldq(ra, rb uint32, d int) { e.a.emit(encMem(opLDQ, ra, rb, int16(d))) }
func (e cctEmitter) stq(ra, rb uint32, d int) { e.a.emit(encMem(opSTQ, ra, rb, int16(d))) }
func (e cctEmitter) lda(ra, rb uint32, d int) { e.a.emit(encMem(opLDA, ra, rb, int16(d))) }
func (e cctEmitter) op(fn, ra, rb, rc uint32) { e.a.emit(encOp(opINTA, fn, ra, rb, rc)) }
func (e cctEmitter) opl(fn, ra, rb, rc uint32) {
	e.a.emit(encOp(opINTL, fn, ra, rb, rc))
}
func (e cctEmitter) lit(opc, fn, ra, l, rc uint32) { e.a.emit(encOpLit(opc, fn, ra, l, rc)) }
func (e cctEmitter) mov(from, to uint32)           { e.opl(0x20, regZero, from, to) }
func (e cctEmitter) br(opc, ra uint32, l string)   { e.a.branchTo(opc, ra, l) }

// bump adds one to named counter c (t: scratch; x: the globals).
func (e cctEmitter) bump(c int, x, t uint32) {
	off := 8 * (c - e.nspec)
	e.ldq(t, x, off)
	e.lit(opINTA, 0x20, t, 1, t)
	e.stq(t, x, off)
}

func (e cctEmitter) save(regs []uint32, frame int) {
	e.lda(regSP, regSP, -frame)
	for i, r := range regs {
		e.stq(r, regSP, 8*i)
	}
}

func (e cctEmitter) restore(regs []uint32, frame int) {
	for i, r := range regs {
		e.ldq(r, regSP, 8*i)
	}
	e.lda(regSP, regSP, frame)
}

// popStale pops the activations that are gone at the program's sp S:
// entry sp below S, and with strict also at S and of another procedure
// than I's (a longjmp skipped their exits), counting each as lost.
// Leaves the top slot in Y and stores it.
func (e cctEmitter) popStale(l string, strict bool, id uint32) {
	e.ldq(rY, rX, gTop)
	e.a.label(l + "pop")
	e.ldq(rT, rY, actSP)
	e.opl(0x28, regZero, rT, rT) // ornot: the slot's entry sp
	e.op(0x1d, rT, rS, rT)       // cmpult: below ours
	e.br(opBNE, rT, l+"stale")
	if strict {
		e.ldq(rT, rY, actSP)
		e.opl(0x28, regZero, rT, rT)
		e.op(0x2d, rT, rS, rT) // cmpeq
		e.br(opBEQ, rT, l+"popped")
		e.ldq(rT, rY, actID)
		e.op(0x2d, rT, id, rT)
		e.br(opBNE, rT, l+"popped")
	} else {
		e.br(opBR, regZero, l+"popped")
	}
	e.a.label(l + "stale")
	if e.metrics {
		// The survivor goes on from the popped activation's start: what
		// ran since is charged to it at the next read.
		for _, off := range []int{actCyc, actP0, actP1} {
			e.ldq(rT, rY, off)
			e.stq(rT, rY, off-e.slot)
		}
	}
	e.lda(rY, rY, -e.slot)
	e.bump(cLostCCT, rX, rT)
	if e.paths {
		// The survivor was landed on: its r is unknown.
		e.lda(rT, regZero, 1)
		e.lit(0x12, 0x39, rT, resyncMarkShift, rT) // sll
		e.stq(rT, rY, actR)
	}
	e.br(opBR, regZero, l+"pop")
	e.a.label(l + "popped")
	e.stq(rY, rX, gTop)
}

// charge reads the counters (rpcc, rdpic) and charges the record of the
// top activation Y what ran since Y's start values (the cycles modulo
// 2^32: rpcc's low half), then stores the values read as Y's start. The
// sentinel (record 0) is charged nothing: the root accumulates nothing.
// Clobbers v0 and t0 (rdpic's results), T, V, W and U.
func (e cctEmitter) charge(l string) {
	const subq, addq, zapnot = 0x29, 0x20, 0x31
	e.a.emit(rpcc(rT))
	e.a.emit(PalRDPIC)
	e.ldq(rW, rY, actRec)
	e.br(opBEQ, rW, l+"start")
	e.ldq(rV, rY, actCyc)
	e.op(subq, rT, rV, rV)
	e.lit(0x12, zapnot, rV, 0x0f, rV)
	e.ldq(rU, rW, recCycles)
	e.op(addq, rU, rV, rU)
	e.stq(rU, rW, recCycles)
	for i, r := range [2]uint32{0, 1} {
		e.ldq(rV, rY, actP0+8*i)
		e.op(subq, r, rV, rV)
		e.ldq(rU, rW, recPIC0+8*i)
		e.op(addq, rU, rV, rU)
		e.stq(rU, rW, recPIC0+8*i)
	}
	e.a.label(l + "start")
	e.stq(rT, rY, actCyc)
	e.stq(0, rY, actP0)
	e.stq(1, rY, actP1)
}

// copyStart copies the start values of the activation slot at Y+from to
// Y's, with scratch T.
func (e cctEmitter) copyStart(from int) {
	for _, off := range []int{actCyc, actP0, actP1} {
		e.ldq(rT, rY, off+from)
		e.stq(rT, rY, off)
	}
}

// cctRuntime emits the CCT mode's routines: rt_dump and rt_zero (the
// names the system call hooks call), rt_cct_enter, rt_cct_exit,
// rt_cct_call and the heap allocator, for records of nm metrics.
//
// With metrics (nm > 1) every record's cycles and events are its own,
// callees excluded, as the paths mode's (sec. 3.1; docs/instrument.md,
// "Hardware metrics per context"): an entry charges the caller's record
// what ran since the caller's start and starts the callee's activation
// now; an exit charges the callee's record and restarts the caller's
// activation now; the dump charges the running activation. Every cycle
// and event from the first entry to the dump thus falls in exactly one
// record, the instrumentation's own included.
func cctRuntime(a *asm, lay layout, m *Manifest) {
	specials, nm, hw := len(m.Special), len(m.CCTMetrics), cctHeadWords(m)
	e := cctEmitter{a: a, lay: lay, metrics: nm > 1, slot: int(cctActSlot(nm, m.CCTPaths)), paths: m.CCTPaths, nspec: specials}
	c := lay.cct
	enterOps := 24
	if e.paths {
		enterOps = 40
	}

	// rt_cct_enter: operands ID, record size, slots.
	enterSaved := []uint32{rZ, rX, rY, rS, rV, rR, rC, rT, rU, rI, rW, rL}
	const enterFrame = 96
	a.label("rt_cct_enter")
	e.save(enterSaved, enterFrame)
	e.lda(rS, regSP, enterFrame+16)
	a.loadAddr(rX, c.globals)
	e.ldq(rI, rD, 0)
	e.popStale("en_", false, rI)
	if e.metrics {
		e.charge("en_c")
		a.loadAddr(rX, c.globals)
	}
	e.ldq(rC, rY, actRec)
	e.br(opBNE, rC, "en_caller")
	a.loadAddr(rC, c.root)
	a.label("en_caller")
	e.ldq(rU, rX, gCSP)
	e.lit(opINTL, 0x08, rU, 7, rU) // bic: the slot's address
	e.ldq(rV, rU, 0)
	e.lit(opINTL, 0x00, rV, 3, rT) // the tag
	e.br(opBNE, rT, "en_notrec")
	e.ldq(rT, rV, 8)
	e.op(0x2d, rT, rI, rT)
	e.br(opBEQ, rT, "en_miss")
	e.mov(rV, rR)
	e.br(opBR, regZero, "en_have")
	a.label("en_notrec")
	e.lda(rT, rT, -tagList)
	e.br(opBNE, rT, "en_miss")
	e.lit(opINTL, 0x08, rV, 3, rV)
	e.mov(rU, rT) // T: where the node's pointer is stored
	a.label("en_list")
	e.ldq(rR, rV, 8)
	e.ldq(rW, rR, 8)
	e.op(0x2d, rW, rI, rW)
	e.br(opBNE, rW, "en_found")
	e.ldq(rW, rV, 16)
	e.lit(opINTL, 0x00, rW, 3, rR)
	e.lda(rR, rR, -tagList)
	e.br(opBNE, rR, "en_miss")
	e.lda(rT, rV, 16)
	e.lit(opINTL, 0x08, rW, 3, rV)
	e.br(opBR, regZero, "en_list")
	a.label("en_found") // move the node to the list's front
	e.op(0x2d, rT, rU, rW)
	e.br(opBNE, rW, "en_have")
	e.ldq(rW, rV, 16)
	e.stq(rW, rT, 0)
	e.ldq(rW, rU, 0)
	e.stq(rW, rV, 16)
	e.lit(opINTL, 0x20, rV, tagList, rW)
	e.stq(rW, rU, 0)
	e.br(opBR, regZero, "en_have")
	a.label("en_miss") // an ancestor of this procedure (recursion)?
	e.mov(rC, rR)
	a.label("en_anc")
	e.br(opBEQ, rR, "en_alloc")
	e.ldq(rW, rR, 8)
	e.op(0x2d, rW, rI, rW)
	e.br(opBNE, rW, "en_insert")
	e.ldq(rR, rR, 16)
	e.br(opBR, regZero, "en_anc")
	a.label("en_alloc")
	e.ldq(rW, rD, 8)
	e.br(opBSR, rL, "rt_cct_alloc")
	e.br(opBEQ, rT, "en_full")
	e.mov(rT, rR)
	e.lit(0x12, 0x39, rW, 2, rV) // sll: size<<2
	e.lit(opINTL, 0x20, rV, kindRecord, rV)
	e.stq(rV, rR, 0)
	e.stq(rI, rR, 8)
	e.stq(rC, rR, 16)
	if e.paths {
		e.ldq(rT, rD, 32)
		e.stq(rT, rR, cctRecordHead+8*nm)
	}
	e.ldq(rT, rD, 16)
	e.lda(rV, rR, int(cctSlotOffset(hw, 0)))
	e.lit(opINTL, 0x20, rR, tagUninit, rW)
	a.label("en_slots")
	e.br(opBEQ, rT, "en_insert")
	e.stq(rW, rV, 0)
	e.lda(rV, rV, 8)
	e.lit(opINTA, 0x29, rT, 1, rT)
	e.br(opBR, regZero, "en_slots")
	a.label("en_full")
	e.bump(cHeapCCT, rX, rT)
	e.mov(rC, rR)
	e.br(opBR, regZero, "en_have")
	a.label("en_insert") // R goes into the slot
	e.ldq(rV, rU, 0)
	e.lit(opINTL, 0x00, rV, 3, rT)
	e.lda(rW, rT, -tagUninit)
	e.br(opBEQ, rW, "en_uninit")
	e.br(opBNE, rT, "en_listins")
	// One callee there already: the slot becomes a list {V, R}.
	e.lda(rW, regZero, cctListNode)
	e.br(opBSR, rL, "rt_cct_alloc")
	e.br(opBEQ, rT, "en_full2")
	e.lda(rZ, regZero, cctListNode<<2|kindList)
	e.stq(rZ, rT, 0)
	e.stq(rV, rT, 8)
	e.lit(opINTL, 0x20, rC, tagUninit, rZ)
	e.stq(rZ, rT, 16)
	e.lit(opINTL, 0x20, rT, tagList, rV)
	e.br(opBR, regZero, "en_listins")
	a.label("en_uninit")
	e.ldq(rW, rX, gCSP)
	e.lit(opINTL, 0x00, rW, indirectBit, rW)
	e.br(opBNE, rW, "en_listins") // an indirect site: a list from its first callee
	e.stq(rR, rU, 0)
	e.br(opBR, regZero, "en_have")
	a.label("en_listins") // V: the list (or its terminal); R goes in front
	e.lda(rW, regZero, cctListNode)
	e.br(opBSR, rL, "rt_cct_alloc")
	e.br(opBEQ, rT, "en_full2")
	e.lda(rZ, regZero, cctListNode<<2|kindList)
	e.stq(rZ, rT, 0)
	e.stq(rR, rT, 8)
	e.stq(rV, rT, 16)
	e.lit(opINTL, 0x20, rT, tagList, rT)
	e.stq(rT, rU, 0)
	e.br(opBR, regZero, "en_have")
	a.label("en_full2")
	e.bump(cHeapCCT, rX, rT)
	a.label("en_have") // push the activation, count the call
	a.loadAddr(rT, c.stackLast)
	e.op(0x1d, rY, rT, rT) // cmpult
	e.br(opBNE, rT, "en_room")
	e.bump(cOverflowCCT, rX, rT)
	e.br(opBR, regZero, "en_count")
	a.label("en_room")
	e.lda(rY, rY, e.slot)
	e.stq(rY, rX, gTop)
	e.ldq(rT, rX, gCSP)
	e.stq(rT, rY, actGCSP)
	e.opl(0x28, regZero, rS, rT)
	e.stq(rT, rY, actSP)
	e.stq(rI, rY, actID)
	e.stq(rR, rY, actRec)
	if e.metrics {
		e.copyStart(-e.slot) // the callee starts now
	}
	if e.paths {
		e.ldq(rT, rD, 24)
		e.stq(rT, rY, actR)
	}
	a.label("en_count")
	e.ldq(rT, rR, cctRecordHead)
	e.lit(opINTA, 0x20, rT, 1, rT)
	e.stq(rT, rR, cctRecordHead)
	e.restore(enterSaved, enterFrame)
	e.lda(rD, rD, enterOps)
	a.emit(retT11)

	// rt_cct_alloc: W bytes from the heap into T (0: exhausted); Z
	// clobbered; link L.
	a.label("rt_cct_alloc")
	e.ldq(rT, rX, gNext)
	e.ldq(rZ, rX, gLimit)
	e.op(0x29, rZ, rT, rZ) // room
	e.op(0x1d, rZ, rW, rZ) // room < size
	e.br(opBNE, rZ, "al_grow")
	e.op(0x20, rT, rW, rZ)
	e.stq(rZ, rX, gNext)
	a.emit(opJMP<<26 | regZero<<21 | rL<<16 | 2<<14)
	a.label("al_grow")
	e.ldq(rZ, rX, gChunks)
	e.lda(rZ, rZ, -(cctMaxChunks + 1))
	e.br(0x3e, rZ, "al_fail") // bge: no iovec left
	growSaved := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 27, 28}
	const growFrame = 160
	e.save(growSaved, growFrame)
	e.mov(regZero, regA0)
	a.loadConst(regA1, c.grow)
	e.lda(regA2, regZero, 3)    // PROT_READ|PROT_WRITE
	e.lda(regA3, regZero, 0x12) // MAP_PRIVATE|MAP_ANONYMOUS (Alpha)
	e.lda(20, regZero, -1)      // fd
	e.mov(regZero, 21)
	a.loadConst(regV0, sysMmap)
	a.emit(palCallsys)
	e.br(opBNE, regA3, "al_nomap")
	e.ldq(rX, regSP, 0)
	e.ldq(regA1, rX, gChunks)
	e.lit(0x12, 0x39, regA1, 4, regA2)
	e.op(0x20, regA2, rX, regA2) // the current chunk's iovec is at gIOV-16 from A2
	e.ldq(regA1, rX, gNext)
	e.ldq(regA3, regA2, gIOV-16)
	e.op(0x29, regA1, regA3, regA1)
	e.stq(regA1, regA2, gIOV-8)
	e.stq(regV0, regA2, gIOV)
	e.stq(regZero, regA2, gIOV+8)
	e.ldq(regA1, rX, gChunks)
	e.lit(opINTA, 0x20, regA1, 1, regA1)
	e.stq(regA1, rX, gChunks)
	e.lda(regA1, regZero, 16<<2|kindChunk)
	e.stq(regA1, regV0, 0)
	e.stq(regV0, regV0, 8)
	e.lda(regA1, regV0, 16)
	e.stq(regA1, rX, gNext)
	a.loadConst(regA1, c.grow)
	e.op(0x20, regV0, regA1, regA1)
	e.stq(regA1, rX, gLimit)
	e.restore(growSaved, growFrame)
	e.br(opBR, regZero, "rt_cct_alloc")
	a.label("al_nomap")
	e.restore(growSaved, growFrame)
	a.label("al_fail")
	e.mov(regZero, rT)
	a.emit(opJMP<<26 | regZero<<21 | rL<<16 | 2<<14)

	// rt_cct_call: operands slot offset (| indirect bit), ID.
	callSaved := []uint32{rX, rY, rS, rT, rU, rI}
	const callFrame = 48
	a.label("rt_cct_call")
	e.save(callSaved, callFrame)
	e.lda(rS, regSP, callFrame+16)
	a.loadAddr(rX, c.globals)
	e.ldq(rI, rD, 8)
	e.popStale("ca_", true, rI)
	e.ldq(rT, rY, actRec)
	e.br(opBNE, rT, "ca_rec")
	a.loadAddr(rT, c.root)
	a.label("ca_rec")
	e.ldq(rU, rD, 0)
	e.op(0x20, rT, rU, rT)
	e.stq(rT, rX, gCSP)
	e.restore(callSaved, callFrame)
	e.lda(rD, rD, 16)
	a.emit(retT11)

	// rt_cct_exit: operand ID.
	exitSaved, exitFrame := callSaved, callFrame
	if e.metrics {
		exitSaved, exitFrame = []uint32{rX, rY, rS, rT, rU, rI, rZ, rV, rW}, 80
	}
	a.label("rt_cct_exit")
	e.save(exitSaved, exitFrame)
	e.lda(rS, regSP, int(exitFrame)+16)
	a.loadAddr(rX, c.globals)
	e.ldq(rI, rD, 0)
	e.popStale("ex_", true, rI)
	e.ldq(rT, rY, actID)
	e.op(0x2d, rT, rI, rT)
	e.br(opBEQ, rT, "ex_unmatched")
	if e.metrics {
		e.charge("ex_c")
		a.loadAddr(rX, c.globals)
	}
	e.ldq(rT, rY, actGCSP)
	e.stq(rT, rX, gCSP)
	e.lda(rY, rY, -e.slot)
	e.stq(rY, rX, gTop)
	if e.metrics {
		e.copyStart(e.slot) // the caller goes on now
	}
	e.br(opBR, regZero, "ex_out")
	a.label("ex_unmatched")
	e.bump(cUnmatchedCCT, rX, rT)
	a.label("ex_out")
	e.restore(exitSaved, exitFrame)
	e.lda(rD, rD, 8)
	a.emit(retT11)

	if e.paths {
		e.pathRoutines()
	}

	// rt_dump: one writev of the header, the named counters and the
	// chunks. Called at a callsys, so it may clobber what callsys may.
	dumpSaved := []uint32{regT11, regV0, 16, 17, 18, 19, 20, 21, regS0, regS1}
	a.label(labelDump)
	e.save(dumpSaved, dumpFrame)
	if e.metrics {
		// The running activation's record takes what ran up to the dump
		// (the registers charge uses are all ones callsys may clobber).
		a.loadAddr(rY, c.globals)
		e.ldq(rY, rY, gTop)
		e.charge("du_c")
	}
	a.loadConst(regV0, sysGetxpid)
	a.emit(palCallsys)
	a.loadAddr(regS0, lay.headerAddr)
	e.stq(regV0, regS0, headerPIDOff)
	a.loadAddr(regS1, c.globals)
	e.ldq(regT0, regS1, gChunks) // close the last chunk's iovec
	e.lit(0x12, 0x39, regT0, 4, regT1)
	e.op(0x20, regT1, regS1, regT1)
	e.ldq(regT2, regS1, gNext)
	e.ldq(4, regT1, gIOV-16)
	e.op(0x29, regT2, 4, regT2)
	e.stq(regT2, regT1, gIOV-8)
	e.lda(regT1, regS1, gIOV) // sum the lengths
	e.mov(regZero, 4)
	a.label("du_sum")
	e.ldq(regT2, regT1, 8)
	e.op(0x20, 4, regT2, 4)
	e.lda(regT1, regT1, 16)
	e.lit(opINTA, 0x29, regT0, 1, regT0)
	e.br(opBNE, regT0, "du_sum")
	e.lda(4, 4, -headerSize)
	e.lit(0x12, 0x34, 4, 3, 4) // srl: words
	e.stq(4, regS0, headerCountOff)
	a.loadAddr(regA0, lay.pathAddr)
	a.loadConst(regA1, openAppend)
	a.loadConst(regA2, openMode)
	a.loadConst(regV0, sysOpen)
	a.emit(palCallsys)
	e.br(opBNE, regA3, "du_out")
	e.mov(regV0, regS0)
	e.mov(regS0, regA0)
	e.lda(regA1, regS1, gIOV)
	e.ldq(regA2, regS1, gChunks)
	a.loadConst(regV0, sysWritev)
	a.emit(palCallsys)
	e.mov(regS0, regA0)
	a.loadConst(regV0, sysClose)
	a.emit(palCallsys)
	a.label("du_out")
	e.restore(dumpSaved, dumpFrame)
	a.emit(retT11)

	// rt_zero: the named counters and every record's metrics to zero (a
	// fork's child; after a failed execve). t0-t6 clobbered.
	a.label(labelZero)
	a.loadAddr(regT0, lay.countersAddr)
	for i := range specials {
		e.stq(regZero, regT0, 8*i)
	}
	a.loadAddr(regT0, c.globals)
	e.ldq(regT1, regT0, gChunks)
	e.lit(opINTA, 0x29, regT1, 1, regT1) // chunks left
	e.lda(regT2, regT0, gIOV+16)         // the first chunk's iovec
	a.label("ze_chunk")
	e.br(opBEQ, regT1, "ze_out")
	e.ldq(4, regT2, 0) // the object
	e.ldq(5, regT2, 8)
	e.op(0x20, 4, 5, 5) // the chunk's end
	e.lit(opINTA, 0x29, regT1, 1, 6)
	e.br(opBNE, 6, "ze_obj")
	e.ldq(5, regT0, gNext) // the last chunk ends at next
	a.label("ze_obj")
	e.op(0x1d, 4, 5, 6)
	e.br(opBEQ, 6, "ze_next")
	e.ldq(6, 4, 0)
	e.lit(opINTL, 0x00, 6, 3, 7)
	e.lda(7, 7, -kindRecord)
	e.br(opBNE, 7, "ze_skip")
	for i := range nm {
		e.stq(regZero, 4, cctRecordHead+8*i)
	}
	if e.paths {
		// The record's last P words are its path counts (or list head).
		// $22 and $23 are the kernel's to clobber at a callsys.
		e.ldq(22, 4, cctRecordHead+8*nm)
		e.lit(0x12, 0x34, 6, 2, 23) // srl: the size
		e.op(0x20, 4, 23, 23)       // the record's end
		a.label("ze_path")
		e.br(opBEQ, 22, "ze_skip")
		e.lda(23, 23, -8)
		e.stq(regZero, 23, 0)
		e.lit(opINTA, 0x29, 22, 1, 22)
		e.br(opBR, regZero, "ze_path")
	}
	a.label("ze_skip")
	e.lit(0x12, 0x34, 6, 2, 6)
	e.br(opBEQ, 6, "ze_next") // a zero size: corrupt; stop the walk
	e.op(0x20, 4, 6, 4)
	e.br(opBR, regZero, "ze_obj")
	a.label("ze_next")
	e.lda(regT2, regT2, 16)
	e.lit(opINTA, 0x29, regT1, 1, regT1)
	e.br(opBR, regZero, "ze_chunk")
	a.label("ze_out")
	if e.metrics {
		// The running activation starts afresh: a fork child's counts
		// start from its parent's, which the parent's records hold.
		e.mov(regV0, 6)
		a.loadAddr(rY, c.globals)
		e.ldq(rY, rY, gTop)
		a.emit(rpcc(rT))
		a.emit(PalRDPIC)
		e.stq(rT, rY, actCyc)
		e.stq(0, rY, actP0)
		e.stq(1, rY, actP1)
		e.mov(6, regV0)
	}
	a.emit(retT11)
}

// pathRoutines emits the Context+Flow routines rt_cct_back and
// rt_cct_exitp (operands ID, add, start, NumPaths, the path words' offset
// | pathListFlag): a backedge's and an exit's path count in the
// activation's record. An Add is inline (cctInlineAdd).
func (e cctEmitter) pathRoutines() {
	a, c := e.a, e.lay.cct

	saved := []uint32{rZ, rX, rY, rS, rV, rR, rT, rU, rI, rW, rL}
	const frame = 96
	for _, back := range []bool{true, false} {
		l := "ep_"
		if back {
			l = "bk_"
			a.label("rt_cct_back")
		} else {
			a.label("rt_cct_exitp")
		}
		e.save(saved, frame)
		e.lda(rS, regSP, frame+16)
		a.loadAddr(rX, c.globals)
		e.ldq(rI, rD, 0)
		// The top activation, if the procedure's, is this one even on a
		// sp it does not own: __longjmp's ret runs on the sp it restored,
		// and the oracle counts that path in __longjmp's frame, the top
		// of its shadow stack. Otherwise the stale ones go first.
		e.ldq(rY, rX, gTop)
		e.ldq(rT, rY, actID)
		e.op(0x2d, rT, rI, rT)
		e.br(opBNE, rT, l+"mine")
		e.popStale(l, true, rI)
		e.ldq(rT, rY, actID)
		e.op(0x2d, rT, rI, rT)
		e.br(opBEQ, rT, l+"unmatched")
		a.label(l + "mine")
		e.countPath(l)
		if back {
			e.ldq(rT, rD, 16)
			e.stq(rT, rY, actR)
		} else {
			e.ldq(rT, rY, actGCSP)
			e.stq(rT, rX, gCSP)
			e.lda(rY, rY, -e.slot)
			e.stq(rY, rX, gTop)
		}
		e.br(opBR, regZero, l+"out")
		a.label(l + "unmatched")
		e.bump(cUnmatchedCCT, rX, rT)
		a.label(l + "out")
		e.restore(saved, frame)
		e.lda(rD, rD, 40)
		a.emit(retT11)
	}
}

// countPath counts path r+add of the top activation Y (the procedure's:
// ID in I, operands at D) in its record: an array counter, or a node of
// the record's path list (found nodes move to the front; a new one is
// allocated, or the path counted as heap_exhausted). A record not of the
// procedure (a context charged to its caller on an exhausted heap) or an
// r a longjmp left unknown counts lost; a sum out of range out_of_range.
// Clobbers R, V, T, U, W, Z, L.
func (e cctEmitter) countPath(l string) {
	a := e.a
	e.ldq(rR, rY, actRec)
	e.br(opBEQ, rR, l+"lost")
	e.ldq(rT, rR, 8)
	e.op(0x2d, rT, rI, rT)
	e.br(opBEQ, rT, l+"lost")
	e.ldq(rV, rY, actR)
	e.lit(0x12, 0x3c, rV, 61, rT) // sra: 2 only for the mark
	e.lda(rT, rT, -2)
	e.br(opBEQ, rT, l+"lost")
	e.ldq(rT, rD, 8)
	e.op(0x20, rV, rT, rV) // the path ID
	e.ldq(rT, rD, 24)
	e.op(0x1d, rV, rT, rT) // cmpult: 0 <= ID < NumPaths
	e.br(opBEQ, rT, l+"range")
	e.ldq(rU, rD, 32)
	e.lit(opINTL, 0x00, rU, pathListFlag, rT)
	e.lit(opINTL, 0x08, rU, pathListFlag, rU) // bic
	e.op(0x20, rR, rU, rU)
	e.br(opBNE, rT, l+"list")
	e.op(0x32, rV, rU, rU) // s8addq: the path's counter
	e.ldq(rT, rU, 0)
	e.lit(opINTA, 0x20, rT, 1, rT)
	e.stq(rT, rU, 0)
	e.br(opBR, regZero, l+"done")
	a.label(l + "list") // U: the list head's address; T: where the node's pointer is
	e.mov(rU, rT)
	a.label(l + "walk")
	e.ldq(rW, rT, 0)
	e.br(opBEQ, rW, l+"new")
	e.ldq(rZ, rW, 8)
	e.op(0x2d, rZ, rV, rZ)
	e.br(opBNE, rZ, l+"hit")
	e.lda(rT, rW, 24)
	e.br(opBR, regZero, l+"walk")
	a.label(l + "hit")
	e.ldq(rZ, rW, 16)
	e.lit(opINTA, 0x20, rZ, 1, rZ)
	e.stq(rZ, rW, 16)
	e.op(0x2d, rT, rU, rZ)
	e.br(opBNE, rZ, l+"done") // at the front already
	e.ldq(rZ, rW, 24)
	e.stq(rZ, rT, 0)
	e.ldq(rZ, rU, 0)
	e.stq(rZ, rW, 24)
	e.stq(rW, rU, 0)
	e.br(opBR, regZero, l+"done")
	a.label(l + "new")
	e.lda(rW, regZero, cctPathNode)
	e.br(opBSR, rL, "rt_cct_alloc")
	e.br(opBEQ, rT, l+"full")
	e.lda(rZ, regZero, cctPathNode<<2|kindList)
	e.stq(rZ, rT, 0)
	e.stq(rV, rT, 8)
	e.lda(rZ, regZero, 1)
	e.stq(rZ, rT, 16)
	e.ldq(rZ, rU, 0)
	e.stq(rZ, rT, 24)
	e.stq(rT, rU, 0)
	e.br(opBR, regZero, l+"done")
	a.label(l + "full")
	e.bump(cHeapCCT, rX, rT)
	e.br(opBR, regZero, l+"done")
	a.label(l + "range")
	e.bump(cRangeCCT, rX, rT)
	e.br(opBR, regZero, l+"done")
	a.label(l + "lost")
	e.bump(cLostCCT, rX, rT)
	a.label(l + "done")
}

const (
	sysMmap   = 71
	sysWritev = 121
)

// cctPlace lays out the CCT runtime's data after the named counters: the
// globals and the iovec array, the first heap chunk (its header and the
// root record T in the file, the rest in bss), then the activation stack.
func cctPlace(lay *layout, m *Manifest, opt Options) {
	first, grow := uint64(defaultCCTFirstChunk), uint64(defaultCCTGrowChunk)
	if opt.CCTChunkBytes > 0 {
		first, grow = uint64(opt.CCTChunkBytes), uint64(opt.CCTChunkBytes)
	}
	c := &lay.cct
	c.globals = lay.countersAddr + 8*uint64(len(m.Special))
	chunk := alignUp(c.globals+gIOV+16*(cctMaxChunks+1), 16)
	c.root = chunk + chunkHead
	c.chunkEnd = chunk + first
	slot := cctActSlot(len(m.CCTMetrics), m.CCTPaths)
	c.stackBase = alignUp(c.chunkEnd, slot)
	c.stackLast = c.stackBase + (pathStackSlots-1)*slot
	c.slot = slot
	c.grow = grow
	m.CCTRoot = c.root
	m.CCTGrow = int(grow)
}

// cctRootSize is the root record's size: its metrics (unused) and one
// slot.
func cctRootSize(nm int) uint64 { return cctSlotOffset(nm, 1) }

// cctSegmentSizes returns the segment's file and memory sizes in CCT mode.
func cctSegmentSizes(lay layout, base uint64, m *Manifest) (filesz, memsz uint64) {
	return lay.cct.root + cctRootSize(cctHeadWords(m)) - base, lay.cct.stackLast + lay.cct.slot - base
}

// cctInit writes the initial values of the CCT runtime's data into the
// segment's file image seg (at base).
func cctInit(seg []byte, base uint64, lay layout, m *Manifest) {
	put := func(addr, v uint64) { binary.LittleEndian.PutUint64(seg[addr-base:], v) }
	c := lay.cct
	nm := cctHeadWords(m) // with paths, the root's path words' count (0) is in the zeroed file
	chunk := c.root - chunkHead
	put(c.globals+gCSP, c.root+cctSlotOffset(nm, 0))
	put(c.globals+gTop, c.stackBase)
	put(c.globals+gNext, c.root+cctRootSize(nm))
	put(c.globals+gLimit, c.chunkEnd)
	put(c.globals+gChunks, 2)
	put(c.globals+gIOV, lay.headerAddr)
	put(c.globals+gIOV+8, headerSize+8*uint64(len(m.Special)))
	put(c.globals+gIOV+16, chunk)
	put(chunk, chunkHead<<2|kindChunk)
	put(chunk+8, chunk)
	put(c.root, cctRootSize(nm)<<2|kindRecord)
	put(c.root+cctSlotOffset(nm, 0), c.root|tagUninit)
}
