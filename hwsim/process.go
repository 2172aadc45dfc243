package hwsim

import (
	"io"
	"sort"

	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
)

// ProcState is where a process is in its life.
type ProcState uint8

// Process states.
const (
	ProcRunnable ProcState = iota // on a run queue or running
	ProcWaiting                   // blocked in wait4 or a sleep
	ProcZombie                    // exited, not yet reaped
	ProcDead                      // reaped; the PID is free
)

// Address-space layout of Linux/Alpha (asm/processor.h).
const (
	stackTop    = 0x120000000   // user stacks grow down from below the text
	stackMax    = 8 << 20       // RLIMIT_STACK default
	mmapBase    = 0x20000000000 // TASK_UNMAPPED_BASE = TASK_SIZE / 2
	taskSize    = 0x40000000000
	pageSize    = alpha.PageSize
	pageMask    = pageSize - 1
	minMmapAddr = 0x10000
)

// vma is a virtual memory area: a range the process may touch. Pages are
// created when first touched (demand-zero), except the image's segments,
// which are loaded at exec.
type vma struct {
	start, end uint64
	perm       alpha.Perm
	kind       vmaKind
}

type vmaKind uint8

const (
	vmaImage vmaKind = iota
	vmaHeap
	vmaStack
	vmaAnon
)

// Process is a simulated Linux task: a process, or one thread of one.
// PID is the process's ID (the thread group's, as getpid reports it), TID
// the task's own; they are equal for a process's first thread. Threads of
// one process share the address space and everything threads.go calls
// per-process state, which lives on the group's leader (mm).
type Process struct {
	PID, PPID int
	TID       int
	// Incarnation changes at fork and exec (see Event.Incarnation).
	Incarnation uint32
	Path        string
	Argv        []string
	Image       *elfimage.Image

	state  ProcState
	ctx    alpha.Context
	as     *alpha.AddressSpace
	vmas   []vma
	brkLo  uint64 // start of the heap (end of the image's last segment)
	brk    uint64
	status int // wait status once a zombie

	cpu      int    // CPU whose run queue holds it, or last ran it
	wakeAt   uint64 // for a sleeping process: machine cycle to wake at
	sleeping bool   // waiting on wakeAt rather than a child
	// waitingFor is the pid argument of the wait4 the process sleeps in.
	waitingFor int

	children []*Process
	parent   *Process

	clearTID uint64 // CLONE_CHILD_CLEARTID / set_tid_address pointer
	thread   threadState
	// outFiles are the output files Config.OpenAppend opened, by fd (>= 3).
	outFiles map[uint64]io.Writer
	// rfiles are the files opened for reading, by fd (vfscalls.go).
	rfiles map[uint64]*openFile
	ieeeFP uint64 // osf_setsysinfo's software FP control word

	// Accounting, in instructions and cycles; Cycles includes KernelCycles,
	// the time vmunix spent on the process's behalf.
	Retired      uint64
	Cycles       uint64
	KernelCycles uint64
	Events       [alpha.NumEvents]uint64 // misses and mispredicts, by alpha.Event
	// picInherited is what rdpic read in the parent at fork: a child's
	// counts continue its parent's, so that a delta across fork is sane.
	picInherited [2]uint64
	PageFaults   uint64
	Syscalls     uint64
	StartCycle   uint64
	ExitCycle    uint64
	forkedFrom   int
	execCount    int
	rlimitStack  uint64
}

// State returns the process's state.
func (p *Process) State() ProcState { return p.state }

// ExitStatus returns the wait status of an exited process: exit code << 8,
// or the terminating signal.
func (p *Process) ExitStatus() int { return p.status }

// ExitCode is the exit code a shell reports for wait status status: the
// program's exit code, or 128+N when signal N ended it.
func ExitCode(status int) int {
	if sig := status & 0x7f; sig != 0 {
		return 128 + sig
	}
	return status >> 8 & 0xff
}

// findVMA returns the area containing addr.
func (p *Process) findVMA(addr uint64) *vma {
	p = p.mm()
	i := sort.Search(len(p.vmas), func(i int) bool { return p.vmas[i].end > addr })
	if i < len(p.vmas) && p.vmas[i].start <= addr {
		return &p.vmas[i]
	}
	return nil
}

// addVMA inserts an area, replacing whatever overlapped it.
func (p *Process) addVMA(v vma) {
	p = p.mm()
	p.removeVMA(v.start, v.end)
	i := sort.Search(len(p.vmas), func(i int) bool { return p.vmas[i].start >= v.start })
	p.vmas = append(p.vmas, vma{})
	copy(p.vmas[i+1:], p.vmas[i:])
	p.vmas[i] = v
}

// removeVMA removes [start, end) from the areas, splitting as needed.
func (p *Process) removeVMA(start, end uint64) {
	p = p.mm()
	out := p.vmas[:0:0]
	for _, v := range p.vmas {
		if v.end <= start || v.start >= end {
			out = append(out, v)
			continue
		}
		if v.start < start {
			out = append(out, vma{start: v.start, end: start, perm: v.perm, kind: v.kind})
		}
		if v.end > end {
			out = append(out, vma{start: end, end: v.end, perm: v.perm, kind: v.kind})
		}
	}
	p.vmas = out
}

// protectVMA sets the permission of [start, end), splitting areas, and
// reports whether the whole range was mapped.
func (p *Process) protectVMA(start, end uint64, perm alpha.Perm) bool {
	p = p.mm()
	covered := uint64(0)
	var add []vma
	for _, v := range p.vmas {
		lo, hi := max(v.start, start), min(v.end, end)
		if lo < hi {
			covered += hi - lo
			add = append(add, vma{start: lo, end: hi, perm: perm, kind: v.kind})
		}
	}
	if covered != end-start {
		return false
	}
	for _, v := range add {
		p.addVMA(v)
	}
	return true
}

// findFree finds a free, page-aligned range of length n at or above hint,
// searching up from the mmap base as Linux's bottom-up allocator does.
func (p *Process) findFree(hint, n uint64) (uint64, bool) {
	p = p.mm()
	addr := max(hint, mmapBase)
	for _, v := range p.vmas {
		if v.end <= addr {
			continue
		}
		if v.start >= addr+n {
			break
		}
		addr = v.end
	}
	if addr+n > taskSize || addr+n < addr {
		return 0, false
	}
	return addr, true
}
