package hwsim

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"dcpi/hwsim/alpha"
)

// errno is a Linux/Alpha error number (asm/errno.h; Alpha renumbers
// several, ENOSYS among them).
type errno uint64

const (
	ePERM        errno = 1
	eNOENT       errno = 2
	eSRCH        errno = 3
	e2BIG        errno = 7
	eNOEXEC      errno = 8
	eBADF        errno = 9
	eCHILD       errno = 10
	eNOMEM       errno = 12
	eFAULT       errno = 14
	eINVAL       errno = 22
	eNOTTY       errno = 25
	eSPIPE       errno = 29
	eOPNOTSUPP   errno = 45
	eNAMETOOLONG errno = 63
	eNOSYS       errno = 78
	eNODEV       errno = 19
)

// Outcomes of a system call other than a value or an error.
const (
	// sysBlocked: the process waits; the call is restarted when it wakes.
	sysBlocked errno = 1 << 62
	// sysNoReturn: the process exited or replaced its registers (exec).
	sysNoReturn errno = 1<<62 + 1
	// sysDone: the handler set the registers itself.
	sysDone errno = 1<<62 + 2
)

// syscall carries out the system call p made on c (Linux/Alpha convention:
// number in v0, arguments in a0-a5; result in v0 with a3 = 0, or errno in
// v0 with a3 = 1).
//
// It runs on behalf of vmunix (SIM_SYSCALL), after entSys saved the user
// context to p.ctx: the registers it reads and writes are p's, not the
// CPU's, which are vmunix's at this point.
func (m *Machine) syscall(c *cpuState, p *Process) {
	r := &p.ctx.R
	num := r[0]
	args := [6]uint64{r[16], r[17], r[18], r[19], r[20], r[21]}
	val, err := m.dispatchSyscall(c, p, num, args)
	if m.cfg.Trace != nil {
		m.trace(c, p, num, args, val, err)
	}
	switch err {
	case sysNoReturn, sysDone:
	case sysBlocked:
		p.ctx.PC -= 4 // re-execute the CALL_PAL when woken
		p.state = ProcWaiting
		m.setNeedResched(c, true)
	case 0:
		r[0], r[19] = val, 0
	default:
		r[0], r[19] = uint64(err), 1
	}
}

func (m *Machine) trace(c *cpuState, p *Process, num uint64, a [6]uint64, val uint64, err errno) {
	name := syscallNames[num]
	if name == "" {
		name = fmt.Sprintf("syscall_%d", num)
	}
	var res string
	switch err {
	case 0:
		res = fmt.Sprintf("%#x", val)
	case sysBlocked:
		res = "? (blocked)"
	case sysNoReturn, sysDone:
		res = "?"
	default:
		res = fmt.Sprintf("-1 errno %d", err)
	}
	who := fmt.Sprintf("pid %d", p.PID)
	if p.TID != p.PID {
		who += fmt.Sprintf(" tid %d", p.TID)
	}
	fmt.Fprintf(m.cfg.Trace, "[cpu%d %d %s] %s(%#x, %#x, %#x, %#x) = %s\n", c.id, c.cpu.Cycle, who, name, a[0], a[1], a[2], a[3], res)
}

