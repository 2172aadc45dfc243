package instrument

import (
	"fmt"
	"sort"
)

// layout is where the runtime's data lie in the added segment.
type layout struct {
	pathAddr, headerAddr, countersAddr uint64
	recordLen                          uint64
	// stackBase and stackLast are the paths mode's path stack (its
	// sentinel slot and its last slot).
	stackBase, stackLast uint64
	cct                  cctLayout // the CCT mode's data (cctmode.go)
}

// Linux/Alpha system call numbers and open flags the runtime uses.
const (
	sysExit       = 405 // exit_group
	sysExitThread = 1
	sysExecve     = 59
	sysFork       = 2
	sysClone      = 312
	sysGetxpid    = 20
	sysOpen       = 45
	sysWrite      = 4
	sysClose      = 6
	cloneVM       = 0x100
	openAppend    = 0x1 | 0x200 | 0x8 // O_WRONLY|O_CREAT|O_APPEND
	openMode      = 0o644
	dumpFrame     = 96
	labelDump     = "rt_dump"
	labelZero     = "rt_zero"
	jumpToOrig    = opBR<<26 | regZero<<21
	retT11        = opJMP<<26 | regZero<<21 | regT11<<16 | 2<<14
	palCallsys    = opPAL<<26 | palCall
	movBase       = opINTL<<26 | regZero<<21 | 0x20<<5 // bis zero, rb, rc
	subqLitFunc   = 0x29
	andFunc       = 0x00
	maxRecordLen  = 1<<31 - 1<<16
)

func mov(from, to uint32) uint32 { return movBase | from<<16 | to }

// gen emits the runtime and every stub at base and returns the code and
// each point's stub address.
func gen(base uint64, pl *planned, lay layout, spills *int) ([]byte, map[uint64]uint64, error) {
	a := newAsm(base)
	if pl.manifest.Mode == ModeCCT {
		cctRuntime(a, lay, pl.manifest)
	} else {
		runtime(a, lay, pl.manifest.Counters)
	}
	pcs := make([]uint64, 0, len(pl.points))
	for pc := range pl.points {
		pcs = append(pcs, pc)
	}
	sort.Slice(pcs, func(i, j int) bool { return pcs[i] < pcs[j] })
	stubs := make(map[uint64]uint64, len(pcs))
	*spills = 0
	for n, pc := range pcs {
		stubs[pc] = a.pc()
		stub(a, pl.points[pc], fmt.Sprintf("p%d_", n), lay, spills)
	}
	b, err := a.finish()
	return b, stubs, err
}

// runtime emits the two routines the stubs call with bsr t11:
//
//   - rt_dump appends a record (header, counters) to the dump file. It
//     saves v0 and a0-a5 (the system call the caller is about to make) and
//     the s registers it uses; it clobbers only what callsys may.
//   - rt_zero clears the counters (t0, t1 clobbered), in a fork's child
//     and after a failed execve that dumped.
func runtime(a *asm, lay layout, counters int) {
	a.label(labelDump)
	a.emit(encMem(opLDA, regSP, regSP, -dumpFrame))
	saved := []uint32{regT11, regV0, 16, 17, 18, 19, 20, 21, regS0, regS1}
	for i, r := range saved {
		a.emit(encMem(opSTQ, r, regSP, int16(8*i)))
	}
	a.loadConst(regV0, sysGetxpid)
	a.emit(palCallsys)
	a.loadAddr(regS0, lay.headerAddr)
	a.emit(encMem(opSTQ, regV0, regS0, headerPIDOff))
	a.loadAddr(regA0, lay.pathAddr)
	a.loadConst(regA1, openAppend)
	a.loadConst(regA2, openMode)
	a.loadConst(regV0, sysOpen)
	a.emit(palCallsys)
	a.branchTo(opBNE, regA3, "rt_dump_out")
	a.emit(mov(regV0, regS1))
	a.emit(mov(regS1, regA0))
	a.emit(mov(regS0, regA1))
	a.loadConst(regA2, lay.recordLen)
	a.loadConst(regV0, sysWrite)
	a.emit(palCallsys)
	a.emit(mov(regS1, regA0))
	a.loadConst(regV0, sysClose)
	a.emit(palCallsys)
	a.label("rt_dump_out")
	for i, r := range saved {
		a.emit(encMem(opLDQ, r, regSP, int16(8*i)))
	}
	a.emit(encMem(opLDA, regSP, regSP, dumpFrame))
	a.emit(retT11)

	a.label(labelZero)
	a.loadAddr(regT0, lay.countersAddr)
	a.loadConst(regT1, uint64(counters))
	a.branchTo(opBEQ, regT1, "rt_zero_out")
	a.label("rt_zero_loop")
	a.emit(encMem(opSTQ, regZero, regT0, 0))
	a.emit(encMem(opLDA, regT0, regT0, 8))
	a.emit(encOpLit(opINTA, subqLitFunc, regT1, 1, regT1))
	a.branchTo(opBNE, regT1, "rt_zero_loop")
	a.label("rt_zero_out")
	a.emit(retT11)
}

// withScratch runs body with two registers outside avoid: dead ones if
// there are two, else two pushed on the stack. The stack, not a save area
// below sp: Alpha Linux promises no red zone (a signal frame is built
// right at sp), so sp moves first and the saved values lie above it,
// where a signal cannot reach them; and the stack is per-thread.
func withScratch(a *asm, free, avoid regSet, spills *int, body func(x, y uint32)) {
	if x, y, ok := scratch(free &^ avoid); ok {
		body(x, y)
		return
	}
	x, y, _ := scratch(allRegs &^ avoid)
	*spills++
	a.emit(encMem(opLDA, regSP, regSP, -16))
	a.emit(encMem(opSTQ, x, regSP, 0))
	a.emit(encMem(opSTQ, y, regSP, 8))
	body(x, y)
	a.emit(encMem(opLDQ, y, regSP, 8))
	a.emit(encMem(opLDQ, x, regSP, 0))
	a.emit(encMem(opLDA, regSP, regSP, 16))
}

