package hwsim

import (
	"encoding/binary"
	"io"
)

// Threads of the simulated kernel, as glibc's NPTL makes them: clone with
// CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD and friends.
//
// A thread is a Process (a task: what a run queue holds and a CPU runs)
// whose PID is its process's and whose TID is its own. What Linux keeps
// per thread stays on each task: registers and the PAL unique value (the
// thread pointer), the TID, clear_child_tid, the robust-list head, the
// signal mask, the FP control word and the accounting. What it keeps per
// process — the address space and its areas, the break, open files, signal
// actions, futex wait queues, parent and children, the incarnation the
// profiler's image maps are keyed by — is the group leader's, reached
// through mm(). A process that never starts a thread has no group.

// threadState is a task's thread bookkeeping.
type threadState struct {
	group      *threadGroup // nil until the process starts a second thread
	robustList uint64       // set_robust_list's head (0: none)
	sigMask    uint64       // blocked signals: bit sig-1
	pending    uint64       // signals sent to the thread while blocked
	// exited: the leader called exit while other threads live on; it
	// waits, unscheduled, until the last of them ends the process.
	exited bool
	futex  futexSleep // where the task sleeps in FUTEX_WAIT, if it does
	// inc is a thread's own incarnation (EventThread), 0 for a process's
	// first thread, which goes by the process's.
	inc uint32

	// Per-process state, meaningful on the leader only (mm()).
	futexes       map[uint64][]*Process // FUTEX_WAIT queues by user address
	actions       map[int]sigAction     // rt_sigaction's, by signal
	sharedPending uint64                // signals sent to the process while every thread blocked them
}

// threadGroup is the tasks of one multi-threaded process.
type threadGroup struct {
	leader  *Process
	threads []*Process // live threads in creation order (the leader until it exits)
}

// mm returns the task holding p's per-process state: its group's leader,
// or p itself.
func (p *Process) mm() *Process {
	if g := p.thread.group; g != nil {
		return g.leader
	}
	return p
}

// threadIncarnation is the incarnation p's samples name the thread by
// (Sample.ThreadIncarnation).
func (p *Process) threadIncarnation() uint32 {
	if p.thread.inc != 0 {
		return p.thread.inc
	}
	return p.Incarnation
}

// threads is how many threads of p's process are alive.
func (p *Process) threads() int {
	if g := p.thread.group; g != nil {
		return len(g.threads)
	}
	return 1
}

// Clone flags beyond those syscall.go names (linux/sched.h).
const (
	cloneFS       = 0x00000200
	cloneFiles    = 0x00000400
	cloneSighand  = 0x00000800
	cloneSysVSem  = 0x00040000
	cloneDetached = 0x00400000
	cloneSignal   = 0x000000ff // the exit signal
	sigCHLD       = 20         // Alpha's SIGCHLD
)

// threadCloneFlags are the flags a thread's clone may carry: glibc's set
// (0x3d0f00), CLONE_CHILD_SETTID and the ignored CLONE_DETACHED.
const threadCloneFlags = cloneVM | cloneFS | cloneFiles | cloneSighand | cloneThread | cloneSysVSem |
	cloneSetTLS | cloneParentSetTID | cloneChildClearTID | cloneChildSetTID | cloneDetached

// forkCloneFlags are the flags a new process's clone may carry besides its
// exit signal: glibc's fork passes CLONE_CHILD_SETTID|CLONE_CHILD_CLEARTID,
// posix_spawn CLONE_VM|CLONE_VFORK (run here as a fork: see docs/hwsim.md).
const forkCloneFlags = cloneVM | cloneVFork | cloneSetTLS | cloneParentSetTID | cloneChildClearTID | cloneChildSetTID

