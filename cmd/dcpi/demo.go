package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"dcpi/cluster/demo"
	"dcpi/internal/slogf"
	"dcpi/simhost"
)

func newDemoCommand() *cobra.Command {
	o := demo.Defaults()
	var verbose bool
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
				if o.Programs, err = simhost.SplitPrograms(args); err != nil {
					return err
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			o.ExactReplicas = cmd.Flags().Changed("replicas")
			if verbose {
				o.Logger = slogf.Role("")
			}
			return demo.Run(ctx, cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Hosts, "hosts", o.Hosts, "simulated hosts")
	f.IntVar(&o.CPUs, "cpus", o.CPUs, "CPUs per host")
	f.IntVar(&o.Replicas, "replicas", o.Replicas, "coordinator replicas (1, 3 or 5)")
	f.IntVar(&o.Aggregators, "aggregators", o.Aggregators, "aggregators")
	f.Float64Var(&o.Seconds, "seconds", o.Seconds, "simulated seconds each host runs")
	f.Float64Var(&o.CutAt, "cut-at", o.CutAt, "cut an epoch when every host has run this fraction of --seconds")
	f.DurationVar(&o.EpochEvery, "epoch-every", o.EpochEvery, "the coordinator also cuts an epoch at every multiple of this period of wall-clock time (0: no schedule; docs/cluster.md)")
	f.StringVar(&o.Mix, "mix", o.Mix, "embedded workload mix every host runs (restarting programs as they exit)")
	f.StringVar(&o.Dir, "dir", o.Dir, "keep the cluster's data here; a later run on it continues the fleet (default: a temporary directory, removed)")
	f.BoolVar(&o.Timing, "timing", o.Timing, "run the timing model: the 21164's, or the 21264's out-of-order core with --model ev6 or ev67 (false: faster, one cycle per instruction)")
	f.StringVar(&o.Model, "model", o.Model, "CPU model of every host: ev5 (21164), ev56, pca56, ev6, ev67")
	f.IntVar(&o.Limit, "limit", o.Limit, "procedures in the profile table")
	f.BoolVar(&verbose, "verbose", false, "log what the cluster's roles say")
	f.StringVar(&o.MetricsAddr, "metrics", o.MetricsAddr, "serve the whole fleet's Prometheus metrics, /healthz and /readyz at this host:port (port 0: any; \"\": none); the demo prints the URL")
	f.StringVar(&o.HTTPAddr, "http", o.HTTPAddr, "serve the web UI at `HOST:PORT` while the demo runs (\"\": not at all)")
	f.BoolVar(&o.Serve, "serve", o.Serve, "after the results, keep the cluster and the web UI up until interrupted")
	f.BoolVar(&o.Stacks, "stacks", o.Stacks, "record sampled call stacks on every host, for call trees and flame graphs (dcpi stacks, dcpi pprof)")
	f.BoolVar(&o.ProfileMe, "profileme", o.ProfileMe, "sample instructions with ProfileMe on every host (docs/profileme.md; dcpi me)")
	f.StringVar(&o.Values, "values", o.Values, "value sampling with customization `MODULE` on every host (loadlat, regvals, semiinv; docs/values.md; dcpi values)")
	f.BoolVar(&o.MePaired, "me-paired", o.MePaired, "with --profileme, sample instructions in pairs (ProfileMe sec. 4.2; docs/profileme.md)")
	return cmd
}
