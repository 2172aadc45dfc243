package simhost

import (
	"fmt"
	"io"

	"dcpi/hwsim"
	"dcpi/node"
)

// RecordOptions says what to run to record a trace.
type RecordOptions struct {
	Machine hwsim.Config        // with the programs in Machine.Files
	Profile hwsim.ProfileConfig // what the counters count (DCPI's default: hwsim.DefaultProfile)
	// Programs are the argument vectors of the programs to run at once;
	// argv[0] is the program's path.
	Programs [][]string
	Env      []string
	// Cycles, if not zero, is how long to run, in machine cycles: a program
	// that exits before then is started again (as a new process), so the
	// CPUs stay as busy as the mix makes them. Zero runs each program once,
	// until all have exited.
	Cycles uint64
}

// RecordSummary describes a recorded trace.
type RecordSummary struct {
	Samples   uint64
	Cycles    uint64 // machine time at the end
	Processes int    // programs started (not counting their children)
}

// RecordTrace runs programs on a simulated machine and writes every
// counter interrupt to w as a trace.
func RecordTrace(w io.Writer, o RecordOptions) (RecordSummary, error) {
	var sum RecordSummary
	if len(o.Programs) == 0 {
		return sum, fmt.Errorf("simhost: record: no programs to run")
	}
	m, err := hwsim.New(o.Machine)
	if err != nil {
		return sum, err
	}
	rec, err := NewTraceRecorder(w, o.Machine.CPUs)
	if err != nil {
		return sum, err
	}
	if err := m.StartProfiling(o.Profile, rec); err != nil {
		return sum, err
	}
	procs := make([]*hwsim.Process, len(o.Programs))
	spawn := func(i int) error {
		argv := o.Programs[i]
		p, err := m.Spawn(argv[0], argv, o.Env)
		if err != nil {
			return fmt.Errorf("simhost: record: run %s: %w", argv[0], err)
		}
		procs[i] = p
		sum.Processes++
		return nil
	}
	for i := range o.Programs {
		if err := spawn(i); err != nil {
			return sum, err
		}
	}
	if o.Cycles == 0 {
		m.Run(0)
	} else {
		chunk := max(o.Machine.ClockHz/1000, o.Machine.Quantum) // about 1 ms
		for m.Now() < o.Cycles {
			m.RunFor(min(chunk, o.Cycles-m.Now()))
			for i, p := range procs {
				if p.State() >= hwsim.ProcZombie && m.Now() < o.Cycles {
					if err := spawn(i); err != nil {
						return sum, err
					}
				}
			}
		}
	}
	m.StopProfiling()
	sum.Samples, sum.Cycles = rec.Count(), m.Now()
	return sum, rec.Close()
}

// TraceRecorder is an hwsim.CounterHandler that records every counter
// interrupt of a machine to a trace, and returns a fixed cost.
type TraceRecorder struct {
	tw *node.TraceWriter
	// Cost is the cycles each interrupt's handler costs the machine
	// (default: DCPI's hit cost, 430).
	Cost uint64
	err  error
}

// NewTraceRecorder records to w the samples of a machine of cpus CPUs.
func NewTraceRecorder(w io.Writer, cpus int) (*TraceRecorder, error) {
	tw, err := node.NewTraceWriter(w, cpus)
	if err != nil {
		return nil, err
	}
	return &TraceRecorder{tw: tw, Cost: 430}, nil
}

// CounterInterrupt records s (it runs on the simulation goroutine).
func (r *TraceRecorder) CounterInterrupt(s hwsim.Sample) uint64 {
	if r.err == nil {
		r.err = r.tw.Write(node.TraceSample{CPU: s.CPU, PID: uint32(s.PID), Incarnation: s.Incarnation, PC: s.PC, Event: uint8(s.Event)})
	}
	return r.Cost
}

// Count is the number of samples recorded.
func (r *TraceRecorder) Count() uint64 { return r.tw.Count() }

// Close ends the trace and returns the first error of recording.
func (r *TraceRecorder) Close() error {
	if r.err != nil {
		return r.err
	}
	return r.tw.Close()
}
