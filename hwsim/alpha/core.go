package alpha

// Core is a timing model that replaces the 21164 issue model (Timing) when
// it is installed in CPU.Core: package hwsim/ev6's out-of-order 21264.
//
// The interpreter stays in charge of architectural state and runs every
// instruction in program order; the core only answers when each one
// retires. Run asks Retire before executing an instruction, so that an
// instruction retiring at or after a due counter interrupt or the end of
// the budget is left unexecuted, as the one the interrupt's exception
// address names (the next instruction to retire); it calls Commit after
// executing it, with its successor, to resolve control flow and learn the
// events it caused. The core's cycles are retire cycles: CPU.Cycle is the
// retire cycle of the last instruction retired.
type Core interface {
	// Retire returns the cycle at which the instruction d at pc retires;
	// ea is its effective address if it is a load or store. Asked again
	// about the same instruction before Commit (Run stopped before it
	// for the budget), it answers the same without timing it twice.
	Retire(d *Decoded, pc, ea uint64) uint64
	// Commit records that the instruction Retire last timed has executed
	// and that next is the instruction after it, and returns the events
	// the instruction caused, which the counters count at its retire.
	Commit(d *Decoded, pc, next uint64) EventSet
	// Stop tells the core that Run stopped before the instruction at pc,
	// at cycle (a due interrupt, or the end of the budget), so that its
	// ground truth can charge the cycles waited so far to pc.
	Stop(pc, cycle uint64)
	// Restart empties the pipeline: the next instruction is fetched no
	// earlier than cycle, as after an interrupt or a return from the
	// kernel.
	Restart(cycle uint64)
}

// PhysAddr translates the virtual address va as the current mode would,
// without filling a TLB or faulting: for a timing model that must place an
// access (a wrong-path load, an instruction fetch) in the physically
// indexed caches before or without executing it.
func (c *CPU) PhysAddr(va uint64) (pa uint64, ok bool) {
	as := c.asFor(va >> PageShift)
	if as == nil {
		return 0, false
	}
	p := as.page(va >> PageShift)
	if p == nil {
		return 0, false
	}
	return p.frame<<PageShift | va&pageMask, true
}