// checkCloneFlags returns what is unimplemented about flags, or "", and
// the errno a real kernel gives for a combination it refuses.
func checkCloneFlags(flags uint64) (string, errno) {
	switch {
	case flags&cloneThread != 0 && flags&cloneSighand == 0,
		flags&cloneSighand != 0 && flags&cloneVM == 0:
		return "", eINVAL // kernel/fork.c refuses these itself
	case flags&cloneThread != 0:
		const need = cloneVM | cloneFS | cloneFiles | cloneSighand | cloneThread
		if flags&need != need || flags&^threadCloneFlags&^cloneSignal != 0 {
			return "clone flags " + hex(flags), 0
		}
	default:
		if flags&cloneVM != 0 && flags&cloneVFork == 0 || flags&^forkCloneFlags&^cloneSignal != 0 ||
			flags&cloneSignal != sigCHLD {
			return "clone flags " + hex(flags), 0
		}
	}
	return "", 0
}

// sysCloneThread starts a thread of p's process: a task sharing p's
// address space, running from the clone's return on newsp with v0 = 0.
// It emits EventThread, with the thread's own incarnation, taken from the
// process incarnations' counter so that it too is never reused; the
// thread lives in its process's image maps.
func (m *Machine) sysCloneThread(c *cpuState, p *Process, flags, newsp, ptid, ctid, tls uint64) (uint64, errno) {
	tid, ok := m.allocPID()
	if !ok {
		return 0, errno(35) // EAGAIN
	}
	lead := p.mm()
	if lead.thread.group == nil {
		lead.thread.group = &threadGroup{leader: lead, threads: []*Process{lead}}
	}
	g := lead.thread.group
	if lead.outFiles == nil {
		lead.outFiles = make(map[uint64]io.Writer) // shared from now on (CLONE_FILES)
	}
	t := &Process{
		PID: p.PID, TID: tid, Incarnation: p.Incarnation, Path: p.Path, Argv: p.Argv, Image: p.Image,
		as: p.as, outFiles: lead.outFiles, ieeeFP: p.ieeeFP, rlimitStack: p.rlimitStack,
		StartCycle: c.cpu.Cycle, cpu: c.id,
	}
	t.thread.group = g
	t.thread.sigMask = p.thread.sigMask
	for _, q := range g.threads {
		if q != lead {
			q.outFiles = lead.outFiles
		}
	}
	t.ctx = p.ctx
	t.ctx.R[0], t.ctx.R[19], t.ctx.R[20] = 0, 0, 0
	if newsp != 0 {
		t.ctx.R[30] = newsp
	}
	if flags&cloneSetTLS != 0 {
		t.ctx.Unique = tls
	}
	tidBytes := binary.LittleEndian.AppendUint32(nil, uint32(tid))
	if flags&cloneChildSetTID != 0 {
		m.userWrite(t, ctid, tidBytes)
	}
	if flags&cloneChildClearTID != 0 {
		t.clearTID = ctid
	}
	if flags&cloneParentSetTID != 0 {
		m.userWrite(p, ptid, tidBytes)
	}
	g.threads = append(g.threads, t)
	m.procs[tid] = t
	m.lastInc++
	t.thread.inc = m.lastInc
	m.emit(Event{Kind: EventThread, Cycle: m.cycleOf(c), CPU: c.id, PID: t.PID, TID: tid,
		Incarnation: t.thread.inc, ParentIncarnation: t.Incarnation})
	m.enqueue(m.leastLoaded(), t)
	p.ctx.R[20] = 0
	return uint64(tid), 0
}

// exitThread is exit(2): the calling thread ends. The last thread's exit
// ends the process.
func (m *Machine) exitThread(c *cpuState, t *Process, status int) {
	if t.threads() <= 1 {
		m.exit(c, t, status)
		return
	}
	if bad := m.robustListLeft(t); bad != "" {
		m.unimplemented(c, t, "%s", bad)
		return
	}
	if t.clearTID != 0 {
		// CLONE_CHILD_CLEARTID: zero the TID word and wake one futex
		// waiter on it (kernel/fork.c mm_release): pthread_join's wait.
		if m.userWrite(t, t.clearTID, make([]byte, 4)) == 0 {
			m.futexWake(t, t.clearTID, 1, ^uint32(0))
		}
	}
	m.endThread(c, t)
}

