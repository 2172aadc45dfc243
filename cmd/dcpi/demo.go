package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"dcpi/analysis/report"
	"dcpi/analysis/symbolize"
	"dcpi/analysis/web"
	"dcpi/cluster"
	"dcpi/config"
	"dcpi/conservation"
	"dcpi/coordinator"
	"dcpi/hwsim/alpha"
	"dcpi/internal/progress"
	"dcpi/profiledb"
	"dcpi/profiledb/webdb"
	"dcpi/simhost"
	"dcpi/transport"
	"dcpi/wire"
	"dcpi/workloads"
)

// demoOptions are dcpi demo's knobs.
type demoOptions struct {
	hosts, cpus, replicas, aggregators int
	seconds, cutAt                     float64
	mix                                string
	dir                                string
	timing                             bool
	model                              string // the hosts' CPU model
	limit                              int
	verbose                            bool
	programs                           []simhost.Program // after --; nil: the mix
	replicasSet                        bool              // --replicas given, not defaulted
	stacks                             bool
	profileMe                          bool   // ProfileMe on every host
	values                             string // value-sampling module on every host ("": off)
	mePaired                           bool   // in pairs
	metrics                            string // host:port of the fleet's metrics endpoint ("": none)
	httpAddr                           string // the web UI's; "": none
	serve                              bool   // keep serving it after the results
}

