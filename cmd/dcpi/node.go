package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"dcpi/config"
	"dcpi/linuxhost/linuxnode"
	"dcpi/simhost"
	"dcpi/simhost/localrun"
)

func newNodeCommand() *cobra.Command {
	var o nodeOptions
	cmd := &cobra.Command{
		Use:   "node [flags] [-- PROG [ARGS...] [: PROG [ARGS...]]...]",
		Short: "Run a simulated host with DCPI's driver and daemon, profiling into a local database",
		Long: `Run a simulated multiprocessor Alpha host with programs and profile it as
DCPI did: a driver on every CPU counts (process, PC, event)
samples in a 4-way hash table and overflow buffer pair, and the daemon
drains them (by IPI, sec. 4.2.3), attributes samples to images through
the loader's image maps, and writes per-image profiles to a Pebble
database (--db) through package storage.

The programs are the user's, given after -- (static Alpha Linux ELF
executables, or embedded workload names; several separated by a lone :),
or else the embedded workloads of --workloads or --mix (default: the
"default" mix). A user's program is recorded under its absolute path, so
dcpi list finds the file later; in cluster mode (--nats) its file is
uploaded as well, so dcpi list and dcpi pprof read it from any machine.
Arguments before -- are an error. For one program, profiled once with its
output and exit status passed through, see dcpi profile.

--linux --nats URL joins the cluster with this Linux machine instead of a
simulated host: every process on every CPU sampled over perf_event_open
(--event, --freq), as root, its host credentials, labels and epochs as a
simulated host's; --seconds is wall-clock time (0: until interrupted).

--stats prints what Table 4 of the paper reports: samples, the table's
miss (eviction) rate, the aggregation factor, the handler's modelled cost
per sample on the hit and miss paths, and the daemon's cost per sample.`,
		Example: `  dcpi node --mix default --seconds 0.5 --stats
  dcpi node --workloads ccdriver,sort --db /tmp/prof
  dcpi node --db /tmp/prof -- ./myprog 100 : ./myprog 200
  dcpi node --nats nats://127.0.0.1:4222 --host alpha1 --label rack=r1 --seconds 2
  dcpi node --nats nats://127.0.0.1:4222 --host alpha2 --seconds 2 -- ./server --port 9
  sudo dcpi node --linux --nats nats://10.0.0.5:4222 --host web1 --label rack=r1`,
		Args: programsOnlyAfterDash("dcpi node --db D -- ./prog ARGS"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var progs []simhost.Program
			var err error
			if !o.linux { // a Linux host runs no programs: it profiles what runs
				if progs, err = simhost.ChoosePrograms(o.mix, o.names, args); err != nil {
					return err
				}
			}
			if on, _ := cmd.Flags().GetBool("stacks"); on {
				if err := simhost.CheckStacks(); err != nil {
					return err
				}
			}
			tel, err := startRoleTelemetry(cmd, func(format string, a ...any) {
				fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", a...)
			})
			if err != nil {
				return err
			}
			defer tel.Close()
			cfg, err := loadRoleConfig(cmd)
			if err != nil {
				return err
			}
			if len(cfg.NATS.URLs) > 0 || o.linux { // --nats, or nats.urls in the file or its enrollment
				return runClusterNode(cmd, cfg, o, progs, args, tel)
			}
			hc, ncfg, err := localrun.Machine(cfg, progs, localrun.MachineOptions{TableEntries: o.entries, Assoc: o.assoc, Policy: o.policy,
				FlushEvery: o.flushSec, Events: o.events, Mux: o.mux, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()})
			if err != nil {
				return err
			}
			return localrun.RunNode(cmd.Context(), localrun.NodeConfig{Machine: hc, Node: ncfg, Programs: progs, Seconds: o.seconds, Keep: o.keep,
				DB: o.dbDir, Stats: o.stats, Register: tel.Register, Ready: tel.Ready, Out: cmd.OutOrStdout()})
		},
	}
	o.register(cmd.Flags())
	for _, sub := range nodeSubcommands() {
		cmd.AddCommand(sub())
	}
	return cmd
}