// endThread takes thread t off its CPU and out of its group; the leader
// stays, unscheduled, as the holder of the process's state.
func (m *Machine) endThread(c *cpuState, t *Process) {
	g := t.thread.group
	m.offCPU(c, t)
	m.futexCancel(t)
	for i, q := range g.threads {
		if q == t {
			g.threads = append(g.threads[:i:i], g.threads[i+1:]...)
			break
		}
	}
	t.ExitCycle = m.cycleOf(c)
	if t == g.leader {
		t.state, t.thread.exited, t.sleeping, t.waitingFor = ProcWaiting, true, false, 0
		return
	}
	lead := g.leader
	lead.Retired += t.Retired
	lead.Cycles += t.Cycles
	lead.KernelCycles += t.KernelCycles
	lead.PageFaults += t.PageFaults
	lead.Syscalls += t.Syscalls
	for i, v := range t.Events {
		lead.Events[i] += v
	}
	t.state = ProcDead
	delete(m.procs, t.TID)
	m.emit(Event{Kind: EventThreadExit, Cycle: t.ExitCycle, CPU: c.id, PID: t.PID, TID: t.TID,
		Incarnation: t.thread.inc, ParentIncarnation: t.Incarnation})
}

// endOtherThreads ends every thread of p's process but its leader (exit
// and exit_group, a fatal signal, exec) and returns the leader.
func (m *Machine) endOtherThreads(c *cpuState, p *Process) *Process {
	g := p.thread.group
	if g == nil {
		return p
	}
	for _, t := range append([]*Process(nil), g.threads...) {
		if t != g.leader {
			m.endThread(c, t)
		}
	}
	return g.leader
}

// offCPU takes t off whichever run queue or CPU holds it. c is the CPU
// making the call; another CPU running t goes idle.
func (m *Machine) offCPU(c *cpuState, t *Process) {
	m.unqueue(t)
	if pc := m.cpus[t.cpu]; pc.cur == t {
		pc.cur = nil
		pc.loaded = nil
		if pc != c {
			m.enterIdle(pc)
		}
		m.setNeedResched(pc, true)
	}
}

// robustListLeft reports a robust futex list t leaves with entries: the
// kernel would mark those mutexes FUTEX_OWNER_DIED, which this one does not.
func (m *Machine) robustListLeft(t *Process) string {
	head := t.thread.robustList
	if head == 0 {
		return ""
	}
	next, err := m.getU64(t, head)
	pending, err2 := m.getU64(t, head+16)
	if err != 0 || err2 != 0 || next == head && pending == 0 {
		return ""
	}
	return "robust futex list cleanup at thread exit"
}

// sysSetRobustList is set_robust_list(head, len): only the 64-bit
// robust_list_head's size is accepted, as on the real kernel.
func (m *Machine) sysSetRobustList(p *Process, head, size uint64) (uint64, errno) {
	if size != 24 {
		return 0, eINVAL
	}
	p.thread.robustList = head
	return 0, 0
}

// endQuantumLocks clears the LDx_L lock flag of a CPU that ends its
// quantum inside a lock sequence of a multi-threaded process. CPUs run
// their quanta one after another, so a lock held across the boundary
// could otherwise outlive stores other CPUs make to the block before the
// STx_C; clearing it makes that STx_C fail, which the architecture allows
// at any time (a failed STx_C is retried), and keeps every successful
// LDx_L/STx_C pair atomic with respect to every other CPU. A process with
// one thread shares no writable memory, so its runs are unchanged.
func (m *Machine) endQuantumLocks(c *cpuState) {
	if p := c.cur; p != nil && p.threads() > 1 {
		c.cpu.ClearLock()
	}
}

