package linuxhost

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Event is a sampling event the host can program: its perf type and
// config, and the Alpha event number the database files it under (the
// node's tables key samples by alpha.Event; a Linux profile records its
// real event by name with the machine kind).
type Event struct {
	Name   string
	Type   uint32
	Config uint64
	Alpha  uint8
}

// Events are the events --event accepts. cpu-clock and task-clock are
// the kernel's timers, present everywhere; the rest need a hardware PMU.
var Events = []Event{
	{"cpu-clock", unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_CPU_CLOCK, 0},
	{"task-clock", unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_TASK_CLOCK, 0},
	{"cycles", unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_CPU_CYCLES, 0},
	{"instructions", unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_INSTRUCTIONS, 1},
	{"cache-misses", unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_CACHE_MISSES, 3},
	{"branch-misses", unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_BRANCH_MISSES, 4},
}

// LookupEvent finds an event by name.
func LookupEvent(name string) (Event, error) {
	var names []string
	for _, e := range Events {
		if e.Name == name {
			return e, nil
		}
		names = append(names, e.Name)
	}
	return Event{}, fmt.Errorf("linuxhost: unknown event %q (want one of %s)", name, strings.Join(names, ", "))
}

// ErrPermission is perf_event_open refused for want of privilege.
var ErrPermission = errors.New("linuxhost: not permitted to profile")

// ErrNoPMU is a hardware event on a machine without a PMU for it.
var ErrNoPMU = errors.New("linuxhost: no hardware PMU")

// ParanoidPath is the kernel's setting for unprivileged profiling.
const ParanoidPath = "/proc/sys/kernel/perf_event_paranoid"

// openError explains perf_event_open's err for ev: what to change when
// permission is missing, a one-line refusal for a missing PMU.
func openError(ev Event, systemWide bool, err error) error {
	switch {
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		level := "unknown"
		if b, rerr := os.ReadFile(ParanoidPath); rerr == nil {
			level = strings.TrimSpace(string(b))
		}
		need := "1 (or lower)"
		if systemWide {
			need = "0 (or lower; -1 for kernel samples without CAP_PERFMON)"
		}
		return fmt.Errorf("%w: perf_event_open(%s): %v: run as root (or with CAP_PERFMON), or set %s to %s: it is %s (sudo sysctl kernel.perf_event_paranoid=-1)",
			ErrPermission, ev.Name, err, ParanoidPath, need, level)
	case ev.Type == unix.PERF_TYPE_HARDWARE && (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENODEV)):
		return fmt.Errorf("%w: event %s needs a hardware PMU and this machine has none (no /sys/bus/event_source/devices/cpu, as in most VMs): use --event cpu-clock", ErrNoPMU, ev.Name)
	}
	return fmt.Errorf("linuxhost: perf_event_open(%s): %w", ev.Name, err)
}