func (m *Machine) dispatchSyscall(c *cpuState, p *Process, num uint64, a [6]uint64) (uint64, errno) {
	if val, err, ok := m.taskSyscall(c, p, num, a); ok { // threads.go
		return val, err
	}
	if v, err, ok := m.fileSyscall(c, p, num, a); ok {
		return v, err // the simulated file system's calls (vfscalls.go)
	}
	switch num {
	case 3: // read
		return m.sysRead(p, a[0], a[1], a[2])
	case 4: // write
		return m.sysWrite(p, a[0], a[1], a[2])
	case 120, 121: // readv, writev
		return m.sysVector(p, num == 121, a[0], a[1], a[2])
	case 6: // close
		if a[0] <= 2 {
			return 0, 0
		}
		if _, ok := p.outFiles[a[0]]; ok {
			delete(p.outFiles, a[0])
			return 0, 0
		}
		return 0, eBADF
	case 17: // brk (osf_brk: ENOMEM on failure rather than the old break)
		return m.sysBrk(p.mm(), a[0])
	case 20: // getxpid: pid in v0, parent's in a4
		p.ctx.R[0], p.ctx.R[19], p.ctx.R[20] = uint64(p.PID), 0, uint64(p.ppid())
		return 0, sysDone
	case 24, 47: // getxuid, getxgid: real in v0, effective in a4
		p.ctx.R[0], p.ctx.R[19], p.ctx.R[20] = 1000, 0, 1000
		return 0, sysDone
	case 530, 531: // getegid, geteuid
		return 1000, 0
	case 532: // getppid
		return uint64(p.ppid()), 0
	case 54: // ioctl: no terminals here
		if a[0] <= 2 || p.outFiles[a[0]] != nil {
			return 0, eNOTTY
		}
		return 0, eBADF
	case 58: // readlink
		return m.sysReadlink(p, a[0], a[1], a[2])
	case 59: // execve
		return m.sysExecve(c, p, a[0], a[1], a[2])
	case 7, 365: // osf_wait4, wait4
		return m.sysWait4(p, a[0], a[1], a[2], a[3])
	case 71: // mmap
		return m.sysMmap(p, a[0], a[1], a[2], a[3], a[4])
	case 73: // munmap
		return m.sysMunmap(p, a[0], a[1])
	case 74: // mprotect
		return m.sysMprotect(p, a[0], a[1], a[2])
	case 341: // mremap
		return m.sysMremap(p, a[0], a[1], a[2], a[3])
	case 75: // madvise
		return m.sysMadvise(c, p, a[0], a[1], a[2])
	case 256: // osf_getsysinfo
		if a[0] == 45 { // GSI_IEEE_FP_CONTROL
			return 0, m.putU64(p, a[1], p.ieeeFP)
		}
		return m.unimplemented(c, p, "osf_getsysinfo operation %d", a[0])
	case 257: // osf_setsysinfo
		if a[0] != 14 { // SSI_IEEE_FP_CONTROL
			return m.unimplemented(c, p, "osf_setsysinfo operation %d", a[0])
		}
		v, err := m.getU64(p, a[1])
		if err != 0 {
			return 0, err
		}
		p.ieeeFP = v
		return 0, 0
	case 339: // uname
		return m.sysUname(p, a[0])
	case 496, 144: // prlimit64, getrlimit
		res, old := a[1], a[3]
		if num == 144 {
			res, old = a[0], a[1]
		}
		return m.sysGetrlimit(p, res, old)
	case 511: // getrandom
		return m.sysGetrandom(p, a[0], a[1])
	case 420: // clock_gettime
		return m.sysClockGettime(c, p, a[0], a[1])
	case 421: // clock_getres
		if a[1] != 0 {
			return 0, m.putU64s(p, a[1], 0, 1)
		}
		return 0, 0
	case 359: // gettimeofday
		if a[0] != 0 {
			ns := m.wallNanos(c)
			return 0, m.putU64s(p, a[0], uint64(ns/1e9), uint64(ns%1e9/1e3))
		}
		return 0, 0
	case 340: // nanosleep
		return m.sysNanosleep(c, p, a[0])
	case 422: // clock_nanosleep
		return m.sysClockNanosleep(c, p, a[0], a[1], a[2])
	case 334: // sched_yield
		if len(c.runq) > 0 {
			m.setNeedResched(c, true)
		}
		return 0, 0
	case 364: // getrusage
		return 0, m.userWrite(p, a[1], m.rusage(p))
	case 323: // times
		if a[0] != 0 {
			ticks := p.Cycles * 1024 / m.cfg.ClockHz
			if err := m.putU64s(p, a[0], ticks, 0, 0, 0); err != 0 {
				return 0, err
			}
		}
		return m.cycleOf(c) * 1024 / m.cfg.ClockHz, 0
	case 91: // fstat (old struct stat)
		return m.sysFstat(p, a[0], a[1])
	case 455: // fstatat64
		return m.sysFstatat(p, a[0], a[1], a[2], a[3])
	case 33, 462: // access, faccessat
		path := a[0]
		if num == 462 {
			path = a[1]
		}
		s, err := p.as.ReadString(path, 4096)
		if err != nil {
			return 0, eFAULT
		}
		if _, ok := m.cfg.Files[s]; ok {
			return 0, 0
		}
		return 0, eNOENT
	case 45, 450: // open, openat: the file system holds only programs to exec
		if num == 450 {
			return m.sysOpenAppend(p, a[1], a[2])
		}
		return m.sysOpenAppend(p, a[0], a[1])
	case 19: // lseek
		if a[0] <= 2 {
			return 0, eSPIPE
		}
		if p.outFiles[a[0]] != nil {
			return m.unimplemented(c, p, "lseek of an output file")
		}
		return 0, eBADF
	case 92: // fcntl
		if a[0] > 2 && p.outFiles[a[0]] == nil {
			return 0, eBADF
		}
		switch a[1] {
		case 3: // F_GETFL
			if a[0] > 2 {
				return oWronly | oAppend, 0
			}
			return 2, 0 // O_RDWR
		case 1, 2: // F_GETFD, F_SETFD: no close-on-exec is kept
			return 0, 0
		}
		return m.unimplemented(c, p, "fcntl command %d", a[1])
	case 367: // getcwd
		if a[1] < 2 {
			return 0, 34 // ERANGE
		}
		return 2, m.userWrite(p, a[0], []byte("/\x00"))
	case 318: // sysinfo
		return 0, m.userWrite(p, a[0], m.sysinfo(c))
	case 324: // personality
		return 0, 0
	case 396: // sched_getaffinity
		if a[1] < 8 || a[1]&7 != 0 {
			return 0, eINVAL
		}
		return 8, m.putU64(p, a[2], 1<<len(m.cpus)-1)
	}
	return m.unimplementedSyscall(c, p, num)
}

