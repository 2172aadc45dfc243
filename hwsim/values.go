package hwsim

import "dcpi/hwsim/alpha"

// Interrupted is the interrupted user context as a counter interrupt
// handler may advance it: DCPI value sampling's interpreter (Burrows et
// al.) runs the next few instructions of the interrupted program inside
// the handler and captures what they compute. Every step really executes
// the instruction — through the memory system, the timing model, the PMU
// and ground truth, as the program's own execution — so it is never run
// twice and never run in a shadow copy. It is valid only during the
// CounterInterrupt call that received it; afterwards Step refuses.
//
// Time: the handler starts at the interrupt's delivery; each step's issue
// cycles are the program's (user time, retired instructions), its wait
// for results the profiler's (Profiling), and Cycle is what RPCC reads.
// The handler's own cost (its returned cycles) comes on top.
type Interrupted struct {
	m       *Machine
	c       *cpuState
	start   uint64 // the interrupt's delivery
	live    bool
	begun   bool
	stepped uint64 // cycles the clock advanced in steps, past start
}

// Cycle is the CPU's cycle counter (RPCC) now.
func (x *Interrupted) Cycle() uint64 {
	if x.begun {
		return x.c.cpu.Cycle
	}
	return x.start
}

// PC is the address of the next instruction of the context.
func (x *Interrupted) PC() uint64 { return x.c.cpu.PC }

// Reg returns integer register r (0-31) of the context; FReg the FP one,
// as its bits.
func (x *Interrupted) Reg(r uint8) uint64 {
	if r >= 31 {
		return 0
	}
	return x.c.cpu.R[r]
}

// FReg returns FP register r's bits.
func (x *Interrupted) FReg(r uint8) uint64 {
	if r >= 31 {
		return 0
	}
	return x.c.cpu.F[r]
}

// Word returns the instruction word at pc in the context's memory.
func (x *Interrupted) Word(pc uint64) (uint32, bool) { return x.c.cpu.FetchWord(pc) }

// Step executes the context's next instruction to completion
// (alpha.CPU.Step) and returns alpha.StepDone, or why it executed nothing.
func (x *Interrupted) Step() alpha.StepStop {
	if !x.live {
		return alpha.StepTrap
	}
	c, m := x.c, x.m
	if !x.begun {
		x.begun = true
		if x.start > c.cpu.Cycle {
			m.spend(c, x.start-c.cpu.Cycle, &c.Profiling)
		}
		if c.cpu.Timing != nil {
			c.cpu.Timing.Restart(c.cpu.Cycle)
		}
	}
	p, before := c.cur, c.cpu.Cycle
	issued, why := c.cpu.Step()
	if why != alpha.StepDone {
		return why
	}
	x.stepped += c.cpu.Cycle - before
	// The issue is the program's time; the wait for its results, which
	// the program would have overlapped with later instructions, is the
	// interpreter's.
	run := issued - before
	c.Retired++
	c.Interpreted++
	c.User += run
	if p != nil {
		p.Retired++
		p.Cycles += run
	}
	c.Profiling += c.cpu.Cycle - issued
	if p != nil {
		p.Cycles += c.cpu.Cycle - issued
		p.KernelCycles += c.cpu.Cycle - issued
	}
	m.chargeEvents(c, p)
	return why
}
