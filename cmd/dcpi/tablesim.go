package main

import (
	"bytes"
	"dcpi/internal/progress"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"dcpi/hwsim"
	"dcpi/node"
	"dcpi/simhost"
	"dcpi/workloads"
)

// nodeSubcommands are the subcommands of dcpi node.
func nodeSubcommands() []func() *cobra.Command {
	return []func() *cobra.Command{
		newNodeTablesimCommand,
	}
}

func newNodeTablesimCommand() *cobra.Command {
	var opts tablesimOptions
	cmd := &cobra.Command{
		Use:   "tablesim",
		Short: "Compare driver table designs on a sample trace (DCPI sec. 5.4)",
		Long: `Replay a trace of counter interrupts against designs of the driver's
aggregation table — 4-, 6- and 8-way, round-robin replacement (DCPI's) or
swap-to-front with insert-at-front (sec. 5.4's proposal), several sizes —
and print for each its miss and eviction rates, how many samples an entry
leaving the table carries, and the modelled cost per sample of the handler,
the daemon and the whole (interrupt delivery included), compared with the
4-way round-robin table of the same memory.

The trace is recorded by running embedded workloads on a simulated host
(--workloads or --mix; the "default" mix if neither is given) for --seconds
of simulated time, restarting programs that finish, or read from --trace.
--record saves the recorded trace.

Table sizes are memory on the modelled Alpha: a 6-way table packs six
entries into a 64-byte line, so it holds 1.5 times the entries of a 4-way
table of the same size; an 8-way bucket spans two lines.`,
		Example: `  dcpi node tablesim
  dcpi node tablesim --workloads ccdriver,ccdriver,ccdriver,ccdriver --seconds 2
  dcpi node tablesim --mix processes --record processes.trace
  dcpi node tablesim --trace processes.trace --sizes 4,16,64,256`,
		Args: cobra.NoArgs,
		RunE: opts.run,
	}
	opts.register(cmd)
	return cmd
}

// tablesimOptions are the flags of the command newNodeTablesimCommand makes.
type tablesimOptions struct {
	names     []string
	mix       string
	traceFile string
	record    string
	seconds   float64
	sizesKB   []int
	profile   string
	rate      uint64
}

func (opts *tablesimOptions) run(cmd *cobra.Command, args []string) error {
	if opts.traceFile != "" && (len(opts.names) > 0 || opts.mix != "" || opts.record != "") {
		return fmt.Errorf("--trace replays a recorded trace; it takes no --workloads, --mix or --record")
	}
	if len(opts.names) > 0 && opts.mix != "" {
		return fmt.Errorf("give --workloads or --mix, not both")
	}
	if opts.seconds < 0 {
		return fmt.Errorf("--seconds %v: want zero (run each program once) or more", opts.seconds)
	}
	var lines []int
	for _, kb := range opts.sizesKB {
		if kb < 1 || kb > 1<<20 {
			return fmt.Errorf("--sizes: %d KB: want 1 to %d", kb, 1<<20)
		}
		lines = append(lines, kb*1024/64)
	}
	out := cmd.OutOrStdout()
	var tr *node.Trace
	var err error
	if opts.traceFile != "" {
		tr, err = readTraceFile(opts.traceFile)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "trace %s: %d samples on %d CPUs\n", opts.traceFile, len(tr.Samples), tr.CPUs)
	} else {
		tr, err = recordTablesimTrace(cmd, out, opts.names, opts.mix, opts.record, opts.seconds, opts.profile, opts.rate)
		if err != nil {
			return err
		}
	}
	if len(tr.Samples) == 0 {
		return fmt.Errorf("the trace holds no samples")
	}
	floor := node.CompulsoryMisses(tr)
	fmt.Fprintf(out, "compulsory misses (a key's first sample on its CPU): %d, %.2f%% of samples, the floor under every miss rate\n\n",
		floor, 100*float64(floor)/float64(len(tr.Samples)))
	start := time.Now()
	designs := node.Designs(lines, node.DefaultVariants())
	var rs []node.Result
	err = progress.New(cmd.ErrOrStderr(), time.Now()).WhileRunning(func() error {
		var err error
		rs, err = node.Simulate(tr, designs)
		return err
	}, func() string { return fmt.Sprintf("simulating %d table designs on the trace", len(designs)) })
	if err != nil {
		return err
	}
	if err := node.WriteResults(out, rs); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "\nsimulated %d designs in %.2f s\n", len(rs), time.Since(start).Seconds())
	return nil
}