func (p *Process) ppid() int {
	if p.mm().parent == nil {
		return 1
	}
	return p.mm().parent.PID
}

// userRead copies n bytes from user memory, faulting pages of p's areas in
// as the kernel's copy_from_user would.
func (m *Machine) userRead(p *Process, addr, n uint64) ([]byte, errno) {
	if n > 1<<30 {
		return nil, eFAULT
	}
	if err := m.touch(p, addr, n, alpha.PermR); err != 0 {
		return nil, err
	}
	b := make([]byte, n)
	if p.as.ReadBytes(addr, b) != nil {
		return nil, eFAULT
	}
	return b, 0
}

// userWrite copies b to user memory that p may write.
func (m *Machine) userWrite(p *Process, addr uint64, b []byte) errno {
	if err := m.touch(p, addr, uint64(len(b)), alpha.PermW); err != 0 {
		return err
	}
	if p.as.WriteBytes(addr, b) != nil {
		return eFAULT
	}
	return 0
}

// touch checks that [addr, addr+n) lies in areas allowing perm and makes
// its pages present.
func (m *Machine) touch(p *Process, addr, n uint64, perm alpha.Perm) errno {
	if n == 0 {
		return 0
	}
	if addr+n < addr {
		return eFAULT
	}
	for pg := addr &^ pageMask; pg < addr+n; pg += pageSize {
		v := p.findVMA(pg)
		if v == nil || v.perm&perm != perm {
			return eFAULT
		}
		if !p.as.Mapped(pg) && !m.demandPage(p, pg) {
			return eFAULT
		}
	}
	return 0
}

func (m *Machine) putU64(p *Process, addr, v uint64) errno { return m.putU64s(p, addr, v) }

func (m *Machine) putU64s(p *Process, addr uint64, vs ...uint64) errno {
	b := make([]byte, 8*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint64(b[8*i:], v)
	}
	return m.userWrite(p, addr, b)
}

func (m *Machine) getU64(p *Process, addr uint64) (uint64, errno) {
	b, err := m.userRead(p, addr, 8)
	if err != 0 {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), 0
}

