package hwsim

import "dcpi/hwsim/alpha"

// Skid is the ground truth of one counter interrupt (Config.SkidTruth):
// the instruction whose event overflowed the counter and the one the
// interrupt was taken at, the PC the driver was handed. Their distance is
// the counter's skid, the ProfileMe paper's Figure 2 (sec. 2.2). Indexes
// count the CPU's completed instructions, user and kernel, from its
// start; the causing instruction is the Cause'th, the interrupted one,
// which had not executed, the Index'th, so Index-Cause is how many
// instructions completed from the cause up to the interrupt (1: taken at
// the next one).
type Skid struct {
	Event alpha.Event
	// CausePC and Cause are the overflowing instruction's PC and index;
	// OverflowCycle is when its event was counted (the 21164: its issue,
	// the 21264 core: its retire).
	CausePC, Cause, OverflowCycle uint64
	// PC and Index are the interrupted instruction's, Cycle the interrupt's
	// delivery (Sample.Cycle), Kernel and PID the interrupted context's.
	PC, Index, Cycle uint64
	Kernel           bool
	PID              int
}

// Instructions is the skid in completed instructions.
func (s Skid) Instructions() uint64 { return s.Index - s.Cause }

// Cycles is the skid in cycles, from the overflow to the delivery.
func (s Skid) Cycles() uint64 { return s.Cycle - s.OverflowCycle }

// CauseKernel reports whether the causing instruction was vmunix's.
func (s Skid) CauseKernel() bool { return s.CausePC >= alpha.KernelBase }

// Skids returns each CPU's counter interrupts' skids so far, in delivery
// order, with Config.SkidTruth; nil without it. A CYCLES counter
// overflows at a cycle, not at an instruction, and has none.
func (m *Machine) Skids() [][]Skid {
	if !m.cfg.SkidTruth {
		return nil
	}
	out := make([][]Skid, len(m.cpus))
	for i, c := range m.cpus {
		out[i] = c.skids
	}
	return out
}

// noteSkid keeps the skid of the interrupt of counter i that c is taking
// as s.
func (m *Machine) noteSkid(c *cpuState, i int, s *Sample) {
	pc, index, ok := c.cpu.PMU.Cause(i)
	if !ok {
		return
	}
	c.skids = append(c.skids, Skid{
		Event: s.Event, CausePC: pc, Cause: index, OverflowCycle: c.cpu.PMU.OverflowCycle(i),
		PC: s.PC, Index: c.cpu.Retired, Cycle: s.Cycle, Kernel: s.Kernel, PID: s.PID,
	})
}
