package main

import (
	"dcpi/cluster"
	"dcpi/conservation"
	"dcpi/internal/progress"
	"dcpi/simhost/localrun"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"dcpi/config"
	"dcpi/hwsim"
	"dcpi/node"
	"dcpi/simhost"
	"dcpi/storage"
	"dcpi/wire"
	"dcpi/workloads"
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

--stats prints what Table 4 of the paper reports: samples, the table's
miss (eviction) rate, the aggregation factor, the handler's modelled cost
per sample on the hit and miss paths, and the daemon's cost per sample.`,
		Example: `  dcpi node --mix default --seconds 0.5 --stats
  dcpi node --workloads ccdriver,sort --db /tmp/prof
  dcpi node --db /tmp/prof -- ./myprog 100 : ./myprog 200
  dcpi node --nats nats://127.0.0.1:4222 --host alpha1 --label rack=r1 --seconds 2
  dcpi node --nats nats://127.0.0.1:4222 --host alpha2 --seconds 2 -- ./server --port 9`,
		Args: programsOnlyAfterDash("dcpi node --db D -- ./prog ARGS"),
		RunE: func(cmd *cobra.Command, args []string) error {
			progs, err := nodePrograms(o.mix, o.names, args)
			if err != nil {
				return err
			}
			if on, _ := cmd.Flags().GetBool("stacks"); on {
				if err := checkStacks(); err != nil {
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
			if len(o.natsURLs) > 0 {
				return runClusterNode(cmd, progs, o.events, o.mux, o.labels, tel)
			}
			hc, ncfg, err := o.localConfig(cmd, progs)
			if err != nil {
				return err
			}
			return runNode(cmd.OutOrStdout(), hc, ncfg, progs, o.seconds, o.keep, o.dbDir, o.stats, tel)
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
	labels   map[string]string
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
	f.StringToStringVar(&o.labels, "label", nil, "labels for the fleet queries, key=value (cluster mode)")
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

// localConfig is the machine and the node a local dcpi node runs, from the
// configuration and the flags.
func (o *nodeOptions) localConfig(cmd *cobra.Command, progs []simhost.Program) (hwsim.Config, simhost.Config, error) {
	cfg, err := loadRoleConfig(cmd)
	if err != nil {
		return hwsim.Config{}, simhost.Config{}, err
	}
	hc, err := simhost.MachineConfig(cfg.Sim)
	if err != nil {
		return hc, simhost.Config{}, err
	}
	hc.Stdout, hc.Stderr = io.Discard, cmd.ErrOrStderr()
	if progs[0].User() {
		hc.Stdout = cmd.OutOrStdout()
	}
	simhost.InstallPrograms(&hc, progs)
	ncfg := simhost.DefaultConfig()
	ncfg.Node.Host = cfg.Sim.Hostname
	if cfg.Node.Values != "" {
		if ncfg.Node.Values, err = simhost.ValuesConfig(cfg.Node.Values); err != nil {
			return hc, ncfg, err
		}
	}
	if cfg.Node.Stacks {
		if err := checkStacks(); err != nil {
			return hc, ncfg, err
		}
		ncfg.Node.Driver.Stacks = node.DefaultStackConfig()
	}
	if cfg.Node.ProfileMe {
		ncfg.Node.Driver.Me = node.DefaultMeConfig()
		ncfg.ProfileMe = simhost.ProfileMeHardware(cfg.Node.MePaired)
	}
	if o.entries > 0 {
		ncfg.Node.Driver.TableEntries = o.entries
	}
	if o.assoc > 0 {
		ncfg.Node.Driver.Assoc = o.assoc
	}
	if o.policy != "" {
		if ncfg.Node.Driver.Policy, err = node.ParsePolicy(o.policy); err != nil {
			return hc, ncfg, err
		}
	}
	ncfg.FlushEvery = uint64(o.flushSec * float64(hc.ClockHz))
	ncfg.Node.PublishEvery = uint64(cfg.Node.PublishEvery * float64(hc.ClockHz))
	ncfg.Profile, err = simhost.CounterProfile(o.events, o.mux)
	return hc, ncfg, err
}

// nodePrograms is what a node runs: the programs given after --, or the
// embedded workloads named by --workloads, or the --mix (default:
// "default").
func nodePrograms(mix string, names, args []string) ([]simhost.Program, error) {
	if len(args) > 0 {
		if mix != "" || len(names) > 0 {
			return nil, fmt.Errorf("programs after -- and --mix or --workloads: give one or the other")
		}
		return simhost.SplitPrograms(args)
	}
	if len(names) > 0 {
		return simhost.EmbeddedPrograms(names)
	}
	if mix == "" {
		mix = "default"
	}
	progs, ok := workloads.Mixes()[mix]
	if !ok {
		return nil, fmt.Errorf("no mix %q (mixes: %s)", mix, strings.Join(workloads.MixNames(), ", "))
	}
	return simhost.EmbeddedPrograms(progs)
}

func runNode(w io.Writer, hc hwsim.Config, ncfg simhost.Config, progs []simhost.Program, seconds float64, keep bool, dbDir string, stats bool, tel *cluster.Telemetry) error {
	if keep && seconds <= 0 {
		return fmt.Errorf("--keep-running needs --seconds: the programs would run forever")
	}
	m, err := hwsim.New(hc)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dbDir, 0o755); err != nil {
		return err
	}
	db, err := storage.Open(dbDir, storage.Options{NoSync: true})
	if err != nil {
		return explainOpenError(err, "--db", dbDir)
	}
	defer db.Close()
	sink := simhost.LocalSink{DB: db}
	prior, err := localrun.ContinueHost(db, &ncfg, hc.CPUs)
	if err != nil {
		return err
	}
	sh, err := simhost.New(m, ncfg, sink)
	if err != nil {
		return err
	}
	if err := tel.Register(prometheus.Labels{"host": ncfg.Node.Host}, sh.Collector(), sh.Node().Collector(),
		storage.NewCollector(func(fn func(*storage.DB) error) error { return fn(db) })); err != nil {
		return err
	}
	tel.Ready.Add("database", db.Usable)
	for _, p := range progs {
		if keep {
			err = sh.KeepRunning(p.Path, p.Argv)
		} else {
			_, err = m.Spawn(p.Path, p.Argv, nil)
		}
		if err != nil {
			return err
		}
	}
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	limit := uint64(0)
	if seconds > 0 {
		limit = uint64(seconds * float64(hc.ClockHz))
	}
	if err := progress.New(w, start).WhileRunning(func() error { return sh.Run(limit) },
		func() string { return progress.SimulatedStatus(sh.SimCycles(), hc.ClockHz, seconds) }); err != nil {
		return err
	}
	elapsed := time.Since(start)
	if stats {
		printNodeStats(w, sh, elapsed)
	}
	now, err := localrun.Totals(db, storage.Query{})
	if err != nil {
		return err
	}
	lines, balanced := conservation.Lines(sh.Generated(), sh.Generated(), now.Since(prior.Totals),
		conservation.Views{Stacks: ncfg.Node.Driver.Stacks.Entries > 0, ProfileMe: ncfg.Node.Driver.Me.Entries > 0, MeTagged: sh.MeTagged()})
	fmt.Fprintf(w, "\n%s\n", strings.Join(lines, "\n"))
	if !balanced {
		return errors.New("conservation does not balance: samples were lost without a drop counter")
	}
	if ncfg.Node.Values.Module != "" {
		mods, s, err := db.ValueTotals(storage.ValueQuery{})
		if err != nil {
			return err
		}
		if err := simhost.WriteValueConservation(w, mods, conservation.SubtractValues(s, prior.Values), []*hwsim.Machine{m}); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "profiles written to %s\n", dbDir)
	return nil
}

func printNodeStats(w io.Writer, sh *simhost.Host, elapsed time.Duration) {
	m, n := sh.Machine(), sh.Node()
	ds, drivers := n.Stats()
	delivered := sh.Generated()
	var tot node.DriverStats
	for _, d := range drivers {
		tot.Add(d)
	}
	div := func(a, b uint64) float64 {
		if b == 0 {
			return 0
		}
		return float64(a) / float64(b)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(w, "--- dcpi node stats (cf. Table 4) ---\n")
	fmt.Fprintf(w, "simulated time          %.3f s on %d CPUs (%d program restarts)\n", m.Seconds(sh.SimCycles()), len(drivers), sh.Restarts())
	fmt.Fprintf(w, "samples                 %d delivered, %d published, %d dropped, %d unknown (%.3f%%)\n",
		delivered, ds.Samples, tot.Dropped, ds.Unknown, 100*div(ds.Unknown, ds.Samples))
	fmt.Fprintf(w, "hash table miss rate    %.1f%% (%d misses, %d evictions)\n", 100*div(tot.Misses, tot.Samples), tot.Misses, tot.Evictions)
	fmt.Fprintf(w, "aggregation factor      %.1f samples per entry leaving the driver\n", div(ds.Samples, ds.Entries))
	fmt.Fprintf(w, "handler cost            %.0f cycles/sample avg (hit %.0f, miss %.0f), modelled\n",
		div(tot.CyclesHit+tot.CyclesMiss, tot.Hits+tot.Misses), div(tot.CyclesHit, tot.Hits), div(tot.CyclesMiss, tot.Misses))
	ht := n.HandlerTiming()
	net := func(v float64) float64 { return max(v-ht.MedianClockNanos, 0) }
	fmt.Fprintf(w, "handler host time       %.0f ns/sample hit, %.0f ns/sample miss, in the run's cold caches (medians of %d of %d samples, net of the %.0f ns an empty timed interval takes there)\n",
		net(ht.MedianHitNanos), net(ht.MedianMissNano), ht.Hits+ht.Misses, tot.Samples, ht.MedianClockNanos)
	if tot.StackSamples > 0 {
		fmt.Fprintf(w, "call stacks             %d samples, %d dropped, %.1f%% stack table hits, %.1f frames/sample, %.1f%% truncated, %.2f heuristic frames/sample\n",
			tot.StackSamples, tot.StackDropped, 100*div(tot.StackHits, tot.StackSamples), div(tot.StackFrames, tot.StackSamples),
			100*div(tot.StackTruncated, tot.StackSamples), div(tot.StackHeuristic, tot.StackSamples))
		fmt.Fprintf(w, "stack cost              %.0f cycles/sample more, modelled (%.1f memory reads/sample); %.0f host ns/sample (median of %d)\n",
			div(tot.CyclesStack, tot.StackSamples), div(tot.StackReads, tot.StackSamples), net(ht.MedianStackNanos), ht.Stacks)
	}
	fmt.Fprintf(w, "daemon                  %d batches, %d full drains, %d buffer drains, %d images\n",
		ds.Batches, ds.FullDrains, ds.BufferDrains, ds.Images)
	fmt.Fprintf(w, "daemon cost             %.0f host ns/sample (attribution and publishing, Pebble included)\n",
		div(ds.HostNanos, ds.Samples))
	fmt.Fprintf(w, "memory                  driver %d KB per CPU; daemon %.1f KB (image maps, attribution, drain buffer), estimated\n",
		n.DriverMemoryBytes()>>10, float64(n.DaemonMemoryBytes())/1024)
	fmt.Fprintf(w, "host time               %.2f s; Go heap in use %.1f MB (the simulated machine included)\n", elapsed.Seconds(), float64(ms.HeapInuse)/(1<<20))
	fmt.Fprintf(w, "\nby image (a miss is an entry leaving the driver: table evictions, flushed entries, direct writes)\n")
	fmt.Fprintf(w, "%10s %9s %9s %10s  %s\n", "samples", "entries", "miss rate", "samp/entry", "image")
	for _, f := range n.ImageFigures() {
		fmt.Fprintf(w, "%10d %9d %8.1f%% %10.1f  %s\n", f.Samples, f.Entries, 100*div(f.Entries, f.Samples), div(f.Samples, f.Entries), f.Path)
	}
}

// checkStacks refuses --stacks while this build cannot encode the batches
// that carry stacks (wire.StackVersion).
func checkStacks() error {
	if wire.Version < wire.StackVersion {
		return fmt.Errorf("--stacks: this build encodes batches up to version %d; call stacks need version %d", wire.Version, wire.StackVersion)
	}
	return nil
}
