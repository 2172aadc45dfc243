package hwsim

import (
	"fmt"
	"io"
	"strings"

	"dcpi/hwsim/alpha"
	"dcpi/hwsim/ev6"
	"dcpi/hwsim/timing"
)

// Config describes a simulated host. The zero value is not valid; start
// from DefaultConfig.
type Config struct {
	// Hostname is what uname reports.
	Hostname string
	// CPUs is the number of processors (default 4).
	CPUs int
	// Model is the CPU implementation (default the 21164, EV5).
	Model alpha.Model
	// ClockHz is the processor clock (default 333 MHz, the paper's hosts).
	ClockHz uint64
	// Seed makes everything random on the machine (getrandom, AT_RANDOM)
	// reproducible: the same machine, seed and inputs give the same run.
	Seed uint64
	// Quantum is how many cycles each CPU runs before the next CPU takes
	// its turn; CPUs meet at every quantum boundary, where processes move
	// between run queues. Smaller is finer interleaving, larger is faster.
	Quantum uint64
	// TimeSlice is how many cycles a process runs before a CPU with other
	// runnable processes preempts it.
	TimeSlice uint64
	// PIDMax is the largest PID before allocation wraps around and reuses
	// free PIDs, as Linux's pid_max does (default 32768).
	PIDMax int
	// BootTime is the wall-clock time, in Unix seconds, at cycle zero.
	BootTime int64
	// Stdout and Stderr receive what simulated processes write to file
	// descriptors 1 and 2; nil discards it. Stdin is read by fd 0.
	Stdout, Stderr io.Writer
	Stdin          io.Reader
	// Files is the simulated file system: absolute path to contents. exec
	// finds programs here.
	Files map[string][]byte
	// Sysroot is a host directory the simulated file system shows, read-
	// only, beneath Files (a path of Files wins): a dynamically linked
	// program's interpreter and libraries are read from it, and paths are
	// confined to it ("..", symbolic links). DefaultConfig sets
	// DefaultSysroot, the Alpha cross toolchain's; empty means none.
	Sysroot string
	// OpenAppend, if set, lets a simulated program create or append to an
	// output file: open/openat with O_WRONLY|O_CREAT|O_APPEND calls it with
	// the path the program gave and writes go to the writer it returns (the
	// machine never closes it). Nil keeps the file system read-only (every
	// such open fails with ENOENT). dcpi pp's instrumented programs dump
	// their counters this way (docs/instrument.md).
	OpenAppend func(path string) (io.Writer, error)
	// MaxMemory caps the simulated pages of all processes, in bytes; an
	// allocation beyond it fails with ENOMEM rather than exhausting the host.
	MaxMemory uint64
	// Trace, if set, receives one line per system call (an strace).
	Trace io.Writer
	// Timing runs the model's timing: the 21164's in-order issue model for
	// EV5-class models, the 21264's out-of-order core (package ev6) for
	// ev6 and ev67. Without it every instruction takes one cycle (faster,
	// for functional runs).
	Timing bool
	// GroundTruth collects, per instruction, what the timing model knows
	// (Machine.GroundTruth); it slows simulation several times.
	GroundTruth bool
	// SkidTruth records, for every counter interrupt, the instruction
	// whose event overflowed the counter and the one the interrupt was
	// taken at (Machine.Skids): the counters' skid. Off, it costs nothing
	// (the PMU notes the overflowing instruction either way, once per
	// overflow).
	SkidTruth bool
	// PICEvents are the two events the rdpic PAL call returns (hwsim's
	// extension after UltraSPARC's user-readable PICs; docs/hwsim.md):
	// any event but cycles and issues, which rpcc and the instruction
	// count give. Nil means D-cache and I-cache misses.
	PICEvents []alpha.Event
	// MemoryParams are the caches', TLBs', write buffer's and branch
	// predictor's parameters (each with its source in package timing).
	MemoryParams timing.Params
	// EV6Params are the 21264 core's parameters (each with its source in
	// package ev6); the zero value means ev6.DefaultParams.
	EV6Params ev6.Params
}

// DefaultConfig returns the configuration of a 4-CPU 333 MHz 21164 host.
func DefaultConfig() Config {
	return Config{
		Hostname:     "alpha0",
		CPUs:         4,
		Model:        alpha.EV5,
		ClockHz:      333_000_000,
		Seed:         1,
		Quantum:      20_000,
		TimeSlice:    3_330_000, // 10 ms at 333 MHz
		PIDMax:       32768,
		BootTime:     1_767_225_600, // 2026-01-01T00:00:00Z
		MaxMemory:    4 << 30,
		Sysroot:      DefaultSysroot,
		Timing:       true,
		MemoryParams: timing.DefaultParams(),
	}
}

// Validate reports the first problem with c.
func (c *Config) Validate() error {
	switch {
	case c.CPUs < 1 || c.CPUs > 64:
		return fmt.Errorf("hwsim: cpus = %d: want 1 to 64", c.CPUs)
	case c.Model.Name == "":
		return fmt.Errorf("hwsim: no CPU model")
	case c.ClockHz < 1_000_000:
		return fmt.Errorf("hwsim: clock %d Hz: want at least 1 MHz", c.ClockHz)
	case c.Quantum < 100:
		return fmt.Errorf("hwsim: quantum %d cycles: want at least 100", c.Quantum)
	case c.TimeSlice < c.Quantum:
		return fmt.Errorf("hwsim: time slice %d cycles is shorter than the quantum %d", c.TimeSlice, c.Quantum)
	case c.PICEvents != nil && len(c.PICEvents) != 2:
		return fmt.Errorf("hwsim: %d PIC events: want 2", len(c.PICEvents))
	case c.PIDMax < 301 || c.PIDMax > 4_194_304:
		// Linux's PID_MAX_MIN: PIDs wrap to 300, so there must be one above.
		return fmt.Errorf("hwsim: pid_max %d: want 301 to 4194304", c.PIDMax)
	}
	for _, e := range c.PICEvents {
		if e >= alpha.NumEvents || e == alpha.EvCycles || e == alpha.EvIssues {
			return fmt.Errorf("hwsim: PIC event %v: want a counted event other than cycles and issues (rpcc reads cycles)", e)
		}
	}
	return nil
}

// DefaultPICEvents are what rdpic returns unless Config.PICEvents says
// otherwise: D-cache and I-cache misses, the PLDI'97 paper's metrics.
var DefaultPICEvents = [2]alpha.Event{alpha.EvDMiss, alpha.EvIMiss}

// ParsePICEvents parses "A,B", the two event names rdpic is to return
// (dcpi's --pic).
func ParsePICEvents(s string) ([]alpha.Event, error) {
	names := strings.Split(s, ",")
	if len(names) != 2 {
		return nil, fmt.Errorf("%q: want two events, A,B", s)
	}
	out := make([]alpha.Event, 2)
	for i, n := range names {
		e, err := alpha.EventByName(strings.TrimSpace(n))
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

// picEvents returns the two events rdpic returns.
func (c *Config) picEvents() [2]alpha.Event {
	if c.PICEvents == nil {
		return DefaultPICEvents
	}
	return [2]alpha.Event{c.PICEvents[0], c.PICEvents[1]}
}
