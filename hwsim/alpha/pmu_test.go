package alpha

import "testing"

// TestSkidIsSixCycles runs a chain of dependent adds, one issuing per
// cycle, with a CYCLES counter of period P: the overflow comes at cycle P
// and the interrupt six cycles later must stop the CPU on the instruction
// that issues then. A skid of five or seven lands one instruction off.
func TestSkidIsSixCycles(t *testing.T) {
	code := make([]uint32, 400)
	for i := range code {
		code[i] = encOpLit(0x10, 0x20, 1, 1, 1) // addq r1, 1, r1
	}
	for _, period := range []uint64{100, 101, 250} {
		c := loadProgram(EV5, codeBase, code, 0)
		NewTiming(c, PerfectMemory{})
		c.PMU.SetCounter(0, EvCycles, period, 0)
		c.Run(1 << 20)
		if c.Trap.Kind != TrapEvent {
			t.Fatalf("period %d: stopped with %v, want a counter interrupt", period, c.Trap)
		}
		// Instruction k issues at cycle k+1; the interrupt is due at
		// cycle period+InterruptSkid, when instruction period+5 is the
		// oldest in the issue queue.
		want := codeBase + 4*(period+InterruptSkid-1)
		if c.Trap.PC != want || c.PC != want {
			t.Errorf("period %d: interrupt at pc %#x, want %#x (instruction %d)", period, c.Trap.PC, want, period+InterruptSkid-1)
		}
		if c.R[1] != period+InterruptSkid-1 {
			t.Errorf("period %d: %d instructions completed before the interrupt, want %d", period, c.R[1], period+InterruptSkid-1)
		}
		if i, ok := c.PMU.Pending(^uint64(0)); !ok || i != 0 || c.PMU.OverflowCycle(0) != period {
			t.Errorf("period %d: pending %d %v, overflow at %d", period, i, ok, c.PMU.OverflowCycle(0))
		}
	}
}

// TestEventCounterOverflowsOnTheNthEvent counts stores with a period of 3
// and requires the interrupt after the third store, skid included.
func TestEventCounterOverflowsOnTheNthEvent(t *testing.T) {
	var code []uint32
	for i := 0; i < 40; i++ {
		code = append(code, encMem(0x2d, 31, 3, int16(8*i)), encOpLit(0x10, 0x20, 1, 1, 1))
	}
	c := loadProgram(EV5, codeBase, code, dataBase)
	NewTiming(c, PerfectMemory{})
	c.R[3] = dataBase
	c.PMU.SetCounter(1, EvStores, 3, 0)
	c.Run(1 << 20)
	if c.Trap.Kind != TrapEvent {
		t.Fatalf("stopped with %v", c.Trap)
	}
	over := c.PMU.OverflowCycle(1)
	if over == 0 {
		t.Fatal("no overflow recorded")
	}
	// The third store is instruction 4; everything issued by the delivery
	// cycle has completed, the next has not.
	if c.Trap.PC <= codeBase+4*4 {
		t.Fatalf("interrupted at %#x, before the third store had issued", c.Trap.PC)
	}
	if c.Cycle >= over+InterruptSkid {
		t.Fatalf("last issue at cycle %d, at or after delivery (%d)", c.Cycle, over+InterruptSkid)
	}
}

// TestDeferredAtHighIPL raises IPL to 7, where the counter interrupt may
// not be taken, and checks it arrives once IPL drops.
func TestDeferredAtHighIPL(t *testing.T) {
	code := make([]uint32, 300)
	for i := range code {
		code[i] = encOpLit(0x10, 0x20, 1, 1, 1)
	}
	c := loadProgram(EV5, codeBase, code, 0)
	NewTiming(c, PerfectMemory{})
	c.PMU.SetCounter(0, EvCycles, 20, 0)
	c.IPL = 7
	c.Run(100)
	if c.Trap.Kind == TrapEvent {
		t.Fatalf("interrupt taken at IPL 7 (pc %#x)", c.Trap.PC)
	}
	c.IPL = 0
	c.Run(1000)
	if c.Trap.Kind != TrapEvent || c.Trap.PC != codeBase+4*uint64(c.R[1]) {
		t.Fatalf("after lowering IPL: %v at pc %#x, r1 %d", c.Trap, c.Trap.PC, c.R[1])
	}
}
