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
// Where the paper zeroes the PICs at a path's start and saves them
// around calls, the reads here are absolute, so each activation keeps
// its path's start values in its path stack slot: an Init (procedure
// entry) stores them; a Count (exit) or Back (backedge) reads the
// counters once, adds now-start to the path's accumulators and, for a
// Back, stores now as the next path's start. Every cycle and event of an
// activation, its callees' and the instrumentation's own included, so
// falls in exactly one of its paths.

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