func newDemoCommand() *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo [flags] [-- PROG [ARGS...] [: PROG [ARGS...]]...]",
		Short: "Run a whole profiling cluster in one process and print the fleet's profile",
		Long: `Run the embedded default cluster in one process: an embedded NATS server
with JetStream, a 3-replica Raft coordinator owning a Pebble profile
database, aggregators, and simulated 4-CPU Alpha hosts running the
embedded workload mix (or the programs given after --, each restarted
as it exits; several separated by a lone :), each with DCPI's driver and
daemon publishing sample batches.

The demo collects until every host has run --seconds of simulated time,
cutting an epoch fleet-wide on the way (every node flushes its driver by
IPI into the closing epoch and acknowledges; the coordinator seals the
epoch once the acknowledged batches are stored). Then it prints the
fleet-wide dcpiprof table, the epochs, and a conservation line: samples
the simulated hardware generated against samples stored plus every drop
counter, which must balance exactly.

With --dir the cluster's data stays; a second run on the same directory
continues that fleet (same replicas and Raft addresses, recorded in
DIR/demo.json; the hosts' streams resume) and its conservation line counts
what this run added. On a terminal the demo prints a progress line every
second, saying what it waits for; into a file or pipe only the results.
It serves the whole fleet's Prometheus metrics, /healthz and /readyz at
--metrics (every instance labelled by host, replica or aggregator; see
docs/metrics.md), prints their URL, and starts its hosts once /readyz
would answer ready.

The demo serves the web UI of dcpi web over the fleet while it runs, at
--http (any free port by default; "" for none) and prints its URL; with
--serve it keeps serving it (and the cluster) after printing the results,
until interrupted, so the pages and the tools' --nats URL can be explored.

The same roles run as separate processes: dcpi coordinator, dcpi
aggregator, dcpi node --nats URL (see examples/).`,
		Example: `  dcpi demo
  dcpi demo --hosts 2 --seconds 0.2
  dcpi demo --dir /tmp/fleet && dcpi prof --db /tmp/fleet/c1
  dcpi demo --hosts 2 -- ./myprog 1000`,
		Args: programsOnlyAfterDash("dcpi demo -- ./prog ARGS"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				if cmd.Flags().Changed("mix") {
					return fmt.Errorf("programs after -- and --mix: give one or the other")
				}
				var err error
				if o.programs, err = simhost.SplitPrograms(args); err != nil {
					return err
				}
			}
			if o.stacks {
				if err := checkStacks(); err != nil {
					return err
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if o.values != "" {
				if _, err := simhost.ValuesConfig(o.values); err != nil {
					return err
				}
			}
			o.replicasSet = cmd.Flags().Changed("replicas")
			return runDemo(ctx, cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.hosts, "hosts", 4, "simulated hosts")
	f.IntVar(&o.cpus, "cpus", 4, "CPUs per host")
	f.IntVar(&o.replicas, "replicas", 3, "coordinator replicas (1, 3 or 5)")
	f.IntVar(&o.aggregators, "aggregators", 2, "aggregators")
	f.Float64Var(&o.seconds, "seconds", 0.3, "simulated seconds each host runs")
	f.Float64Var(&o.cutAt, "cut-at", 0.5, "cut an epoch when every host has run this fraction of --seconds")
	f.StringVar(&o.mix, "mix", "default", "embedded workload mix every host runs (restarting programs as they exit)")
	f.StringVar(&o.dir, "dir", "", "keep the cluster's data here; a later run on it continues the fleet (default: a temporary directory, removed)")
	f.BoolVar(&o.timing, "timing", true, "run the timing model: the 21164's, or the 21264's out-of-order core with --model ev6 or ev67 (false: faster, one cycle per instruction)")
	f.StringVar(&o.model, "model", "ev5", "CPU model of every host: ev5 (21164), ev56, pca56, ev6, ev67")
	f.IntVar(&o.limit, "limit", 20, "procedures in the profile table")
	f.BoolVar(&o.verbose, "verbose", false, "log what the cluster's roles say")
	f.StringVar(&o.metrics, "metrics", "127.0.0.1:0", "serve the whole fleet's Prometheus metrics, /healthz and /readyz at this host:port (port 0: any; \"\": none); the demo prints the URL")
	f.StringVar(&o.httpAddr, "http", "127.0.0.1:0", "serve the web UI at `HOST:PORT` while the demo runs (\"\": not at all)")
	f.BoolVar(&o.serve, "serve", false, "after the results, keep the cluster and the web UI up until interrupted")
	f.BoolVar(&o.stacks, "stacks", wire.Version >= wire.StackVersion, "record sampled call stacks on every host, for call trees and flame graphs (dcpi stacks, dcpi pprof)")
	f.BoolVar(&o.profileMe, "profileme", false, "sample instructions with ProfileMe on every host (docs/profileme.md; dcpi me)")
	f.StringVar(&o.values, "values", "", "value sampling with customization `MODULE` on every host (loadlat, regvals, semiinv; docs/values.md; dcpi values)")
	f.BoolVar(&o.mePaired, "me-paired", false, "with --profileme, sample instructions in pairs (ProfileMe sec. 4.2; docs/profileme.md)")
	return cmd
}

// runDemo runs the demo's cluster (package cluster) and prints its
// results: the fleet's profile, the epochs and the conservation lines.
func runDemo(ctx context.Context, w io.Writer, o demoOptions) error {
	progs, err := o.check()
	if err != nil {
		return err
	}
	start := time.Now()
	pr := progress.New(w, start)
	var logger *slog.Logger
	lf := func(string, ...any) {}
	if o.verbose {
		logger, lf = roleLogger(""), stderrLog("")
	}
	cl, err := cluster.Start(ctx, cluster.Config{Dir: o.dir, Replicas: o.replicas, ExactReplicas: o.replicasSet,
		Aggregators: o.aggregators, MetricsAddr: o.metrics, Progress: pr, Logger: logger})
	if err != nil {
		return err
	}
	defer cl.Close()
	fmt.Fprintf(w, "dcpi demo: NATS at %s, coordinator %s, %d aggregators, %d hosts x %d CPUs running %s\n",
		cl.URL(), cluster.PeerList(cl.Peers()), o.aggregators, o.hosts, o.cpus, simhost.ProgramList(progs))
	if u := cl.Telemetry().URL(); u != "" {
		fmt.Fprintf(w, "dcpi demo: metrics at %s/metrics, health at %s/healthz and %s/readyz\n", u, u, u)
	}
	if o.httpAddr != "" {
		srv, url, err := web.Start(o.httpAddr, webdb.New(profiledb.NewCluster(cl.Conn(), true), nil, nil), lf)
		if err != nil {
			return err
		}
		defer srv.Close()
		fmt.Fprintf(w, "dcpi demo: web UI at %s\n", url)
	}
	if cl.Continued() {
		fmt.Fprintf(w, "dcpi demo: continuing the fleet in %s (%d samples stored by earlier runs)\n", cl.Dir(), cl.Baseline().Totals.Stored)
	}
	var valueBase map[string]wire.ValueStats
	if o.values != "" {
		if valueBase, err = cl.ValueBaselines(ctx, demoHostNames(o.hosts)); err != nil {
			return err
		}
	}
	if err := addDemoHosts(ctx, cl, o, progs); err != nil {
		return err
	}
	cut, err := cl.Collect(ctx, o.seconds, o.cutAt)
	if err != nil {
		return err
	}
	run, err := cl.WaitStored(ctx, 30*time.Second)
	if err != nil {
		return err
	}
	if o.values != "" {
		if err := cl.WaitValuesStored(ctx, valueBase, 30*time.Second); err != nil {
			return err
		}
	}
	if err := cl.WaitSealed(ctx, cut, 30*time.Second); err != nil {
		fmt.Fprintf(w, "warning: %v\n", err)
	}
	balanced, err := printDemoResults(ctx, w, cl, o, run, valueBase)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "wall time %.1f s\n", time.Since(start).Seconds())
	if o.serve {
		fmt.Fprintf(w, "dcpi demo: serving the cluster (NATS at %s) and the web UI until interrupted\n", cl.URL())
		<-ctx.Done()
	}
	if !balanced {
		return errors.New("conservation does not balance")
	}
	return nil
}