func (m *Machine) sysRead(p *Process, fd, buf, n uint64) (uint64, errno) {
	if fd != 0 {
		if fd <= 2 {
			return 0, eBADF // stdout and stderr are write-only here
		}
		return 0, eBADF
	}
	if m.stdin == nil || n == 0 {
		return 0, 0
	}
	b := make([]byte, min(n, 1<<20))
	k, _ := m.stdin.Read(b)
	return uint64(k), m.userWrite(p, buf, b[:k])
}

// Linux/Alpha's open flags (asm/fcntl.h) that Config.OpenAppend serves.
const (
	oAccMode = 3
	oWronly  = 1
	oAppend  = 0o10
	oCreat   = 0o1000
)

// sysOpenAppend opens an output file through Config.OpenAppend: only a
// write-only, creating, appending open, the one an instrumented program's
// counter dump makes; anything else finds no file, as before.
func (m *Machine) sysOpenAppend(p *Process, pathp, flags uint64) (uint64, errno) {
	if m.cfg.OpenAppend == nil || flags&oAccMode != oWronly || flags&(oCreat|oAppend) != oCreat|oAppend {
		return 0, eNOENT
	}
	path, err := p.as.ReadString(pathp, 4096)
	if err != nil {
		return 0, eFAULT
	}
	w, oerr := m.cfg.OpenAppend(path)
	if oerr != nil {
		return 0, eNOENT
	}
	if p.outFiles == nil {
		p.outFiles = make(map[uint64]io.Writer)
	}
	fd := uint64(3)
	for p.outFiles[fd] != nil {
		fd++
	}
	p.outFiles[fd] = w
	return fd, 0
}

func (m *Machine) sysWrite(p *Process, fd, buf, n uint64) (uint64, errno) {
	if w := p.outFiles[fd]; w != nil {
		b, err := m.userRead(p, buf, n)
		if err != 0 {
			return 0, err
		}
		w.Write(b)
		return n, 0
	}
	if fd != 1 && fd != 2 {
		return 0, eBADF
	}
	b, err := m.userRead(p, buf, n)
	if err != 0 {
		return 0, err
	}
	if fd == 1 {
		m.stdout.Write(b)
	} else {
		m.stderr.Write(b)
	}
	return n, 0
}

func (m *Machine) sysVector(p *Process, write bool, fd, iov, cnt uint64) (uint64, errno) {
	if cnt > 1024 {
		return 0, eINVAL
	}
	raw, err := m.userRead(p, iov, 16*cnt)
	if err != 0 {
		return 0, err
	}
	var total uint64
	for i := uint64(0); i < cnt; i++ {
		base := binary.LittleEndian.Uint64(raw[16*i:])
		n := binary.LittleEndian.Uint64(raw[16*i+8:])
		var k uint64
		if write {
			k, err = m.sysWrite(p, fd, base, n)
		} else {
			k, err = m.sysRead(p, fd, base, n)
		}
		if err != 0 {
			if total > 0 {
				return total, 0
			}
			return 0, err
		}
		total += k
		if k < n {
			break
		}
	}
	return total, 0
}

func (m *Machine) sysBrk(p *Process, addr uint64) (uint64, errno) {
	if addr == 0 || addr == p.brk {
		return p.brk, 0
	}
	if addr < p.brkLo {
		return 0, eNOMEM
	}
	oldEnd := (p.brk + pageMask) &^ pageMask
	newEnd := (addr + pageMask) &^ pageMask
	switch {
	case newEnd > oldEnd:
		for _, v := range p.vmas {
			if v.start < newEnd && v.end > oldEnd {
				return 0, eNOMEM // would run into another mapping
			}
		}
		if newEnd-p.brkLo > m.cfg.MaxMemory {
			return 0, eNOMEM
		}
		p.addVMA(vma{start: p.brkLo, end: newEnd, perm: alpha.PermR | alpha.PermW, kind: vmaHeap})
	case newEnd < oldEnd:
		p.removeVMA(newEnd, oldEnd)
		p.as.Unmap(newEnd, oldEnd-newEnd)
		if newEnd > p.brkLo {
			p.addVMA(vma{start: p.brkLo, end: newEnd, perm: alpha.PermR | alpha.PermW, kind: vmaHeap})
		}
	}
	p.brk = addr
	return addr, 0
}