func (opts *tablesimOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringSliceVar(&opts.names, "workloads", nil, "embedded workloads to run at once, comma-separated (a name may repeat)")
	f.StringVar(&opts.mix, "mix", "", "a named mix of embedded workloads (mixes: "+strings.Join(workloads.MixNames(), ", ")+")")
	f.StringVar(&opts.traceFile, "trace", "", "replay this trace file instead of recording one")
	f.StringVar(&opts.record, "record", "", "write the recorded trace to this file")
	f.Float64Var(&opts.seconds, "seconds", 1, "simulated seconds to record, restarting programs that finish (0: run each once)")
	f.IntSliceVar(&opts.sizesKB, "sizes", []int{16, 64, 256}, "table sizes to simulate, in KB of the modelled Alpha's memory (DCPI: 256)")
	f.StringVar(&opts.profile, "profile", "default", "counter configuration: default (CYCLES and IMISS), cycles, mux")
	f.Uint64Var(&opts.rate, "rate", 1, "sample N times as often as the profile's periods say (more samples per run of a short simhost.Program)")
	f.Int("cpus", 4, "number of simulated CPUs")
	f.Uint64("seed", 1, "seed for everything random on the machine")
	f.Bool("timing", true, "run the 21164 timing model (IMISS samples need it)")
}

// recordTablesimTrace runs the workloads and returns their trace, saving
// it to record if that is set.
func recordTablesimTrace(cmd *cobra.Command, out io.Writer, names []string, mix, record string, seconds float64, profile string, rate uint64) (*node.Trace, error) {
	if len(names) == 0 {
		if mix == "" {
			mix = "default"
		}
		var ok bool
		if names, ok = workloads.Mixes()[mix]; !ok {
			return nil, fmt.Errorf("no mix %q (mixes: %s)", mix, strings.Join(workloads.MixNames(), ", "))
		}
	}
	var programs [][]string
	for _, n := range names {
		w, ok := workloads.ByName(n)
		if !ok {
			return nil, fmt.Errorf("no workload %q (workloads: %s)", n, strings.Join(workloads.Names(), ", "))
		}
		programs = append(programs, w.Argv())
	}
	cfg, err := loadConfig(cmd)
	if err != nil {
		return nil, err
	}
	hc, err := simhost.MachineConfig(cfg.Sim)
	if err != nil {
		return nil, err
	}
	var prof hwsim.ProfileConfig
	switch profile {
	case "default":
		prof = hwsim.DefaultProfile()
	case "cycles":
		prof = hwsim.DefaultProfile()
		prof.Counters = prof.Counters[:1]
	case "mux":
		prof = hwsim.MuxProfile()
	default:
		return nil, fmt.Errorf("--profile %q: want default, cycles or mux", profile)
	}
	if rate < 1 {
		return nil, fmt.Errorf("--rate %d: want 1 or more", rate)
	}
	for i := range prof.Counters {
		c := &prof.Counters[i]
		c.PeriodMin, c.PeriodMax = c.PeriodMin/rate, c.PeriodMax/rate
	}
	if err := prof.Validate(); err != nil {
		return nil, fmt.Errorf("--rate %d: %w", rate, err)
	}
	var buf bytes.Buffer
	start := time.Now()
	var sum simhost.RecordSummary
	err = progress.New(cmd.ErrOrStderr(), start).WhileRunning(func() error {
		var err error
		sum, err = simhost.RecordTrace(&buf, simhost.RecordOptions{
			Machine:  hc,
			Profile:  prof,
			Programs: programs,
			Env:      []string{"PATH=/bin", "HOME=/", "TERM=dumb", "LANG=C"},
			Cycles:   uint64(seconds * float64(hc.ClockHz)),
		})
		return err
	}, func() string {
		return fmt.Sprintf("recording a trace of %s for %g simulated s on %d CPUs", strings.Join(names, ","), seconds, hc.CPUs)
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "recorded %s (%s profile, rate x%d) on %d CPUs: %.2f simulated s, %d programs started, %d samples, %d bytes (host %.1f s)\n",
		strings.Join(names, ","), profile, rate, hc.CPUs, float64(sum.Cycles)/float64(hc.ClockHz), sum.Processes, sum.Samples,
		buf.Len(), time.Since(start).Seconds())
	if record != "" {
		if err := os.WriteFile(record, buf.Bytes(), 0o644); err != nil {
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
