package hwsim

import (
	"fmt"

	"dcpi/hwsim/alpha"
)

// Signal numbers of Linux/Alpha (asm/signal.h) for the signals the
// simulated kernel delivers.
const (
	sigTRAP = 5
	sigABRT = 6
	sigFPE  = 8
	sigKILL = 9
	sigSEGV = 11
	sigILL  = 4
	sigBUS  = 10
)

// trap handles a fault of c's current process p, raised in user mode or,
// if kernel, in vmunix on its behalf.
func (m *Machine) trap(c *cpuState, p *Process, kernel bool) {
	t := c.cpu.Trap
	if p == nil {
		// vmunix faulted with no process: a bug in the kernel image.
		m.faults = append(m.faults, Fault{PID: 0, Path: "/vmunix", Trap: t})
		fmt.Fprintf(m.stderr, "hwsim: cpu %d: vmunix: %s\n", c.id, t)
		m.enterIdle(c)
		return
	}
	switch t.Kind {
	case alpha.TrapSegv:
		if !kernel && p.findVMA(t.Addr) != nil && !p.as.Mapped(t.Addr) {
			// A page not present yet: vmunix's page-fault path maps it
			// (through the simulator) and clears it; the faulting
			// instruction runs again after rti.
			m.enterKernel(c, m.kern.entMM)
			c.cpu.R[16] = t.Addr
			return
		}
		if m.demandPage(p, t.Addr) {
			return // a kernel access to a user page not present yet
		}
		if kernel {
			// A kernel access to user memory vmunix did not check first.
			m.faults = append(m.faults, Fault{PID: p.PID, Path: "/vmunix", Trap: t})
			fmt.Fprintf(m.stderr, "hwsim: cpu %d: vmunix: %s\n", c.id, t)
			m.exit(c, p, sigSEGV)
			m.enterIdle(c)
			return
		}
		m.fatal(c, p, sigSEGV, t)
	case alpha.TrapUnimpl:
		m.unimplemented(c, p, "instruction %#08x at pc %#x", t.Word, t.PC)
	case alpha.TrapHalt:
		if name := userPALNames[t.Code]; name != "" {
			// A PAL call Linux/Alpha's PALcode provides to user mode.
			m.unimplemented(c, p, "PAL call %s (%#x) at pc %#x", name, t.Code, t.PC)
			return
		}
		m.fatal(c, p, sigILL, t) // OPDEC, as on the real machine
	case alpha.TrapIllegal:
		m.fatal(c, p, sigILL, t)
	case alpha.TrapBreakpoint:
		m.fatal(c, p, sigTRAP, t)
	case alpha.TrapGentrap, alpha.TrapArith:
		m.fatal(c, p, sigFPE, t)
	default:
		m.fatal(c, p, sigKILL, t)
	}
}

// demandPage maps the page holding addr if it lies in one of p's areas and
// is not mapped yet: the demand-zero page fault. A fault on a page that is
// mapped is a protection violation and is not handled here.
func (m *Machine) demandPage(p *Process, addr uint64) bool {
	v := p.findVMA(addr)
	if v == nil || p.as.Mapped(addr) || v.perm == 0 {
		return false
	}
	if uint64(p.as.PageCount()+1)*pageSize > m.cfg.MaxMemory {
		return false
	}
	p.as.Map(addr&^pageMask, pageSize, v.perm)
	p.PageFaults++
	return true
}

// fatal kills p with sig for trap t: the default action of SIGSEGV, SIGILL,
// SIGFPE and SIGTRAP, which no simulated program handles.
func (m *Machine) fatal(c *cpuState, p *Process, sig int, t alpha.Trap) {
	if h := p.action(sig).handler; h != sigDFL && h != sigIGN {
		m.unimplemented(c, p, "delivery of signal %d to a handler (%s)", sig, t)
		return
	}
	m.faults = append(m.faults, Fault{PID: p.PID, Path: p.Path, Trap: t})
	fmt.Fprintf(m.stderr, "hwsim: pid %d (%s) killed by signal %d: %s\n", p.PID, p.Path, sig, t)
	m.exit(c, p, sig)
}

// exit ends p with wait status status. c is the CPU p made the call on,
// or nil if another process or the simulator ended it.
func (m *Machine) exit(c *cpuState, p *Process, status int) {
	p = m.endOtherThreads(c, p) // the whole process ends (threads.go)
	m.futexCancel(p)
	m.unqueue(p)
	if pc := m.cpus[p.cpu]; pc.cur == p {
		pc.cur = nil
		pc.loaded = nil
		if pc != c {
			m.enterIdle(pc) // it was running elsewhere: that CPU idles now
		}
		m.setNeedResched(pc, true)
	}
	if p.clearTID != 0 {
		// CLONE_CHILD_CLEARTID: the kernel zeroes the TID word at exit.
		m.userWrite(p, p.clearTID, make([]byte, 4))
	}
	p.as.Release()
	p.state = ProcZombie
	p.status = status
	p.ExitCycle = m.cycleOf(c)
	m.emit(Event{Kind: EventExit, Cycle: p.ExitCycle, CPU: p.cpu, PID: p.PID, Status: status,
		Incarnation: p.Incarnation})

	for _, child := range p.children {
		child.parent = nil
		if child.state == ProcZombie {
			m.reap(child)
		}
	}
	p.children = nil
	if p.parent == nil {
		m.reap(p)
		return
	}
	m.wakeWaiters(p.parent, p.PID)
}

// reap frees a zombie's PID.
func (m *Machine) reap(p *Process) {
	p.state = ProcDead
	delete(m.procs, p.TID)
	if par := p.parent; par != nil {
		for i, ch := range par.children {
			if ch == p {
				par.children = append(par.children[:i], par.children[i+1:]...)
				break
			}
		}
	}
}

// cycleOf is the current time on CPU c, or machine time.
func (m *Machine) cycleOf(c *cpuState) uint64 {
	if c == nil {
		return m.now
	}
	return c.cpu.Cycle
}

// userPALNames are the unprivileged PAL calls of Linux/Alpha's PALcode
// (asm/pal.h) that the CPU model does not carry out.
var userPALNames = map[uint64]string{0x92: "urti", 0xbe: "nphalt"}
