package hwsim

import "dcpi/hwsim/alpha"

// The transfer observer: ground truth of every control transfer the CPUs
// execute, for the path-profiling oracle (analysis/oracle) that numbers
// the paths and builds the calling context tree without instrumenting
// anything. It is for tests and ground-truth tools only: nothing in the
// profiling path reads it, and a Machine without an observer pays one nil
// check per instruction.

// TransferKind says what a Transfer reports.
type TransferKind uint8

// Transfer kinds.
const (
	// TransferUser: an instruction in user mode whose successor is not
	// From+4 (a branch taken, a jump, a call, a return).
	TransferUser TransferKind = iota + 1
	// TransferKernel: the same in kernel mode (vmunix and its PAL calls);
	// PID is the process vmunix works for, 0 in the idle loop.
	TransferKernel
	// TransferKernelEntry: PID leaves user mode (a system call, an
	// interrupt, a fault); From is the user PC it would resume at (past
	// the CALL_PAL for a system call, the interrupted or faulting
	// instruction otherwise).
	TransferKernelEntry
	// TransferUserResume: the kernel returns to PID in user mode at To:
	// where it left, unless exec, fork or a new process says otherwise.
	// The first for a process after Spawn or exec is at the image's entry;
	// a forked child's first is where its parent returns from fork.
	TransferUserResume
)

func (k TransferKind) String() string {
	switch k {
	case TransferUser:
		return "user"
	case TransferKernel:
		return "kernel"
	case TransferKernelEntry:
		return "kernel-entry"
	case TransferUserResume:
		return "user-resume"
	}
	return "transfer?"
}

// Transfer is one observed control transfer on one CPU.
type Transfer struct {
	Kind     TransferKind
	CPU      int
	PID      int    // the current process, 0 if none
	From, To uint64 // To is 0 for TransferKernelEntry, From for TransferUserResume
	// Cycle is the CPU's cycle counter after the transferring
	// instruction issued (for the mode switches, at the switch); Retired
	// its instructions retired so far. Cycle deltas between a process's
	// transfers are the cycles its user code spent, kernel excursions
	// excluded when the observer subtracts KernelEntry..UserResume.
	Cycle, Retired uint64
	// IMiss and DMiss are the CPU's I-cache and D-cache (load) misses so
	// far (its PMU totals, counted whether or not a counter is programmed;
	// zero without the timing model): deltas per process as for Cycle.
	IMiss, DMiss uint64
}

// TransferObserver receives every Transfer, synchronously, in each CPU's
// order (CPUs take turns by quantum, so across CPUs the order is the
// simulation's). Process creation, exec and exit arrive as Events through
// Subscribe: an observer that needs them subscribes too.
type TransferObserver interface {
	Transfer(t *Transfer)
}

// SetTransferObserver installs o (nil removes it). Set it before Run.
func (m *Machine) SetTransferObserver(o TransferObserver) {
	m.observer = o
	for _, c := range m.cpus {
		if o == nil {
			c.cpu.OnTransfer = nil
			continue
		}
		c.cpu.OnTransfer = func(from, to uint64) {
			t := Transfer{Kind: TransferUser, CPU: c.id, From: from, To: to, Cycle: c.cpu.Cycle, Retired: c.cpu.Retired,
				IMiss: c.cpu.PMU.Totals[alpha.EvIMiss], DMiss: c.cpu.PMU.Totals[alpha.EvDMiss]}
			if c.cpu.Kernel {
				t.Kind = TransferKernel
			}
			if c.cur != nil {
				t.PID = c.cur.PID
			}
			o.Transfer(&t)
		}
	}
}

// observeMode reports a switch between user and kernel mode on c.
func (m *Machine) observeMode(c *cpuState, kind TransferKind) {
	if m.observer == nil || c.cur == nil {
		return
	}
	t := Transfer{Kind: kind, CPU: c.id, PID: c.cur.PID, Cycle: c.cpu.Cycle, Retired: c.cpu.Retired,
		IMiss: c.cpu.PMU.Totals[alpha.EvIMiss], DMiss: c.cpu.PMU.Totals[alpha.EvDMiss]}
	if kind == TransferKernelEntry {
		t.From = c.cpu.PC
	} else {
		t.From, t.To = c.cpu.PC, c.cpu.PC
	}
	m.observer.Transfer(&t)
}
