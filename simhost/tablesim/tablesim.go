// Package tablesim compares designs of the driver's aggregation table on
// a trace of counter interrupts (DCPI sec. 5.4; dcpi node tablesim): it
// records the trace by running embedded workloads on a simulated host, or
// reads a recorded one, replays it against each design (node.Simulate)
// and writes their miss and eviction rates and modelled costs.
package tablesim

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"dcpi/hwsim"
	"dcpi/internal/progress"
	"dcpi/node"
	"dcpi/simhost"
	"dcpi/simhost/simrun"
	"dcpi/workloads"
)

// Options say which trace to replay and which table sizes to compare.
type Options struct {
	// TraceFile replays a recorded trace; otherwise one is recorded by
	// running Workloads (names may repeat) or the Mix ("default" when
	// neither is given) on Machine for Seconds of simulated time,
	// restarting programs that finish (0: each runs once).
	TraceFile string
	Workloads []string
	Mix       string
	Machine   hwsim.Config
	Seconds   float64
	// Profile is the counter configuration: default (CYCLES and IMISS),
	// cycles or mux; Rate samples that many times as often as its
	// periods say.
	Profile string
	Rate    uint64
	// Record, when set, receives the recorded trace.
	Record string
	// SizesKB are the table sizes, in KB of the modelled Alpha's memory.
	SizesKB []int
	// Out receives the results; Log the timing lines and, on a terminal,
	// progress.
	Out, Log io.Writer
}

// Check refuses options that contradict each other or are out of range,
// before anything runs.
func (o Options) Check() error {
	if o.TraceFile != "" && (len(o.Workloads) > 0 || o.Mix != "" || o.Record != "") {
		return fmt.Errorf("--trace replays a recorded trace; it takes no --workloads, --mix or --record")
	}
	if len(o.Workloads) > 0 && o.Mix != "" {
		return fmt.Errorf("give --workloads or --mix, not both")
	}
	if o.Seconds < 0 {
		return fmt.Errorf("--seconds %v: want zero (run each program once) or more", o.Seconds)
	}
	for _, kb := range o.SizesKB {
		if kb < 1 || kb > 1<<20 {
			return fmt.Errorf("--sizes: %d KB: want 1 to %d", kb, 1<<20)
		}
	}
	return nil
}

// Run replays or records the trace and compares the designs.
func Run(o Options) error {
	if err := o.Check(); err != nil {
		return err
	}
	var lines []int
	for _, kb := range o.SizesKB {
		lines = append(lines, kb*1024/64)
	}
	var tr *node.Trace
	var err error
	if o.TraceFile != "" {
		if tr, err = readTraceFile(o.TraceFile); err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "trace %s: %d samples on %d CPUs\n", o.TraceFile, len(tr.Samples), tr.CPUs)
	} else if tr, err = record(o); err != nil {
		return err
	}
	if len(tr.Samples) == 0 {
		return fmt.Errorf("the trace holds no samples")
	}
	floor := node.CompulsoryMisses(tr)
	fmt.Fprintf(o.Out, "compulsory misses (a key's first sample on its CPU): %d, %.2f%% of samples, the floor under every miss rate\n\n",
		floor, 100*float64(floor)/float64(len(tr.Samples)))
	start := time.Now()
	designs := node.Designs(lines, node.DefaultVariants())
	var rs []node.Result
	err = progress.New(o.Log, time.Now()).WhileRunning(func() error {
		var err error
		rs, err = node.Simulate(tr, designs)
		return err
	}, func() string { return fmt.Sprintf("simulating %d table designs on the trace", len(designs)) })
	if err != nil {
		return err
	}
	if err := node.WriteResults(o.Out, rs); err != nil {
		return err
	}
	fmt.Fprintf(o.Log, "\nsimulated %d designs in %.2f s\n", len(rs), time.Since(start).Seconds())
	return nil
}

// Profile is the counter configuration named name, sampling rate times as
// often as its periods say.
func Profile(name string, rate uint64) (hwsim.ProfileConfig, error) {
	var prof hwsim.ProfileConfig
	switch name {
	case "default":
		prof = hwsim.DefaultProfile()
	case "cycles":
		prof = hwsim.DefaultProfile()
		prof.Counters = prof.Counters[:1]
	case "mux":
		prof = hwsim.MuxProfile()
	default:
		return prof, fmt.Errorf("--profile %q: want default, cycles or mux", name)
	}
	if rate < 1 {
		return prof, fmt.Errorf("--rate %d: want 1 or more", rate)
	}
	for i := range prof.Counters {
		c := &prof.Counters[i]
		c.PeriodMin, c.PeriodMax = c.PeriodMin/rate, c.PeriodMax/rate
	}
	if err := prof.Validate(); err != nil {
		return prof, fmt.Errorf("--rate %d: %w", rate, err)
	}
	return prof, nil
}

// programs are the argument vectors of the workloads o runs.
func (o Options) programs() (names []string, argvs [][]string, err error) {
	names = o.Workloads
	if len(names) == 0 {
		mix := o.Mix
		if mix == "" {
			mix = "default"
		}
		var ok bool
		if names, ok = workloads.Mixes()[mix]; !ok {
			return nil, nil, fmt.Errorf("no mix %q (mixes: %s)", mix, strings.Join(workloads.MixNames(), ", "))
		}
	}
	for _, n := range names {
		w, ok := workloads.ByName(n)
		if !ok {
			return nil, nil, fmt.Errorf("no workload %q (workloads: %s)", n, strings.Join(workloads.Names(), ", "))
		}
		argvs = append(argvs, w.Argv())
	}
	return names, argvs, nil
}

// record runs the workloads and returns their trace, saving it to
// o.Record if that is set.
func record(o Options) (*node.Trace, error) {
	names, programs, err := o.programs()
	if err != nil {
		return nil, err
	}
	prof, err := Profile(o.Profile, o.Rate)
	if err != nil {
		return nil, err
	}
	hc := o.Machine
	var buf bytes.Buffer
	start := time.Now()
	var sum simhost.RecordSummary
	err = progress.New(o.Log, start).WhileRunning(func() error {
		var err error
		sum, err = simhost.RecordTrace(&buf, simhost.RecordOptions{
			Machine: hc, Profile: prof, Programs: programs, Env: simrun.Env,
			Cycles: uint64(o.Seconds * float64(hc.ClockHz)),
		})
		return err
	}, func() string {
		return fmt.Sprintf("recording a trace of %s for %g simulated s on %d CPUs", strings.Join(names, ","), o.Seconds, hc.CPUs)
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Out, "recorded %s (%s profile, rate x%d) on %d CPUs: %.2f simulated s, %d programs started, %d samples, %d bytes (host %.1f s)\n",
		strings.Join(names, ","), o.Profile, o.Rate, hc.CPUs, float64(sum.Cycles)/float64(hc.ClockHz), sum.Processes, sum.Samples,
		buf.Len(), time.Since(start).Seconds())
	if o.Record != "" {
		if err := os.WriteFile(o.Record, buf.Bytes(), 0o644); err != nil {
			return nil, fmt.Errorf("record trace: %w", err)
		}
	}
	return node.ReadTrace(&buf)
}

func readTraceFile(path string) (*node.Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr, err := node.ReadTrace(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tr, nil
}
