package alpha

import "testing"

// missingMemory misses the D-cache on every load and the I-cache on every
// new fetch block, without stalling: a known number of events.
type missingMemory struct{ PerfectMemory }

func (missingMemory) Fetch(vpc, ppc, cycle uint64) (uint64, uint64, EventSet) {
	return 0, 0, EventSet(0).With(EvIMiss)
}

func (missingMemory) Load(va, pa, cycle uint64) (uint64, uint64, uint64, EventSet) {
	return 0, 0, 2, EventSet(0).With(EvDMiss)
}

// rdpicProgram is seven loads, then rdpic (the eighth instruction, in the
// first 32-byte fetch block), then a copy of v0 and t0 to r5 and r6.
func rdpicProgram() []uint32 {
	var code []uint32
	for i := range 7 {
		code = append(code, encMem(0x29, 3, 2, int16(8*i))) // ldq r3, 8i(r2)
	}
	return append(code, encPal(PalRDPIC),
		encOp(0x11, 0x20, 0, 0, 5), // bis v0, v0, r5
		encOp(0x11, 0x20, 1, 1, 6)) // bis t0, t0, r6
}

// TestRdpicReturnsCountsBeforeIt requires v0 and t0 to hold the base plus
// the events of every instruction before the call: seven D-cache misses
// and one I-cache miss (the first fetch block; the rdpic's own block is
// that one). Dropping the base, counting the call's own events or
// swapping the registers fails.
func TestRdpicReturnsCountsBeforeIt(t *testing.T) {
	c := loadProgram(EV5, codeBase, append(rdpicProgram(), halt), dataBase)
	NewTiming(c, missingMemory{})
	c.R[2] = dataBase
	c.PICEvents = [2]Event{EvDMiss, EvIMiss}
	c.PICBase = [2]uint64{1000, 2000}
	c.Run(1 << 20)
	if c.Trap.Kind != TrapSyscall {
		t.Fatalf("stopped with %v", c.Trap)
	}
	if c.R[5] != 1007 || c.R[6] != 2001 {
		t.Errorf("rdpic read v0 %d t0 %d, want 1007 2001", c.R[5], c.R[6])
	}

	c = loadProgram(EV5, codeBase, append(rdpicProgram(), halt), dataBase)
	NewTiming(c, missingMemory{})
	c.R[2] = dataBase
	c.PICEvents = [2]Event{EvStores, EvLoads}
	c.Run(1 << 20)
	if c.R[5] != 0 || c.R[6] != 7 {
		t.Errorf("stores, loads: rdpic read v0 %d t0 %d, want 0 7", c.R[5], c.R[6])
	}
}

// TestRdpicCost requires the call to wait RdpicCycles at the head of the
// issue queue, charged to StallPAL at its own PC, and the wait to be paid
// once when the budget ends in the middle of it: running the program in
// 3-cycle slices must end on the same cycle as one run.
func TestRdpicCost(t *testing.T) {
	run := func(slice uint64, code []uint32) (*CPU, *GroundTruth) {
		c := loadProgram(EV5, codeBase, append(code, halt), dataBase)
		tm := NewTiming(c, PerfectMemory{})
		tm.Truth = NewGroundTruth()
		c.R[2] = dataBase
		for i := 0; c.Trap.Kind != TrapSyscall; i++ {
			if i == 1000 {
				t.Fatalf("%d-cycle slices: no progress after %d of them", slice, i)
			}
			c.Run(c.Cycle + slice)
			if k := c.Trap.Kind; k != TrapNone && k != TrapSyscall {
				t.Fatalf("stopped with %v", c.Trap)
			}
		}
		return c, tm.Truth
	}
	c, truth := run(1<<20, rdpicProgram())
	pc := uint64(codeBase + 4*7)
	e := truth.PCs[pc]
	if e == nil || e.Executed != 1 {
		t.Fatalf("rdpic truth %+v, want one execution", e)
	}
	if e.Stall[StallPAL] != RdpicCycles || e.HeadCycles < RdpicCycles || e.HeadCycles > RdpicCycles+1 {
		t.Errorf("rdpic: %d head cycles, %d of them pal, want %d pal", e.HeadCycles, e.Stall[StallPAL], RdpicCycles)
	}
	sliced, _ := run(3, rdpicProgram())
	if sliced.Cycle != c.Cycle {
		t.Errorf("run in 3-cycle slices ends at cycle %d, in one run at %d: the call's wait is paid twice", sliced.Cycle, c.Cycle)
	}
	// The same program with a no-op for the call.
	nop := rdpicProgram()
	nop[7] = encOp(0x11, 0x20, 31, 31, 31)
	base, _ := run(1<<20, nop)
	if d := c.Cycle - base.Cycle; d < RdpicCycles || d > RdpicCycles+1 {
		t.Errorf("the call adds %d cycles to the program, want %d", d, RdpicCycles)
	}
}

// TestRdpicWithoutTiming: without the timing model nothing is counted and
// the call costs one cycle like any instruction; it still returns the base.
func TestRdpicWithoutTiming(t *testing.T) {
	c := runProgram(t, EV5, rdpicProgram(), func(c *CPU) {
		c.R[2] = dataBase
		c.PICBase = [2]uint64{5, 6}
	})
	if c.R[5] != 5 || c.R[6] != 6 {
		t.Errorf("read %d %d, want the base 5 6", c.R[5], c.R[6])
	}
}