// check validates the options and returns the programs every host runs.
func (o demoOptions) check() ([]simhost.Program, error) {
	if o.hosts < 1 || o.hosts > 64 {
		return nil, fmt.Errorf("--hosts %d: want 1 to 64", o.hosts)
	}
	if o.replicas != 1 && o.replicas != 3 && o.replicas != 5 {
		return nil, fmt.Errorf("--replicas %d: want 1, 3 or 5", o.replicas)
	}
	if o.mePaired && !o.profileMe {
		return nil, errPairedNeedsProfileMe
	}
	if o.model != "" {
		if _, err := alpha.ModelByName(o.model); err != nil {
			return nil, fmt.Errorf("--model: %w", err)
		}
	}
	if o.aggregators < 1 || o.seconds <= 0 || o.cutAt <= 0 || o.cutAt >= 1 {
		return nil, fmt.Errorf("want --aggregators >= 1, --seconds > 0 and 0 < --cut-at < 1")
	}
	if len(o.programs) > 0 {
		return o.programs, nil
	}
	names, ok := workloads.Mixes()[o.mix]
	if !ok {
		return nil, fmt.Errorf("no mix %q (mixes: %s)", o.mix, strings.Join(workloads.MixNames(), ", "))
	}
	return simhost.EmbeddedPrograms(names)
}

// demoHostNames are the demo's hosts: alpha0, alpha1, ...
func demoHostNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("alpha%d", i)
	}
	return names
}

// demoHost is the demo's host i: the default machine with --cpus, --model
// and --timing, seeded by its index, in rack r0 or r1.
func demoHost(o demoOptions, progs []simhost.Program, i int) cluster.HostConfig {
	sim := config.Defaults().Sim
	sim.CPUs, sim.Timing = o.cpus, o.timing
	if o.model != "" {
		sim.Model = o.model
	}
	sim.Hostname, sim.Seed = fmt.Sprintf("alpha%d", i), uint64(1+i)
	return cluster.HostConfig{Sim: sim, Programs: progs, Seconds: o.seconds, FlushEvery: 0.1,
		Labels: map[string]string{"rack": fmt.Sprintf("r%d", i%2)}, Heartbeat: 200 * time.Millisecond,
		MaxBuffer: 16 << 20, Retain: transport.DefaultMaxRetainedBytes, Events: []string{"cycles", "imiss"},
		Stacks: o.stacks, ProfileMe: o.profileMe, MePaired: o.mePaired, Values: o.values}
}

func addDemoHosts(ctx context.Context, cl *cluster.Cluster, o demoOptions, progs []simhost.Program) error {
	for i := range o.hosts {
		if _, err := cl.AddHost(ctx, demoHost(o, progs, i)); err != nil {
			return err
		}
	}
	return nil
}

// printDemoResults prints the fleet's profile, the epochs, the
// conservation lines and the aggregators' work, and says whether every
// conservation line balances.
func printDemoResults(ctx context.Context, w io.Writer, cl *cluster.Cluster, o demoOptions, run cluster.Run, valueBase map[string]wire.ValueStats) (bool, error) {
	src := coordinator.NewReader(cl.Coordinator(), true)
	table, err := report.Prof(ctx, symbolize.New(src), report.ProfQuery{Limit: o.limit})
	if err != nil {
		return false, err
	}
	fmt.Fprintf(w, "\nFleet-wide profile (%d hosts, all epochs%s):\n\n", len(cl.Hosts()), map[bool]string{true: ", earlier runs' too"}[cl.Continued()])
	if err := table.WriteText(w); err != nil {
		return false, err
	}
	eps, err := cl.Coordinator().Epochs(ctx)
	if err == nil {
		err = coordinator.WriteEpochs(w, eps)
	}
	if err != nil {
		return false, err
	}
	if cl.Continued() {
		b := cl.Baseline()
		fmt.Fprintf(w, "\nthis run continued the fleet in %s: the figures below are this run's (the database held %d samples and %d drops before it; its hosts' predecessors lost %d samples, stored now as %s)",
			cl.Dir(), b.Totals.Stored, b.Totals.Dropped(), b.Lost, wire.DropCrashLost)
	}
	lines, balanced, err := cl.Conservation(ctx, run, conservation.Views{Stacks: o.stacks, ProfileMe: o.profileMe})
	if err != nil {
		return false, err
	}
	fmt.Fprintf(w, "\n%s\n", strings.Join(lines, "\n"))
	if o.values != "" {
		vls, err := cl.ValueConservation(ctx, valueBase)
		if err != nil {
			return false, err
		}
		fmt.Fprintf(w, "value sampling (%s), as the cluster stored it:\n", o.values)
		for _, l := range vls {
			fmt.Fprintf(w, "  %-8s %s\n", l.Host, l.Line)
			balanced = balanced && l.Balanced
		}
	}
	as, vs := cl.AggregatorStats()
	fmt.Fprintf(w, "aggregators: %d batch entries merged into %d delta entries in %d Raft proposals; %d messages rejected\n",
		as.EntriesIn, as.EntriesOut, as.Proposals, as.Rejected)
	if o.values != "" {
		fmt.Fprintf(w, "aggregators: %d value records applied through %d Raft proposals (merged runs, retries included); %d value records rejected\n",
			vs.Applied, vs.Proposals, vs.Rejected)
	}
	return balanced, nil
}