func counterAddr(lay layout, c int) uint64 { return lay.countersAddr + 8*uint64(c) }

// stub emits one point's stub: its counting, then the displaced
// instruction, then a branch back to the instruction after it.
func stub(a *asm, pt *point, l string, lay layout, spills *int) {
	if pt.path != nil {
		pathStub(a, pt, l, lay, spills)
		return
	}
	w, pc := pt.word, pt.pc
	free := pt.free
	if pt.syscall {
		free |= syscallClobbered
	}
	if pt.blockCounter >= 0 {
		withScratch(a, free, 0, spills, func(x, y uint32) { a.increment(counterAddr(lay, pt.blockCounter), x, y) })
	}
	switch {
	case pt.branch != nil:
		br := pt.branch
		a.branchTo(w>>26, (w>>21)&31, l+"taken")
		withScratch(a, free, 0, spills, func(x, y uint32) { a.increment(counterAddr(lay, br.Fall), x, y) })
		a.branchAbs(opBR, regZero, pc+4)
		a.label(l + "taken")
		withScratch(a, free, 0, spills, func(x, y uint32) { a.increment(counterAddr(lay, br.Taken), x, y) })
		a.branchAbs(opBR, regZero, br.Target)
		return
	case pt.jump != nil:
		j := pt.jump
		rb := (w >> 16) & 31
		withScratch(a, free, reg(rb), spills, func(x, y uint32) {
			a.loadAddr(x, j.Lo)
			a.emit(encOp(opINTA, 0x29, rb, x, y)) // y = target - lo
			a.emit(encOp(opINTA, 0x20, y, y, y))  // y = slot * 8
			a.loadAddr(x, counterAddr(lay, j.Counter))
			a.emit(encOp(opINTA, 0x20, x, y, x))
			a.emit(encMem(opLDQ, y, x, 0))
			a.emit(encOpLit(opINTA, 0x20, y, 1, y))
			a.emit(encMem(opSTQ, y, x, 0))
		})
	case pt.syscall:
		syscallHook(a, pc, l, false)
		return
	}
	displace(a, pc, w)
}

// displace emits the instruction w from pc so that it does what it did
// there: PC-relative branches keep their targets, link registers receive
// the original return address pc+4, and control returns to pc+4.
func displace(a *asm, pc uint64, w uint32) {
	opc, ra := w>>26, (w>>21)&31
	switch {
	case opc == opBR || opc == opBSR:
		if ra != regZero {
			a.loadAddr(ra, pc+4)
		}
		a.branchAbs(opc, regZero, branchTarget(pc, w))
	case condBranch(w):
		a.branchAbs(opc, ra, branchTarget(pc, w))
		a.branchAbs(opBR, regZero, pc+4)
	case opc == opJMP:
		if ra != regZero {
			a.loadAddr(ra, pc+4)
		}
		a.emit(w&^(31<<21) | regZero<<21) // same kind and hint, no link
	default:
		a.emit(w)
		a.branchAbs(opBR, regZero, pc+4)
	}
}

// syscallHook emits a callsys with the runtime's hooks. At a callsys the
// registers the kernel may clobber are dead, so t0 and t1 are free.
//
//   - exit_group: dump, then exit.
//   - execve: dump (the new image starts afresh); if it fails and returns,
//     clear the counters, whose counts are in the dump already.
//   - fork, and clone without CLONE_VM: in the child, clear the counters:
//     its copy holds its parent's counts, which the parent dumps.
//
// With exitToo (paths mode, single-threaded programs only) the exit
// system call, which ends one thread, dumps too: a freestanding program
// ends with it.
func syscallHook(a *asm, pc uint64, l string, exitToo bool) {
	a.emit(encMem(opLDA, regT0, regV0, -sysExit))
	a.branchTo(opBEQ, regT0, l+"exit")
	if exitToo {
		a.emit(encMem(opLDA, regT0, regV0, -sysExitThread))
		a.branchTo(opBEQ, regT0, l+"exit")
	}
	a.emit(encMem(opLDA, regT0, regV0, -sysExecve))
	a.branchTo(opBEQ, regT0, l+"exec")
	a.emit(encMem(opLDA, regT0, regV0, -sysFork))
	a.branchTo(opBEQ, regT0, l+"fork")
	a.emit(encMem(opLDA, regT0, regV0, -sysClone))
	a.branchTo(opBNE, regT0, l+"plain")
	a.loadConst(regT1, cloneVM)
	a.emit(encOp(opINTL, andFunc, regA0, regT1, regT1))
	a.branchTo(opBNE, regT1, l+"plain")
	a.label(l + "fork")
	a.emit(palCallsys)
	a.branchTo(opBNE, regA3, l+"back")
	a.branchTo(opBNE, regV0, l+"back")
	a.branchTo(opBSR, regT11, labelZero)
	a.branchTo(opBR, regZero, l+"back")
	a.label(l + "exec")
	a.branchTo(opBSR, regT11, labelDump)
	a.emit(palCallsys)
	a.branchTo(opBSR, regT11, labelZero)
	a.branchTo(opBR, regZero, l+"back")
	a.label(l + "exit")
	a.branchTo(opBSR, regT11, labelDump)
	a.label(l + "plain")
	a.emit(palCallsys)
	a.label(l + "back")
	a.branchAbs(opBR, regZero, pc+4)
}
