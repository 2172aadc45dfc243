package instrument

// Hardware metrics in the paths mode (PLDI'97 sec. 3): beside each
// path's count, the cycles and two hardware events the path took, callees
// included. The cycles come from rpcc, whose low 32 bits count processor
// cycles (sec. 3.3: modular 32-bit deltas, so a single path of more than
// 2^32 cycles wraps); the events from hwsim's rdpic PAL call, which
// returns 64-bit per-process counts of two configured events in v0 and
// t0 (docs/hwsim.md; after UltraSPARC's user-readable PICs, sec. 5.1).
// rdpic is hwsim's extension: a metrics-instrumented program dies of
// SIGILL on qemu-alpha and on a real Alpha.
//
// The paper zeroes the counters at a path's start and, since paths are
// intraprocedural, saves them on procedure entry and restores them before
// exit (sec. 3.1): a callee's events do not count in its caller's path,
// the call instruction's do. The reads here are absolute, so each
// activation keeps its path's start values in its path stack slot:
//
//   - Init (procedure entry) reads the counters, pauses the caller's path
//     (its slot's start values become what its path has taken so far) and
//     stores the values read as the new activation's start;
//   - Count (exit) and Back (backedge) read once, add now-start to the
//     path's accumulators and store now as the start (the next path's,
//     after a Back); a Count then pops and resumes the caller's path (its
//     start becomes now minus what it had taken).
//
// Every cycle and event from the first instrumented entry on, the
// instrumentation's own included, thus falls in exactly one path of the
// activation running it (a procedure left uncounted runs in its nearest
// counted caller's path), except in activations that never exit (the one
// that calls exit: the dump's own cost) and those a longjmp abandons.

import "fmt"

const (
	// pathWords is the counters of one path with metrics: its count, then
	// cycles and the two events.
	pathWords = 4
	// PalRDPIC is hwsim's rdpic PAL function (hwsim/alpha.PalRDPIC).
	PalRDPIC = 0xb0
	// picRegs are the registers rdpic writes: v0 and t0.
	picRegs regSet = 1<<0 | 1<<1
	// Slot offsets of the start values.
	slotCycles, slotPIC0, slotPIC1 = 32, 40, 48
)

// DefaultPIC names the events of hwsim's default rdpic configuration.
var DefaultPIC = [2]string{"dmiss", "imiss"}

// metricNames returns a metrics manifest's metric names: cycles and the
// two events rdpic is expected to count (the instrumenter cannot know
// what the simulator is configured with; `dcpi sim run --pic` must
// agree).
func metricNames(pic [2]string) []string {
	if pic == ([2]string{}) {
		pic = DefaultPIC
	}
	return []string{"cycles", pic[0], pic[1]}
}

// hashWords is the counters of one hash table slot: (key, procedure,
// count), and the metrics.
func hashWords(metrics bool) int {
	if metrics {
		return 3 + 3
	}
	return 3
}

// validPIC reports whether pic names two distinct events other than
// cycles.
func validPIC(pic [2]string) error {
	if pic == ([2]string{}) {
		return nil
	}
	for _, n := range pic {
		if n == "" || n == "cycles" {
			return fmt.Errorf("instrument: PIC event %q: want a named event other than cycles (rpcc gives cycles)", n)
		}
	}
	if pic[0] == pic[1] {
		return fmt.Errorf("instrument: PIC events %q twice", pic[0])
	}
	return nil
}

// rpcc returns the word of rpcc r.
func rpcc(r uint32) uint32 { return encMem(0x18, r, regZero, -0x4000) } // function 0xc000

// acquirePIC pushes v0 and t0 unless both are dead, and says whether it
// did (releasePIC pops them).
func acquirePIC(a *asm, free regSet, spills *int) bool {
	if free&picRegs == picRegs {
		return false
	}
	*spills++
	a.emit(encMem(opLDA, regSP, regSP, -16))
	a.emit(encMem(opSTQ, 0, regSP, 0))
	a.emit(encMem(opSTQ, 1, regSP, 8))
	return true
}

func releasePIC(a *asm) {
	a.emit(encMem(opLDQ, 0, regSP, 0))
	a.emit(encMem(opLDQ, 1, regSP, 8))
	a.emit(encMem(opLDA, regSP, regSP, 16))
}

// enterMetrics reads the counters at a procedure entry, pauses the
// caller's path in the slot below y (ss bytes a slot) and stores the
// values read as the start of slot y. z and t are scratch. (The bottom
// slot is a sentinel, so there is always a slot below.)
func enterMetrics(a *asm, y, z, t uint32, ss int16) {
	const subq = 0x29
	a.emit(rpcc(z))
	a.emit(PalRDPIC)
	for i, r := range [3]uint32{z, 0, 1} {
		off := slotCycles + 8*int16(i)
		a.emit(encMem(opLDQ, t, y, off-ss))
		a.emit(encOp(opINTA, subq, r, t, t)) // taken so far (cycles modulo 2^32 when used)
		a.emit(encMem(opSTQ, t, y, off-ss))
		a.emit(encMem(opSTQ, r, y, off))
	}
}

// resumeMetrics resumes the paused path of slot y: each start value
// becomes now minus what the path had taken. now(off) returns a register
// holding the value read now for the slot offset off; v is scratch.
func resumeMetrics(a *asm, y, v uint32, now func(off int16) uint32) {
	const subq = 0x29
	for off := int16(slotCycles); off <= slotPIC1; off += 8 {
		r := now(off)
		a.emit(encMem(opLDQ, v, y, off))
		a.emit(encOp(opINTA, subq, r, v, v))
		a.emit(encMem(opSTQ, v, y, off))
	}
}

// startMetrics stores the counters' values now in slot y as a path's
// start, using scratch z.
func startMetrics(a *asm, y, z uint32) {
	a.emit(rpcc(z))
	a.emit(encMem(opSTQ, z, y, slotCycles))
	a.emit(PalRDPIC)
	a.emit(encMem(opSTQ, 0, y, slotPIC0))
	a.emit(encMem(opSTQ, 1, y, slotPIC1))
}

// endMetrics reads the counters at a path's end: cyc, v0 and t0 get what
// the path took since the start values in slot y (the cycles modulo
// 2^32), and the values read become the slot's start values (the next
// path's, after a Back). v is scratch.
func endMetrics(a *asm, y, cyc, v uint32) {
	const subq, zapnot = 0x29, 0x31
	a.emit(rpcc(cyc))
	a.emit(PalRDPIC)
	a.emit(encMem(opLDQ, v, y, slotCycles))
	a.emit(encMem(opSTQ, cyc, y, slotCycles))
	a.emit(encOp(opINTA, subq, cyc, v, cyc))
	a.emit(encOpLit(0x12, zapnot, cyc, 0x0f, cyc)) // the low 32 bits
	for r, off := range [2]int16{slotPIC0, slotPIC1} {
		a.emit(encMem(opLDQ, v, y, off))
		a.emit(encMem(opSTQ, uint32(r), y, off))
		a.emit(encOp(opINTA, subq, uint32(r), v, uint32(r)))
	}
}

// addMetrics adds cyc, v0 and t0 to the counters at off+8, off+16 and
// off+24 from p (the path's count is at off), with scratch t.
func addMetrics(a *asm, p, t, cyc uint32, off int16) {
	for i, r := range [3]uint32{cyc, 0, 1} {
		o := off + 8*int16(i+1)
		a.emit(encMem(opLDQ, t, p, o))
		a.emit(encOp(opINTA, 0x20, t, r, t)) // addq
		a.emit(encMem(opSTQ, t, p, o))
	}
}