func (m *Machine) sysReadlink(p *Process, path, buf, n uint64) (uint64, errno) {
	s, err := p.as.ReadString(path, 4096)
	if err != nil {
		return 0, eFAULT
	}
	if s != "/proc/self/exe" {
		return 0, eNOENT
	}
	b := []byte(p.Path)
	if uint64(len(b)) > n {
		b = b[:n]
	}
	return uint64(len(b)), m.userWrite(p, buf, b)
}

// readStrings reads a NULL-terminated array of string pointers.
func (m *Machine) readStrings(p *Process, addr uint64) ([]string, errno) {
	var out []string
	total := 0
	for addr != 0 {
		ptr, err := m.getU64(p, addr+8*uint64(len(out)))
		if err != 0 {
			return nil, err
		}
		if ptr == 0 {
			break
		}
		s, rerr := p.as.ReadString(ptr, 128<<10)
		if rerr != nil {
			return nil, eFAULT
		}
		total += len(s) + 1
		if len(out) > 4096 || total > 1<<20 {
			return nil, e2BIG
		}
		out = append(out, s)
	}
	return out, 0
}

func (m *Machine) sysExecve(c *cpuState, p *Process, pathp, argvp, envp uint64) (uint64, errno) {
	path, rerr := p.as.ReadString(pathp, 4096)
	if rerr != nil {
		return 0, eFAULT
	}
	argv, err := m.readStrings(p, argvp)
	if err != 0 {
		return 0, err
	}
	env, err := m.readStrings(p, envp)
	if err != 0 {
		return 0, err
	}
	if _, ok := m.cfg.Files[path]; !ok {
		return 0, eNOENT
	}
	im, ierr := m.image(path)
	if ierr != nil {
		return 0, eNOEXEC
	}
	if m.exec(p, c, path, im, argv, env) != nil {
		return 0, e2BIG
	}
	return 0, sysNoReturn // vmunix returns into the new image's context
}

// Clone flags (linux/sched.h).
const (
	cloneVM            = 0x00000100
	cloneVFork         = 0x00004000
	cloneThread        = 0x00010000
	cloneSetTLS        = 0x00080000
	cloneParentSetTID  = 0x00100000
	cloneChildClearTID = 0x00200000
	cloneChildSetTID   = 0x01000000
)

func (m *Machine) sysClone(c *cpuState, p *Process, flags, newsp, ptid, ctid, tls uint64) (uint64, errno) {
	// A new process (threads are sysCloneThread's): a copy-on-write copy
	// of the address space, one thread, a copy of the calling one.
	pid, ok := m.allocPID()
	if !ok {
		return 0, errno(35) // EAGAIN
	}
	lead := p.mm()
	child := &Process{
		PID: pid, TID: pid, parent: lead, Path: p.Path, Argv: p.Argv, Image: p.Image,
		as: p.as.Fork(), vmas: append([]vma(nil), lead.vmas...),
		brkLo: lead.brkLo, brk: lead.brk, ieeeFP: p.ieeeFP, rlimitStack: p.rlimitStack,
		StartCycle: c.cpu.Cycle, forkedFrom: p.PID, rfiles: lead.forkFiles(),
	}
	child.thread.sigMask = p.thread.sigMask
	if len(lead.thread.actions) > 0 {
		child.thread.actions = make(map[int]sigAction, len(lead.thread.actions))
		for s, a := range lead.thread.actions {
			child.thread.actions[s] = a
		}
	}
	m.chargeEvents(c, p)
	child.picInherited = m.picCounts(p)
	if len(p.outFiles) > 0 {
		child.outFiles = make(map[uint64]io.Writer, len(p.outFiles))
		for fd, w := range p.outFiles {
			child.outFiles[fd] = w
		}
	}
	// The child starts where the parent returns, with v0 = 0 and no error.
	child.ctx = p.ctx
	child.ctx.R[0], child.ctx.R[19], child.ctx.R[20] = 0, 0, 0
	if newsp != 0 {
		child.ctx.R[30] = newsp
	}
	if flags&cloneSetTLS != 0 {
		child.ctx.Unique = tls
	}
	pidBytes := binary.LittleEndian.AppendUint32(nil, uint32(pid))
	if flags&cloneChildSetTID != 0 {
		m.userWrite(child, ctid, pidBytes)
	}
	if flags&cloneChildClearTID != 0 {
		child.clearTID = ctid
	}
	if flags&cloneParentSetTID != 0 {
		m.userWrite(p, ptid, pidBytes)
	}
	lead.children = append(lead.children, child)
	m.procs[pid] = child
	m.freshASN(child)
	target := m.leastLoaded()
	m.lastInc++
	child.Incarnation = m.lastInc
	m.emit(Event{Kind: EventFork, Cycle: c.cpu.Cycle, CPU: target.id, PID: pid, PPID: p.PID,
		Incarnation: child.Incarnation, ParentIncarnation: p.Incarnation})
	m.enqueue(target, child)
	p.ctx.R[20] = 0
	return uint64(pid), 0
}

