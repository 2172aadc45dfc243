package hwsim

import "encoding/binary"

// futex(2) as glibc's NPTL uses it: WAIT and WAKE, REQUEUE and
// CMP_REQUEUE, WAKE_OP, WAIT_BITSET and WAKE_BITSET, with or without
// FUTEX_PRIVATE_FLAG. Wait queues are per process (mm) and by user address:
// processes share no writable memory here (fork copies on write), so a
// shared futex and a private one are found the same way. Waiters are woken
// in the order they came, as Linux does for tasks of equal priority.

// Futex operations and flags (linux/futex.h).
const (
	futexWait          = 0
	futexWake          = 1
	futexRequeue       = 3
	futexCmpRequeue    = 4
	futexWakeOp        = 5
	futexLockPI        = 6
	futexWaitBitset    = 9
	futexWakeBitset    = 10
	futexLockPI2       = 13
	futexPrivateFlag   = 128
	futexClockRealtime = 256
	futexCmdMask       = ^uint64(futexPrivateFlag | futexClockRealtime)
)

const (
	eAGAIN    errno = 35 // Alpha's EAGAIN
	eTIMEDOUT errno = 60 // Alpha's ETIMEDOUT
)

// futexSleep is where a task sleeps in FUTEX_WAIT.
type futexSleep struct {
	waiting bool
	addr    uint64
	bits    uint32
}

var futexOpNames = map[uint64]string{6: "FUTEX_LOCK_PI", 7: "FUTEX_UNLOCK_PI", 8: "FUTEX_TRYLOCK_PI",
	11: "FUTEX_WAIT_REQUEUE_PI", 12: "FUTEX_CMP_REQUEUE_PI", 13: "FUTEX_LOCK_PI2"}

func (m *Machine) sysFutex(c *cpuState, p *Process, uaddr, op, val, timeout, uaddr2, val3 uint64) (uint64, errno) {
	cmd := op & futexCmdMask
	if name := futexOpNames[cmd]; name != "" {
		return m.unimplemented(c, p, "futex operation %s", name)
	}
	if op&futexClockRealtime != 0 && cmd != futexWait && cmd != futexWaitBitset {
		return 0, eNOSYS // kernel/futex/syscalls.c
	}
	if uaddr&3 != 0 {
		return 0, eINVAL
	}
	switch cmd {
	case futexWait, futexWaitBitset:
		bits := ^uint32(0)
		if cmd == futexWaitBitset {
			bits = uint32(val3)
			if bits == 0 {
				return 0, eINVAL
			}
		}
		return m.futexWaitOn(c, p, uaddr, uint32(val), timeout, cmd == futexWaitBitset, op&futexClockRealtime != 0, bits)
	case futexWake, futexWakeBitset:
		bits := ^uint32(0)
		if cmd == futexWakeBitset {
			bits = uint32(val3)
			if bits == 0 {
				return 0, eINVAL
			}
		}
		if _, err := m.getU32(p, uaddr); err != 0 {
			return 0, err
		}
		// kernel/futex/waitwake.c wakes one even when asked for none.
		return uint64(m.futexWake(p, uaddr, max(int(int32(val)), 1), bits)), 0
	case futexRequeue, futexCmpRequeue:
		nWake, nMove := int(int32(val)), int(int32(timeout))
		if nWake < 0 || nMove < 0 || uaddr2&3 != 0 {
			return 0, eINVAL
		}
		v, err := m.getU32(p, uaddr)
		if err != 0 {
			return 0, err
		}
		if cmd == futexCmpRequeue && v != uint32(val3) {
			return 0, eAGAIN
		}
		return uint64(m.futexRequeue(p, uaddr, uaddr2, nWake, nMove)), 0
	case futexWakeOp:
		return m.futexWakeOp(p, uaddr, uaddr2, int(int32(val)), int(int32(timeout)), uint32(val3))
	}
	return 0, eNOSYS // an operation Linux does not have
}

func (m *Machine) getU32(p *Process, addr uint64) (uint32, errno) {
	b, err := m.userRead(p, addr, 4)
	if err != 0 {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), 0
}

// futexWaitOn blocks p on uaddr if it holds want. A relative timeout
// (FUTEX_WAIT) or an absolute one (FUTEX_WAIT_BITSET, on CLOCK_MONOTONIC or
// with FUTEX_CLOCK_REALTIME on CLOCK_REALTIME) wakes it with ETIMEDOUT at a
// quantum boundary.
func (m *Machine) futexWaitOn(c *cpuState, p *Process, uaddr uint64, want uint32, timeout uint64, absolute, realtime bool, bits uint32) (uint64, errno) {
	var deadline uint64 // machine cycle; 0 none
	if timeout != 0 {
		b, err := m.userRead(p, timeout, 16)
		if err != 0 {
			return 0, err
		}
		sec, nsec := int64(binary.LittleEndian.Uint64(b)), binary.LittleEndian.Uint64(b[8:])
		if sec < 0 || nsec >= 1e9 {
			return 0, eINVAL
		}
		ns := uint64(sec)*1e9 + nsec
		now := m.cycleOf(c)
		if absolute {
			if realtime {
				boot := uint64(max(m.cfg.BootTime, 0)) * 1e9
				ns = max(ns, boot) - boot
			}
			deadline = max(ns/1e9*m.cfg.ClockHz+ns%1e9*m.cfg.ClockHz/1e9, 1)
			if deadline <= now {
				deadline = now
			}
		} else {
			deadline = now + ns/1e9*m.cfg.ClockHz + ns%1e9*m.cfg.ClockHz/1e9
		}
	}
	v, err := m.getU32(p, uaddr)
	if err != 0 {
		return 0, err
	}
	if v != want {
		return 0, eAGAIN
	}
	if timeout != 0 && deadline <= m.cycleOf(c) {
		return 0, eTIMEDOUT
	}
	lead := p.mm()
	if lead.thread.futexes == nil {
		lead.thread.futexes = make(map[uint64][]*Process)
	}
	lead.thread.futexes[uaddr] = append(lead.thread.futexes[uaddr], p)
	p.thread.futex = futexSleep{waiting: true, addr: uaddr, bits: bits}
	// The result a wake leaves; a timeout replaces it (futexTimedOut).
	p.ctx.R[0], p.ctx.R[19] = 0, 0
	p.state = ProcWaiting
	p.waitingFor = 0
	p.sleeping = timeout != 0
	p.wakeAt = deadline
	m.setNeedResched(c, true)
	return 0, sysDone
}

