package hwsim

import "encoding/binary"

// Signals as far as glibc needs them: actions recorded per process,
// masks per thread, and delivery with the default action (terminate or
// ignore). A signal that would run a handler or stop a process is beyond
// this kernel, and stops the program as unimplemented (unimplemented.go)
// rather than run differently from the real machine.

// Linux/Alpha signal numbers and constants (asm/signal.h) beyond trap.go's.
const (
	sigURG    = 16
	sigSTOP   = 17
	sigTSTP   = 18
	sigCONT   = 19
	sigTTIN   = 21
	sigTTOU   = 22
	sigWINCH  = 28
	sigSYS    = 12
	sigMax    = 64
	sigDFL    = 0
	sigIGN    = 1
	sigBlock  = 1 // Alpha's SIG_BLOCK
	sigUnblk  = 2
	sigSetMsk = 3
)

// sigAction is what rt_sigaction recorded for one signal.
type sigAction struct {
	handler, flags, mask uint64
}

// unblockable are the signals no mask blocks.
const unblockable = 1<<(sigKILL-1) | 1<<(sigSTOP-1)

func sigBit(sig int) uint64 { return 1 << (sig - 1) }

// action returns p's process's action for sig.
func (p *Process) action(sig int) sigAction { return p.mm().thread.actions[sig] }

// sysRtSigaction is rt_sigaction(sig, act, oact, sigsetsize) with Alpha's
// struct sigaction: handler, flags (an int), mask.
func (m *Machine) sysRtSigaction(p *Process, sig int, act, oact, setsize uint64) (uint64, errno) {
	if setsize != 8 || sig < 1 || sig > sigMax || act != 0 && (sig == sigKILL || sig == sigSTOP) {
		return 0, eINVAL
	}
	lead := p.mm()
	old := lead.thread.actions[sig]
	if act != 0 {
		b, err := m.userRead(p, act, 24)
		if err != 0 {
			return 0, err
		}
		a := sigAction{handler: binary.LittleEndian.Uint64(b), flags: uint64(binary.LittleEndian.Uint32(b[8:])),
			mask: binary.LittleEndian.Uint64(b[16:])}
		if lead.thread.actions == nil {
			lead.thread.actions = make(map[int]sigAction)
		}
		lead.thread.actions[sig] = a
	}
	if oact != 0 {
		b := make([]byte, 24)
		binary.LittleEndian.PutUint64(b, old.handler)
		binary.LittleEndian.PutUint32(b[8:], uint32(old.flags))
		binary.LittleEndian.PutUint64(b[16:], old.mask)
		if err := m.userWrite(p, oact, b); err != 0 {
			return 0, err
		}
	}
	return 0, 0
}

// sysRtSigprocmask is rt_sigprocmask(how, set, oset, sigsetsize).
func (m *Machine) sysRtSigprocmask(c *cpuState, p *Process, how, set, oset, setsize uint64) (uint64, errno) {
	if setsize != 8 {
		return 0, eINVAL
	}
	old := p.thread.sigMask
	if set != 0 {
		v, err := m.getU64(p, set)
		if err != 0 {
			return 0, err
		}
		if err := p.changeMask(how, v); err != 0 {
			return 0, err
		}
	}
	if oset != 0 {
		if err := m.putU64(p, oset, old); err != 0 {
			return 0, err
		}
	}
	return m.deliverPending(c, p, 0)
}

// sysOsfSigprocmask is osf_sigprocmask(how, mask): the old mask in v0.
func (m *Machine) sysOsfSigprocmask(c *cpuState, p *Process, how, v uint64) (uint64, errno) {
	old := p.thread.sigMask
	if err := p.changeMask(how, v); err != 0 {
		return 0, err
	}
	return m.deliverPending(c, p, old)
}

func (p *Process) changeMask(how, v uint64) errno {
	switch how {
	case sigBlock:
		p.thread.sigMask |= v
	case sigUnblk:
		p.thread.sigMask &^= v
	case sigSetMsk:
		p.thread.sigMask = v
	default:
		return eINVAL
	}
	p.thread.sigMask &^= unblockable
	return 0
}

// sysRtSigpending writes the pending set: the signals blocked when sent.
func (m *Machine) sysRtSigpending(p *Process, set, setsize uint64) (uint64, errno) {
	if setsize > 8 {
		return 0, eINVAL
	}
	b := binary.LittleEndian.AppendUint64(nil, p.thread.pending|p.mm().thread.sharedPending)
	return 0, m.userWrite(p, set, b[:setsize])
}

// sysSigaltstack is sigaltstack(ss, oss): no alternate stack is ever in
// use (no handler runs), so oss reads disabled.
func (m *Machine) sysSigaltstack(p *Process, ss, oss uint64) (uint64, errno) {
	if oss != 0 {
		const ssDisable = 2
		if err := m.putU64s(p, oss, 0, ssDisable, 0); err != 0 {
			return 0, err
		}
	}
	if ss != 0 {
		if _, err := m.userRead(p, ss, 24); err != 0 {
			return 0, err
		}
	}
	return 0, 0
}