func (m *Machine) sysWait4(p *Process, pidArg, statusp, options, rusagep uint64) (uint64, errno) {
	want := int(int32(pidArg))
	if want < -1 || want == 0 {
		want = -1 // process groups: every child is in ours
	}
	var found bool
	for _, ch := range p.mm().children {
		if want != -1 && ch.PID != want {
			continue
		}
		found = true
		if ch.state != ProcZombie {
			continue
		}
		if statusp != 0 {
			if err := m.userWrite(p, statusp, binary.LittleEndian.AppendUint32(nil, uint32(ch.status))); err != 0 {
				return 0, err
			}
		}
		if rusagep != 0 {
			if err := m.userWrite(p, rusagep, m.rusage(ch)); err != 0 {
				return 0, err
			}
		}
		pid := ch.PID
		m.reap(ch)
		return uint64(pid), 0
	}
	if !found {
		return 0, eCHILD
	}
	if options&1 != 0 { // WNOHANG
		return 0, 0
	}
	p.waitingFor = want
	p.sleeping = false
	return 0, sysBlocked
}

// rusage encodes struct rusage: user and system time, then 14 longs.
func (m *Machine) rusage(p *Process) []byte {
	b := make([]byte, 144)
	us := p.Cycles * 1_000_000 / m.cfg.ClockHz
	binary.LittleEndian.PutUint64(b[0:], us/1_000_000)
	binary.LittleEndian.PutUint64(b[8:], us%1_000_000)
	binary.LittleEndian.PutUint64(b[32+8*5:], p.PageFaults) // ru_minflt
	return b
}

func protPerm(prot uint64) alpha.Perm {
	var perm alpha.Perm
	if prot&1 != 0 {
		perm |= alpha.PermR
	}
	if prot&2 != 0 {
		perm |= alpha.PermW | alpha.PermR
	}
	if prot&4 != 0 {
		perm |= alpha.PermX | alpha.PermR
	}
	return perm
}

func (m *Machine) sysMmap(p *Process, addr, length, prot, flags, fd uint64) (uint64, errno) {
	const mapFixed, mapAnon = 0x100, 0x10
	if flags&mapAnon == 0 {
		if int64(fd) < 0 {
			return 0, eBADF
		}
		return 0, eNODEV // no files to map
	}
	if length == 0 || length > m.cfg.MaxMemory {
		return 0, eINVAL
	}
	n := (length + pageMask) &^ pageMask
	if flags&mapFixed != 0 {
		if addr&pageMask != 0 || addr < minMmapAddr || addr+n > taskSize {
			return 0, eINVAL
		}
		p.removeVMA(addr, addr+n)
		p.as.Unmap(addr, n)
	} else {
		var ok bool
		if addr, ok = p.findFree(addr&^pageMask, n); !ok {
			return 0, eNOMEM
		}
	}
	p.addVMA(vma{start: addr, end: addr + n, perm: protPerm(prot), kind: vmaAnon})
	return addr, 0
}