// futexWake wakes up to n waiters on uaddr in p's process whose bitset
// meets bits and returns how many it woke.
func (m *Machine) futexWake(p *Process, uaddr uint64, n int, bits uint32) int {
	lead := p.mm()
	q := lead.thread.futexes[uaddr]
	woken := 0
	keep := q[:0]
	for _, t := range q {
		if woken < n && t.thread.futex.bits&bits != 0 {
			woken++
			t.thread.futex = futexSleep{}
			t.sleeping = false
			m.wake(t)
			continue
		}
		keep = append(keep, t)
	}
	lead.setFutexQueue(uaddr, keep)
	return woken
}

func (lead *Process) setFutexQueue(uaddr uint64, q []*Process) {
	if len(q) == 0 {
		delete(lead.thread.futexes, uaddr)
		return
	}
	lead.thread.futexes[uaddr] = q
}

// futexRequeue wakes nWake waiters on uaddr and moves up to nMove of the
// rest to uaddr2's queue; it returns the two counts' sum.
func (m *Machine) futexRequeue(p *Process, uaddr, uaddr2 uint64, nWake, nMove int) int {
	woken := m.futexWake(p, uaddr, nWake, ^uint32(0))
	lead := p.mm()
	q := lead.thread.futexes[uaddr]
	k := min(nMove, len(q))
	if k == 0 || uaddr == uaddr2 {
		return woken + k
	}
	moved := append([]*Process(nil), q[:k]...)
	lead.setFutexQueue(uaddr, q[k:])
	for _, t := range moved {
		t.thread.futex.addr = uaddr2
	}
	if lead.thread.futexes == nil {
		lead.thread.futexes = make(map[uint64][]*Process)
	}
	lead.thread.futexes[uaddr2] = append(lead.thread.futexes[uaddr2], moved...)
	return woken + k
}

// futexWakeOp is FUTEX_WAKE_OP: change *uaddr2 by the operation encoded
// in val3, wake n on uaddr, and n2 on uaddr2 if the old value of *uaddr2
// passes val3's comparison.
func (m *Machine) futexWakeOp(p *Process, uaddr, uaddr2 uint64, n, n2 int, val3 uint32) (uint64, errno) {
	op, cmp := val3>>28&15, val3>>24&15
	oparg := int32(val3<<8) >> 20
	cmparg := int32(val3<<20) >> 20
	if op&8 != 0 { // FUTEX_OP_OPARG_SHIFT
		oparg = 1 << (uint32(oparg) & 31)
		op &= 7
	}
	if uaddr2&3 != 0 {
		return 0, eINVAL
	}
	old, err := m.getU32(p, uaddr2)
	if err != 0 {
		return 0, err
	}
	nv := old
	switch op {
	case 0:
		nv = uint32(oparg)
	case 1:
		nv = old + uint32(oparg)
	case 2:
		nv = old | uint32(oparg)
	case 3:
		nv = old &^ uint32(oparg)
	case 4:
		nv = old ^ uint32(oparg)
	default:
		return 0, eNOSYS
	}
	var pass bool
	o := int32(old)
	switch cmp {
	case 0:
		pass = o == cmparg
	case 1:
		pass = o != cmparg
	case 2:
		pass = o < cmparg
	case 3:
		pass = o <= cmparg
	case 4:
		pass = o > cmparg
	case 5:
		pass = o >= cmparg
	default:
		return 0, eNOSYS
	}
	if err := m.userWrite(p, uaddr2, binary.LittleEndian.AppendUint32(nil, nv)); err != 0 {
		return 0, err
	}
	woken := m.futexWake(p, uaddr, max(n, 1), ^uint32(0))
	if pass {
		woken += m.futexWake(p, uaddr2, max(n2, 1), ^uint32(0))
	}
	return uint64(woken), 0
}

// futexCancel takes t out of the wait queue it sleeps in, if any.
func (m *Machine) futexCancel(t *Process) {
	w := t.thread.futex
	if !w.waiting {
		return
	}
	lead := t.mm()
	q := lead.thread.futexes[w.addr]
	for i, x := range q {
		if x == t {
			lead.setFutexQueue(w.addr, append(q[:i:i], q[i+1:]...))
			break
		}
	}
	t.thread.futex = futexSleep{}
}

// futexTimedOut ends t's FUTEX_WAIT with ETIMEDOUT (wakeSleepers).
func (m *Machine) futexTimedOut(t *Process) {
	if !t.thread.futex.waiting {
		return
	}
	m.futexCancel(t)
	t.ctx.R[0], t.ctx.R[19] = uint64(eTIMEDOUT), 1
}
