package hwsim

import (
	"encoding/binary"
	"fmt"

	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
	"dcpi/hwsim/timing"
	"dcpi/hwsim/vmunix"
)

// The kernel: vmunix runs in kernel mode on every CPU for system calls,
// clock ticks, scheduling and idling. This file is the PALcode between it
// and user mode, and the simulator calls (CALL_PAL cserve) it makes; the
// codes match src/kernel.c in package vmunix.
const (
	simSyscall      = 1
	simConsoleWrite = 2
	simConsoleRead  = 3
	simSetRet       = 4
	simSchedule     = 5
	simUserRange    = 6
	simTick         = 7
	simPageFault    = 8
)

// HZ is Linux/Alpha's clock tick rate.
const HZ = 1024

const (
	kernelStackSize = 16384
	cpuDataSize     = 64
	maxKernelCPUs   = 64
)

// kernel is vmunix loaded into the kernel address space every CPU shares.
type kernel struct {
	im *elfimage.Image
	as *alpha.AddressSpace

	entSys, entInt, entMM, cpuIdle uint64
	cpuData, stacks, timeslice     uint64
	idleLo, idleHi                 uint64 // cpu_idle's extent
	bootMap                        Event  // vmunix's map event, for every subscriber
}

func loadKernel(frames *alpha.Frames) (*kernel, error) {
	im, err := elfimage.ParseKernel(vmunix.Image(), vmunix.Path)
	if err != nil {
		return nil, fmt.Errorf("vmunix: %w", err)
	}
	k := &kernel{im: im, as: alpha.NewAddressSpaceIn(frames)}
	if _, _, _, err := loadSegments(k.as, im, 0); err != nil {
		return nil, fmt.Errorf("vmunix: %w", err)
	}
	lo, hi := ^uint64(0), uint64(0)
	for _, s := range im.Segments {
		lo, hi = min(lo, s.Vaddr), max(hi, s.Vaddr+s.Memsz)
	}
	k.bootMap = Event{Kind: EventMap, ImageID: im.ID.String(), Path: vmunix.Path, Base: lo, Size: hi - lo}
	for name, dst := range map[string]*uint64{
		"entSys": &k.entSys, "entInt": &k.entInt, "entMM": &k.entMM, "cpu_idle": &k.cpuIdle,
		"cpu_data": &k.cpuData, "kernel_stacks": &k.stacks, "timeslice_ticks": &k.timeslice,
	} {
		sym, ok := im.SymbolNamed(name)
		if !ok {
			return nil, fmt.Errorf("vmunix: no symbol %s", name)
		}
		*dst = sym.Addr
		if name == "cpu_idle" {
			k.idleLo, k.idleHi = sym.Addr, sym.Addr+sym.Size
		}
	}
	return k, nil
}

func (k *kernel) stackTop(cpu int) uint64 { return k.stacks + uint64(cpu+1)*kernelStackSize }

func (k *kernel) putU64(addr, v uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	k.as.WriteBytes(addr, b[:])
}

// setNeedResched sets or clears cpu_data[cpu].need_resched.
func (m *Machine) setNeedResched(c *cpuState, v bool) {
	m.kern.putU64(m.kern.cpuData+uint64(c.id)*cpuDataSize, b2u(v))
	if v {
		c.halted = false // a waiting CPU wakes to look
	}
}

// negErrno is how vmunix's C code receives an error: -errno.
func negErrno(e errno) uint64 { return -uint64(e) }

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// enterKernel switches c to kernel mode at entry with a fresh kernel stack,
// saving the user context of the current process first if it was in user
// mode. PALcode does this on real hardware; its few cycles are charged to
// palCycles.
func (m *Machine) enterKernel(c *cpuState, entry uint64) {
	if !c.cpu.Kernel && c.cur != nil {
		c.cpu.Save(&c.cur.ctx)
		m.observeMode(c, TransferKernelEntry)
	}
	c.cpu.SetMode(true)
	if c.mem != nil {
		c.mem.h.SetASN(timing.GlobalASN) // kernel pages are global (ASM)
	}
	m.setTruth(c)
	c.cpu.PC = entry
	c.cpu.R[27] = entry // pv: C entry points compute gp from it
	c.cpu.R[30] = m.kern.stackTop(c.id)
}

// enterIdle starts c's idle loop.
func (m *Machine) enterIdle(c *cpuState) {
	c.cur = nil
	m.enterKernel(c, m.kern.cpuIdle)
	c.cpu.IPL = 0
}

// returnToUser is PALcode's retsys/rti: resume the current process in user
// mode, or the idle loop if there is none.
func (m *Machine) returnToUser(c *cpuState) {
	if c.tickPending {
		// A tick arrived while the kernel ran: take it before user code.
		c.tickPending = false
		m.timerInterrupt(c, c.cur != nil)
		return
	}
	p := c.cur
	if p == nil {
		m.enterIdle(c)
		return
	}
	if p != c.loaded {
		c.ContextSwitches++
		c.loaded = p
	}
	if c.mem != nil {
		c.mem.h.SetASN(asnOf(p))
	}
	c.cpu.SetMode(false)
	c.cpu.IPL = 0
	c.cpu.Load(&p.ctx, p.as)
	m.setTruth(c)
	m.observeMode(c, TransferUserResume)
}