func (m *Machine) sysMunmap(p *Process, addr, length uint64) (uint64, errno) {
	if addr&pageMask != 0 || length == 0 {
		return 0, eINVAL
	}
	n := (length + pageMask) &^ pageMask
	p.removeVMA(addr, addr+n)
	p.as.Unmap(addr, n)
	return 0, 0
}

func (m *Machine) sysMprotect(p *Process, addr, length, prot uint64) (uint64, errno) {
	if addr&pageMask != 0 {
		return 0, eINVAL
	}
	n := (length + pageMask) &^ pageMask
	perm := protPerm(prot)
	if !p.protectVMA(addr, addr+n, perm) {
		return 0, eNOMEM
	}
	p.as.Protect(addr, n, perm)
	return 0, 0
}

func (m *Machine) sysMremap(p *Process, old, oldSize, newSize, flags uint64) (uint64, errno) {
	const mayMove = 1
	if old&pageMask != 0 || newSize == 0 {
		return 0, eINVAL
	}
	oldN := (oldSize + pageMask) &^ pageMask
	newN := (newSize + pageMask) &^ pageMask
	v := p.findVMA(old)
	if v == nil || v.end < old+oldN {
		return 0, eFAULT
	}
	perm, kind := v.perm, v.kind
	if newN <= oldN {
		p.removeVMA(old+newN, old+oldN)
		p.as.Unmap(old+newN, oldN-newN)
		return old, 0
	}
	if newN > m.cfg.MaxMemory {
		return 0, eNOMEM
	}
	if free, ok := p.findFree(old+oldN, newN-oldN); ok && free == old+oldN {
		p.addVMA(vma{start: old, end: old + newN, perm: perm, kind: kind})
		return old, 0
	}
	if flags&mayMove == 0 {
		return 0, eNOMEM
	}
	to, ok := p.findFree(mmapBase, newN)
	if !ok {
		return 0, eNOMEM
	}
	p.removeVMA(old, old+oldN)
	p.as.Move(old, to, oldN)
	p.addVMA(vma{start: to, end: to + newN, perm: perm, kind: kind})
	return to, 0
}

func (m *Machine) sysUname(p *Process, buf uint64) (uint64, errno) {
	fields := []string{"Linux", m.cfg.Hostname, "6.1.0-dcpi", "#1 SMP hwsim", "alpha", "(none)"}
	b := make([]byte, 65*len(fields))
	for i, f := range fields {
		copy(b[65*i:65*i+64], f)
	}
	return 0, m.userWrite(p, buf, b)
}

func (m *Machine) sysGetrlimit(p *Process, res, old uint64) (uint64, errno) {
	const inf = ^uint64(0)
	if old == 0 {
		return 0, 0
	}
	cur, max := inf, inf
	switch res {
	case 3: // RLIMIT_STACK
		cur = p.rlimitStack
	case 6: // RLIMIT_NOFILE on Alpha
		cur, max = 1024, 4096
	}
	return 0, m.putU64s(p, old, cur, max)
}

func (m *Machine) sysGetrandom(p *Process, buf, n uint64) (uint64, errno) {
	n = min(n, 1<<20)
	b := make([]byte, n)
	m.rand.Read(b)
	return n, m.userWrite(p, buf, b)
}

// wallNanos is the wall-clock time on c in nanoseconds since the epoch.
func (m *Machine) wallNanos(c *cpuState) int64 {
	return m.cfg.BootTime*1e9 + int64(m.nanos(m.cycleOf(c)))
}

func (m *Machine) nanos(cycles uint64) uint64 {
	return cycles/m.cfg.ClockHz*1e9 + cycles%m.cfg.ClockHz*1e9/m.cfg.ClockHz
}

func (m *Machine) sysClockGettime(c *cpuState, p *Process, clk, ts uint64) (uint64, errno) {
	var ns uint64
	switch clk {
	case 0, 5: // REALTIME, REALTIME_COARSE
		ns = uint64(m.wallNanos(c))
	case 1, 4, 6, 7: // MONOTONIC, _RAW, _COARSE, BOOTTIME
		ns = m.nanos(m.cycleOf(c))
	case 2, 3: // PROCESS_CPUTIME_ID, THREAD_CPUTIME_ID
		ns = m.nanos(p.Cycles)
	default:
		return 0, eINVAL
	}
	return 0, m.putU64s(p, ts, ns/1e9, ns%1e9)
}

