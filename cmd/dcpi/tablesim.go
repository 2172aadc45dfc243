package main

import (
	"strings"

	"github.com/spf13/cobra"

	"dcpi/simhost"
	"dcpi/simhost/tablesim"
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
type tablesimOptions struct{ tablesim.Options }

func (opts *tablesimOptions) run(cmd *cobra.Command, args []string) error {
	o := opts.Options
	if err := o.Check(); err != nil {
		return err
	}
	if o.TraceFile == "" {
		cfg, err := loadConfig(cmd)
		if err != nil {
			return err
		}
		if o.Machine, err = simhost.MachineConfig(cfg.Sim); err != nil {
			return err
		}
	}
	o.Out, o.Log = cmd.OutOrStdout(), cmd.ErrOrStderr()
	return tablesim.Run(o)
}

func (opts *tablesimOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringSliceVar(&opts.Workloads, "workloads", nil, "embedded workloads to run at once, comma-separated (a name may repeat)")
	f.StringVar(&opts.Mix, "mix", "", "a named mix of embedded workloads (mixes: "+strings.Join(workloads.MixNames(), ", ")+")")
	f.StringVar(&opts.TraceFile, "trace", "", "replay this trace file instead of recording one")
	f.StringVar(&opts.Record, "record", "", "write the recorded trace to this file")
	f.Float64Var(&opts.Seconds, "seconds", 1, "simulated seconds to record, restarting programs that finish (0: run each once)")
	f.IntSliceVar(&opts.SizesKB, "sizes", []int{16, 64, 256}, "table sizes to simulate, in KB of the modelled Alpha's memory (DCPI: 256)")
	f.StringVar(&opts.Profile, "profile", "default", "counter configuration: default (CYCLES and IMISS), cycles, mux")
	f.Uint64Var(&opts.Rate, "rate", 1, "sample N times as often as the profile's periods say (more samples per run of a short simhost.Program)")
	f.Int("cpus", 4, "number of simulated CPUs")
	f.Uint64("seed", 1, "seed for everything random on the machine")
	f.Bool("timing", true, "run the 21164 timing model (IMISS samples need it)")
}