// taskSyscall carries out the system calls about tasks, threads and
// signals; ok is false for any other number.
func (m *Machine) taskSyscall(c *cpuState, p *Process, num uint64, a [6]uint64) (val uint64, err errno, ok bool) {
	switch num {
	case 1: // exit: this thread
		m.exitThread(c, p, int(a[0]&0xff)<<8)
		return 0, sysNoReturn, true
	case 405: // exit_group
		m.exit(c, p, int(a[0]&0xff)<<8)
		return 0, sysNoReturn, true
	case 378: // gettid
		return uint64(p.TID), 0, true
	case 411: // set_tid_address
		p.clearTID = a[0]
		return uint64(p.TID), 0, true
	case 466: // set_robust_list
		val, err = m.sysSetRobustList(p, a[0], a[1])
	case 394: // futex
		val, err = m.sysFutex(c, p, a[0], a[1], a[2], a[3], a[4], a[5])
	case 2, 66, 312: // fork, vfork, clone
		flags := a[0]
		if num != 312 {
			flags = sigCHLD
		}
		if what, e := checkCloneFlags(flags); e != 0 {
			return 0, e, true
		} else if what != "" {
			val, err = m.unimplemented(c, p, "%s", what)
			return val, err, true
		}
		if flags&cloneThread != 0 {
			val, err = m.sysCloneThread(c, p, flags, a[1], a[2], a[3], a[4])
		} else {
			val, err = m.sysClone(c, p, flags, a[1], a[2], a[3], a[4])
		}
	case 59: // execve: de_thread is not implemented
		if p.threads() > 1 || p != p.mm() {
			val, err = m.unimplemented(c, p, "execve in a multi-threaded process")
			return val, err, true
		}
		return 0, 0, false
	case 352: // rt_sigaction
		val, err = m.sysRtSigaction(p, int(int64(a[0])), a[1], a[2], a[3])
	case 353: // rt_sigprocmask
		val, err = m.sysRtSigprocmask(c, p, a[0], a[1], a[2], a[3])
	case 48: // osf_sigprocmask
		val, err = m.sysOsfSigprocmask(c, p, a[0], a[1])
	case 354: // rt_sigpending
		val, err = m.sysRtSigpending(p, a[0], a[1])
	case 235: // sigaltstack
		val, err = m.sysSigaltstack(p, a[0], a[1])
	case 37: // kill
		val, err = m.sysKill(c, p, int(int32(a[0])), int(int32(a[1])))
	case 424: // tgkill
		val, err = m.sysTgkill(c, p, int(int32(a[0])), int(int32(a[1])), int(int32(a[2])))
	case 381: // tkill
		val, err = m.sysTgkill(c, p, -1, int(int32(a[0])), int(int32(a[1])))
	default:
		return 0, 0, false
	}
	return val, err, true
}

// wakeWaiters wakes the threads of parent's process sleeping in wait4
// for pid (or any child).
func (m *Machine) wakeWaiters(parent *Process, pid int) {
	ws := []*Process{parent}
	if g := parent.thread.group; g != nil {
		ws = g.threads
	}
	for _, w := range ws {
		if w.state == ProcWaiting && !w.sleeping && !w.thread.futex.waiting && !w.thread.exited &&
			(w.waitingFor == -1 || w.waitingFor == pid) {
			m.wake(w) // it re-executes wait4 and finds the child
		}
	}
}

// sysMadvise is madvise(addr, len, advice). Advice is only advice, except
// MADV_DONTNEED (6 on Alpha), after which private anonymous memory reads
// as zero: glibc relies on that for freed thread stacks and malloc heaps.
func (m *Machine) sysMadvise(c *cpuState, p *Process, addr, length, advice uint64) (uint64, errno) {
	const madvDontneed = 6
	if addr&pageMask != 0 {
		return 0, eINVAL
	}
	n := (length + pageMask) &^ pageMask
	if advice != madvDontneed || n == 0 {
		return 0, 0
	}
	for pg := addr; pg < addr+n; pg += pageSize {
		v := p.findVMA(pg)
		if v == nil {
			return 0, eNOMEM
		}
		if v.kind != vmaAnon && v.kind != vmaHeap && v.kind != vmaStack {
			return m.unimplemented(c, p, "madvise MADV_DONTNEED of a file mapping")
		}
	}
	p.as.Unmap(addr, n)
	return 0, 0
}