func (m *Machine) sysNanosleep(c *cpuState, p *Process, req uint64) (uint64, errno) {
	b, err := m.userRead(p, req, 16)
	if err != 0 {
		return 0, err
	}
	sec, nsec := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
	if int64(sec) < 0 || nsec >= 1e9 {
		return 0, eINVAL
	}
	cycles := sec*m.cfg.ClockHz + nsec*m.cfg.ClockHz/1e9
	// Return 0 now and sleep: the call completes when the process wakes.
	p.ctx.R[0], p.ctx.R[19] = 0, 0
	p.wakeAt = c.cpu.Cycle + cycles
	p.sleeping = true
	p.state = ProcWaiting
	m.setNeedResched(c, true)
	return 0, sysDone
}

// unqueue removes p from whichever run queue holds it.
func (m *Machine) unqueue(p *Process) {
	for _, c := range m.cpus {
		for i, q := range c.runq {
			if q == p {
				c.runq = append(c.runq[:i], c.runq[i+1:]...)
				return
			}
		}
	}
}

// fdStat describes fds 0-2 as pipes, so stdio buffers fully, as it does
// when a test harness captures a native program's output.
const modeFIFO = 0x1000 | 0o600

func (m *Machine) sysFstat(p *Process, fd, buf uint64) (uint64, errno) {
	if fd > 2 {
		return 0, eBADF
	}
	b := make([]byte, 80) // the old struct stat
	binary.LittleEndian.PutUint32(b[8:], modeFIFO)
	binary.LittleEndian.PutUint32(b[12:], 1)
	binary.LittleEndian.PutUint32(b[16:], 1000)
	binary.LittleEndian.PutUint32(b[20:], 1000)
	binary.LittleEndian.PutUint32(b[56:], pageSize)
	return 0, m.userWrite(p, buf, b)
}

func (m *Machine) sysFstatat(p *Process, dirfd, pathp, buf, flags uint64) (uint64, errno) {
	const atEmptyPath = 0x1000
	path, err := p.as.ReadString(pathp, 4096)
	if err != nil {
		return 0, eFAULT
	}
	mode, size := uint32(0), uint64(0)
	switch {
	case path == "" && flags&atEmptyPath != 0:
		if dirfd > 2 {
			return 0, eBADF
		}
		mode = modeFIFO
	case strings.HasPrefix(path, "/"):
		data, ok := m.cfg.Files[path]
		if !ok {
			return 0, eNOENT
		}
		mode, size = 0x8000|0o755, uint64(len(data))
	default:
		return 0, eNOENT
	}
	b := make([]byte, 144) // struct stat64
	binary.LittleEndian.PutUint64(b[24:], size)
	binary.LittleEndian.PutUint64(b[32:], (size+511)/512)
	binary.LittleEndian.PutUint32(b[40:], mode)
	binary.LittleEndian.PutUint32(b[44:], 1000)
	binary.LittleEndian.PutUint32(b[48:], 1000)
	binary.LittleEndian.PutUint32(b[52:], pageSize)
	binary.LittleEndian.PutUint32(b[56:], 1)
	return 0, m.userWrite(p, buf, b)
}

// sysinfo encodes struct sysinfo: uptime, loads, memory in bytes (mem_unit
// 1) from MaxMemory, and the process count.
func (m *Machine) sysinfo(c *cpuState) []byte {
	b := make([]byte, 112)
	binary.LittleEndian.PutUint64(b[0:], m.cycleOf(c)/m.cfg.ClockHz)
	binary.LittleEndian.PutUint64(b[32:], m.cfg.MaxMemory) // totalram
	binary.LittleEndian.PutUint64(b[40:], m.cfg.MaxMemory/2)
	binary.LittleEndian.PutUint16(b[80:], uint16(min(len(m.procs), 0xffff)))
	binary.LittleEndian.PutUint32(b[104:], 1) // mem_unit
	return b
}