// sysKill is kill(pid, sig); tgkill and tkill are sysTgkill.
func (m *Machine) sysKill(c *cpuState, p *Process, pid, sig int) (uint64, errno) {
	if sig < 0 || sig > sigMax {
		return 0, eINVAL
	}
	var target *Process
	switch {
	case pid > 0:
		target = m.procs[pid]
		if target != nil {
			target = target.mm()
		}
	case len(p.mm().children) > 0:
		// kill(0), kill(-1), kill(-pgrp) reach the children too.
		return m.unimplemented(c, p, "kill of process group %d", pid)
	default:
		target = p.mm()
	}
	if target == nil || target.state == ProcZombie || target.state == ProcDead {
		return 0, eSRCH
	}
	if sig == 0 {
		return 0, 0
	}
	return m.signal(c, p, target, sig, false)
}

// sysTgkill is tgkill(tgid, tid, sig), or tkill(tid, sig) when tgid < 0.
func (m *Machine) sysTgkill(c *cpuState, p *Process, tgid, tid, sig int) (uint64, errno) {
	if sig < 0 || sig > sigMax || tid <= 0 {
		return 0, eINVAL
	}
	t := m.procs[tid]
	if t == nil || t.state == ProcZombie || t.state == ProcDead || t.thread.exited || tgid >= 0 && t.PID != tgid {
		return 0, eSRCH
	}
	if sig == 0 {
		return 0, 0
	}
	return m.signal(c, p, t, sig, true)
}

// signal sends sig from p to target: to that thread if toThread, else to
// its process. It returns what p's system call returns.
func (m *Machine) signal(c *cpuState, p, target *Process, sig int, toThread bool) (uint64, errno) {
	act := target.action(sig)
	switch {
	case sig == sigKILL:
	case act.handler == sigIGN:
		return 0, 0
	case defaultIgnored(sig) && act.handler == sigDFL:
		return 0, 0
	}
	blocked := target.thread.sigMask&sigBit(sig) != 0
	if !toThread {
		blocked = true
		g := target.thread.group
		if g == nil {
			blocked = target.thread.sigMask&sigBit(sig) != 0
		} else {
			for _, t := range g.threads {
				if t.thread.sigMask&sigBit(sig) == 0 {
					blocked = false
				}
			}
		}
	}
	if blocked && sig != sigKILL {
		if toThread {
			target.thread.pending |= sigBit(sig)
		} else {
			target.mm().thread.sharedPending |= sigBit(sig)
		}
		return 0, 0
	}
	return m.deliver(c, p, target, sig)
}

// deliver takes sig's action on target, sent by p.
func (m *Machine) deliver(c *cpuState, p, target *Process, sig int) (uint64, errno) {
	self := target.mm() == p.mm()
	stop := func(format string, args ...any) (uint64, errno) {
		if self {
			return m.unimplemented(c, p, format, args...)
		}
		m.unimplemented(nil, target, format, args...)
		return 0, 0
	}
	if sig != sigKILL {
		h := target.action(sig).handler
		if h == sigIGN || h == sigDFL && defaultIgnored(sig) {
			return 0, 0 // discarded (a pending signal whose action changed)
		}
		if h != sigDFL {
			return stop("delivery of signal %d to a handler", sig)
		}
		switch sig {
		case sigSTOP, sigTSTP, sigTTIN, sigTTOU:
			return stop("stop signal %d", sig)
		}
	}
	if self {
		m.exit(c, p, sig)
		return 0, sysNoReturn
	}
	m.exit(nil, target, sig)
	return 0, 0
}

// deliverPending delivers a pending signal p's mask no longer blocks, after
// a mask change that returns val.
func (m *Machine) deliverPending(c *cpuState, p *Process, val uint64) (uint64, errno) {
	lead := p.mm()
	for {
		ready := (p.thread.pending | lead.thread.sharedPending) &^ p.thread.sigMask
		if ready == 0 {
			return val, 0
		}
		sig := 1
		for ready&1 == 0 {
			ready >>= 1
			sig++
		}
		p.thread.pending &^= sigBit(sig)
		lead.thread.sharedPending &^= sigBit(sig)
		if _, err := m.deliver(c, p, p, sig); err != 0 {
			return 0, err // the process ended
		}
	}
}

func defaultIgnored(sig int) bool {
	return sig == sigCHLD || sig == sigURG || sig == sigWINCH || sig == sigCONT
}

// execSignals is what exec does to signal state: handled signals revert to
// their default action (the handlers are gone); ignored ones stay ignored,
// and the mask and pending signals are kept.
func (p *Process) execSignals() {
	for sig, a := range p.thread.actions {
		if a.handler != sigIGN {
			delete(p.thread.actions, sig)
		}
	}
	p.thread.robustList = 0
}