// timerInterrupt enters vmunix's entInt for a clock tick.
func (m *Machine) timerInterrupt(c *cpuState, fromUser bool) {
	m.enterKernel(c, m.kern.entInt)
	c.cpu.IPL = 5   // the clock's level: counter interrupts (6) still come
	c.cpu.R[16] = 1 // clock
	c.cpu.R[17] = b2u(fromUser)
	c.Ticks++
}

// inIdle reports whether c is in the idle loop, where a tick can be taken
// without saving anything: the loop restarts from the top after rti.
func (m *Machine) inIdle(c *cpuState) bool {
	return c.cpu.Kernel && c.cur == nil && c.cpu.PC >= m.kern.idleLo && c.cpu.PC < m.kern.idleHi
}

// simcall carries out a CALL_PAL cserve from vmunix. The result goes to v0.
func (m *Machine) simcall(c *cpuState) {
	r := &c.cpu.R
	fn, a1, a2, a3 := r[16], r[17], r[18], r[19]
	p := c.cur
	var v0 uint64
	switch fn {
	case simSyscall:
		if p == nil {
			break
		}
		m.syscall(c, p)
	case simConsoleWrite:
		v0 = m.consoleWrite(p, a1, a2, a3)
	case simConsoleRead:
		v0 = m.consoleRead(p, a1, a2, a3)
	case simSetRet:
		if p != nil {
			p.ctx.R[0], p.ctx.R[19] = a1, a2
		}
	case simSchedule:
		if p != nil {
		}
		m.schedule(c)
	case simUserRange:
		perm := alpha.PermR
		if a3 != 0 {
			perm = alpha.PermW
		}
		if p == nil || m.touch(p, a1, a2, perm) != 0 {
			v0 = negErrno(eFAULT)
		}
	case simPageFault:
		v0 = 1
		if p != nil && m.demandPage(p, a1) {
			v0 = 0
		} else if p != nil {
			m.fatal(c, p, sigSEGV, alpha.Trap{Kind: alpha.TrapSegv, PC: p.ctx.PC, Addr: a1})
		}
	case simTick:
		// Time-driven work of the simulated kernel happens at quantum
		// boundaries (wakeSleepers); the tick itself needs nothing more.
	default:
		v0 = negErrno(eINVAL)
	}
	r[0] = v0
}

// consoleWrite writes n bytes of kernel memory at buf to fd 1 or 2, or to
// an output file p opened through Config.OpenAppend.
func (m *Machine) consoleWrite(p *Process, fd, buf, n uint64) uint64 {
	if p != nil && p.outFiles[fd] != nil {
		b := make([]byte, min(n, 1<<20))
		if m.kern.as.ReadBytes(buf, b) != nil {
			return negErrno(eFAULT)
		}
		p.outFiles[fd].Write(b)
		return uint64(len(b))
	}
	if fd != 1 && fd != 2 {
		return negErrno(eBADF)
	}
	b := make([]byte, min(n, 1<<20))
	if m.kern.as.ReadBytes(buf, b) != nil {
		return negErrno(eFAULT)
	}
	if fd == 1 {
		m.stdout.Write(b)
	} else {
		m.stderr.Write(b)
	}
	return uint64(len(b))
}

// consoleRead reads from stdin, or a file p opened (vfscalls.go), into
// kernel memory; fds 1 and 2 are write-only.
func (m *Machine) consoleRead(p *Process, fd, buf, n uint64) uint64 {
	if p != nil && p.mm().rfiles[fd] != nil {
		return m.kernelFileRead(p.mm().rfiles[fd], buf, n)
	}
	if fd != 0 {
		return negErrno(eBADF)
	}
	if m.stdin == nil || n == 0 {
		return 0
	}
	b := make([]byte, min(n, 1<<20))
	k, _ := m.stdin.Read(b)
	if m.kern.as.WriteBytes(buf, b[:k]) != nil {
		return negErrno(eFAULT)
	}
	return uint64(k)
}

// schedule is SIM_SCHEDULE: choose what c runs when vmunix returns. The
// current process keeps the CPU unless it blocked, exited, or used up its
// time slice with others waiting.
func (m *Machine) schedule(c *cpuState) {
	if p := c.cur; p != nil {
		if p.state == ProcRunnable && len(c.runq) == 0 {
			return
		}
		c.cur = nil
		if p.state == ProcRunnable {
			c.runq = append(c.runq, p)
		}
	}
	if len(c.runq) > 0 {
		c.cur = c.runq[0]
		c.runq = c.runq[1:]
		c.cur.cpu = c.id
	}
}

// asnOf is the address-space number the TLBs and I-cache tag p's
// translations with.
func asnOf(p *Process) uint8 { return uint8(p.PID%254 + 1) } // 0xff is global

// freshASN forgets, on every CPU, the translations cached under the ASN of
// p, which has a new address space (exec) or a PID that had another one.
func (m *Machine) freshASN(p *Process) {
	for _, c := range m.cpus {
		if c.mem != nil {
			c.mem.h.FlushASN(asnOf(p))
		}
		if c.loaded == p {
			c.loaded = nil
		}
	}
}
