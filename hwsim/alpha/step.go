package alpha

// StepStop says why Step executed nothing, or StepDone.
type StepStop uint8

// What Step may report. Step refuses, before executing anything, every
// instruction whose effects the OS would have to see: an interpreter in an
// interrupt handler must give up on them (DCPI value sampling gives up on
// traps, page faults, PAL calls and IPL changes).
const (
	StepDone  StepStop = iota // the instruction executed and completed
	StepPAL                   // CALL_PAL: a system call, a PAL service, an IPL change
	StepFault                 // the fetch or the data access would fault: unmapped, protection, copy-on-write, unaligned, a decoded code page
	StepTrap                  // an illegal or unimplemented instruction, or one that may raise an arithmetic trap
	StepLock                  // LDx_L/STx_C: the interrupt's return clears the lock flag, so the sequence must rerun natively
)

var stepStopNames = [...]string{"done", "pal", "fault", "trap", "lock"}

// String names s for conservation counters ("pal", "fault", ...).
func (s StepStop) String() string {
	if int(s) < len(stepStopNames) {
		return stepStopNames[s]
	}
	return "unknown"
}

// Step executes the one instruction at c.PC through the timing model, as
// Run does (the memory system, the PMU, ground truth and the transfer
// observer all see it), with counter interrupts masked, and then waits
// until every register value is available: the instruction is run to
// completion, as by an interpreter that keeps the context in memory and
// stores each result. c.Cycle is then the cycle counter such an
// interpreter reads after the instruction, so the cycles around a load are
// its latency as the program would have seen it. Step first checks that
// the instruction can complete without the OS (StepStop) and executes
// nothing otherwise; it never executes an instruction twice. issued is
// the cycle the instruction issued (c.Cycle after Run), before the wait.
func (c *CPU) Step() (issued uint64, why StepStop) {
	if why := c.stepCheck(); why != StepDone {
		return c.Cycle, why
	}
	ipl := c.IPL
	c.IPL, c.stepOnly = counterIPL, true
	n := c.Run(^uint64(0) - 1)
	c.IPL, c.stepOnly = ipl, false
	if n == 0 {
		// Fetch faulted (a page without execute permission): Run executed
		// nothing and left PC on the instruction.
		c.Trap = Trap{}
		return c.Cycle, StepFault
	}
	issued = c.Cycle
	if tm := c.Timing; tm != nil {
		done := tm.last
		for f := range tm.ready {
			for _, r := range tm.ready[f] {
				done = max(done, r)
			}
		}
		c.Cycle = max(c.Cycle, done)
		tm.Restart(c.Cycle)
	}
	return issued, StepDone
}

// stepCheck reports why the instruction at c.PC cannot be stepped, or
// StepDone if it can.
func (c *CPU) stepCheck() StepStop {
	pc := c.PC
	w, ok := c.FetchWord(pc)
	if !ok || pc&3 != 0 {
		return StepFault
	}
	d := Decode(w, c.Model)
	switch d.Op {
	case OpCallPal:
		return StepPAL
	case OpInvalid, OpUnimpl, OpADDLV, OpSUBLV, OpADDQV, OpSUBQV, OpMULLV, OpMULQV:
		return StepTrap
	case OpLDLL, OpLDQL, OpSTLC, OpSTQC:
		return StepLock
	case OpFETCH, OpECB, OpWH64:
		return StepDone // hints: they never fault
	}
	cl := &classOf[d.Op]
	if !cl.Load && !cl.Store {
		return StepDone
	}
	ea := uint64(d.Imm) + c.R[d.Rb&63]
	size := uint64(8)
	switch d.Op {
	case OpLDBU, OpSTB:
		size = 1
	case OpLDWU, OpSTW:
		size = 2
	case OpLDL, OpSTL, OpLDS, OpSTS, OpLDF, OpSTF:
		size = 4
	case OpLDQU, OpSTQU:
		ea &^= 7
	}
	if ea&(size-1) != 0 {
		return StepFault // Linux's unaligned-access fixup is a trap
	}
	vpn := ea >> PageShift
	as := c.asFor(vpn)
	if as == nil {
		return StepFault
	}
	p := as.page(vpn)
	switch {
	case p == nil, p.perm&PermR == 0:
		return StepFault
	case cl.Store && (p.perm&PermW == 0 || p.refs.Load() > 1 || p.code.Load() != nil):
		return StepFault
	}
	return StepDone
}