// nodeOptions are dcpi node's flags that are not configuration keys.
type nodeOptions struct {
	mix      string
	names    []string
	seconds  float64
	dbDir    string
	stats    bool
	flushSec float64
	entries  int
	assoc    int
	policy   string
	events   []string
	mux      bool
	keep     bool
	natsURLs []string
	linux    bool
	lx       linuxnode.Config // --event, --freq
}

func (o *nodeOptions) register(f *pflag.FlagSet) {
	f.Int("cpus", 4, "number of simulated CPUs")
	f.Uint64("seed", 1, "seed for everything random on the machine")
	f.String("model", "ev5", "CPU model")
	f.Bool("timing", true, "run the timing model: the 21164's, or the 21264's out-of-order core with --model ev6 or ev67")
	f.StringVar(&o.mix, "mix", "", "run the named mix of embedded workloads (default: \"default\")")
	f.StringSliceVar(&o.names, "workloads", nil, "run these embedded workloads (comma-separated)")
	f.Float64Var(&o.seconds, "seconds", 0, "stop after this much simulated time (0: when the programs finish)")
	f.StringSliceVar(&o.natsURLs, "nats", nil, "join a cluster: publish to this NATS server and follow its coordinator's epochs (programs restart as they exit)")
	f.BoolVar(&o.linux, "linux", false, "with --nats, this Linux machine instead of a simulated one: every process on every CPU over perf_event_open (docs/linux.md)")
	f.StringVar(&o.lx.Event, "event", "cpu-clock", "with --linux, the event each CPU samples: cpu-clock, task-clock, or cycles, instructions, cache-misses, branch-misses where a PMU has them")
	f.Uint64Var(&o.lx.Freq, "freq", 999, "with --linux, samples per second per CPU")
	f.StringToString("label", nil, "the host's label `key=value` (service, version, zone, ...) the tools select by (config node.labels; docs/node.md)")
	f.StringSlice("per-process", nil, "keep these images' profiles per process: `PATH|NAME|all` (config node.per_process; docs/node.md)")
	f.String("host", "alpha0", "host name (unique in a fleet; a database can hold many)")
	f.BoolVar(&o.keep, "keep-running", false, "start each program again when it exits, so the host stays loaded until --seconds")
	f.StringVar(&o.dbDir, "db", "dcpi-db", "directory of the local Pebble profile database")
	f.BoolVar(&o.stats, "stats", false, "print Table-4-like driver and daemon figures")
	f.Float64Var(&o.flushSec, "flush-every", 0.1, "simulated seconds between full drains of the driver tables")
	f.Float64("publish-every", config.DefaultPublishEvery, "the daemon's publish window: merge each CPU's drains and publish one batch per this many simulated seconds (0: a batch per drain)")
	f.IntVar(&o.entries, "table-entries", 0, "entries per CPU hash table (default 16384)")
	f.IntVar(&o.assoc, "assoc", 0, "table associativity: 4, 6 or 8 (default 4)")
	f.StringVar(&o.policy, "policy", "", "replacement: round-robin (DCPI's) or swap-to-front (sec. 5.4)")
	f.StringSliceVar(&o.events, "events", []string{"cycles", "imiss"}, "events to count: the first on its own counter (periods 60K-64K for cycles), the rest on a second")
	f.BoolVar(&o.mux, "mux", false, "the paper's mux configuration: cycles, and imiss, dmiss, branchmp, dtbmiss taking turns")
	f.Bool("stacks", false, "record sampled call stacks beside the flat profile (docs/node.md, \"Call stacks\")")
	f.Bool("profileme", false, "sample instructions with ProfileMe beside the counters (config key node.profileme; docs/profileme.md; dcpi me)")
	f.Bool("me-paired", false, "with --profileme, sample instructions in pairs (config key node.me_paired; docs/profileme.md)")
	f.String("values", "", "value sampling with customization `MODULE` (loadlat, regvals, semiinv; docs/values.md; dcpi values)")
	addMetricsFlag(f, "")
}
