package main

import (
	"os"
	"time"

	"github.com/spf13/cobra"

	"dcpi/config"
	"dcpi/internal/slogf"
	"dcpi/loadgen/fleet"
)

func newLoadgenRunCommand() *cobra.Command {
	var o fleet.Options
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Replay a recording as N hosts against a cluster and measure what it sustains",
		Long: `Replay --recording as --hosts agents for --seconds of wall time, each at
the recorded host's real rate (a recorded simulated second is replayed
in one second), with its own host name (PREFIX0000, PREFIX0001, ...),
its own sequence numbers and the cluster's open epoch, publishing its
batches and image records through the transport's publisher like a
node agent. The recording loops if --seconds is longer. With
--host-keys (the default) each agent also registers, heartbeats and
follows epoch cuts as a node does: its batches after a cut carry the new
epoch, and it acknowledges the one it left (at batch granularity: a
recorded window cannot be split at the cut as a node's drain splits
it). --cut-every cuts an epoch that often during the load and reports
how long each took to seal.

Without --nats it starts a cluster of child processes under --dir: dcpi
nats-server, three coordinator replicas and --aggregators aggregators.
With --nats it loads that cluster (choose a --prefix no host there has)
and measures only itself.

When the load stops it waits for the agents' publishers to empty and the
cluster to store everything, then reports: generated and stored samples
per second, whether conservation holds exactly (the cluster's stored +
unknown + dropped samples of the agents' hosts equal what the agents
published, counted from the batches), the delay from publish to
queryable (polling dcpi totals: the time until the stored total reached
what had been published at an earlier poll), and each role's CPU (cores:
CPU seconds over the load's wall seconds) and peak RSS. A run is
"sustained" when conservation holds, the stored rate kept up with the
generated rate (>= 95% over the second half of the load) and the delay
stayed under 10 s (and, with --cut-every, every epoch cut was sealed).

--find-knee runs the load again on a fresh cluster for each host count,
doubling from --hosts until a run is not sustained, then halving the gap
three times, and prints each run and the largest sustained count.`,
		Example: `  dcpi loadgen run --recording /tmp/host.dcpiload --hosts 16 --seconds 20
  dcpi loadgen run --recording /tmp/host.dcpiload --find-knee --hosts 8 --seconds 30
  dcpi loadgen run --recording /tmp/host.dcpiload --hosts 4 --nats nats://127.0.0.1:4222 --prefix lgb`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.NATS, err = natsConfig(cmd, o.NATSURLs); err != nil {
				return err
			}
			if len(o.NATSURLs) > 0 {
				o.NATSURLs = o.NATS.URLs
			}
			if o.Binary, err = os.Executable(); err != nil {
				return err
			}
			o.Warn, o.Logger = os.Stderr, slogf.Role("loadgen: ")
			return fleet.Run(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	registerLoadgenRunFlags(cmd, &o)
	return cmd
}

// registerLoadgenRunFlags registers the flags of the command newLoadgenRunCommand makes into o.
func registerLoadgenRunFlags(cmd *cobra.Command, o *fleet.Options) {
	f := cmd.Flags()
	f.StringVar(&o.Recording, "recording", "", "recording file (dcpi loadgen record --out)")
	f.IntVar(&o.Hosts, "hosts", 8, "agents to replay (with --find-knee, the first count tried)")
	f.Float64Var(&o.Seconds, "seconds", 30, "wall seconds of load")
	f.StringSliceVar(&o.NATSURLs, "nats", nil, "load this cluster instead of starting one")
	f.StringVar(&o.Dir, "dir", "", "directory of the started cluster's data and logs (default: a temporary one, removed)")
	f.IntVar(&o.Aggregators, "aggregators", 2, "aggregators of the started cluster")
	f.IntVar(&o.Conns, "conns", 8, "NATS connections the agents share")
	f.StringVar(&o.Prefix, "prefix", "lg", "host name prefix of the agents")
	f.IntVar(&o.BufferKB, "buffer-kb", 2048, "each agent's publisher queue bound (KiB); past it batches become tombstones (dropped, counted)")
	f.BoolVar(&o.EndToEnd, "end-to-end-ack", true, "each agent keeps its batches until the coordinator reports them applied, asking once a poll for all its streams, as a node does by default (node.retain_mb; docs/durability.md)")
	f.BoolVar(&o.HostKeys, "host-keys", true, "each agent has its own connection, on its own host's key when the server has credentials (issued now on this machine's server store), and registers and heartbeats as a node does; false: the agents share --conns connections on the coordinator's key and send no heartbeats")
	f.DurationVar(&o.CutEvery, "cut-every", 0, "cut an epoch this often during the load (as dcpi epoch cut) and measure each one's time to seal; 0: none; needs --host-keys")
	f.DurationVar(&o.Heartbeat, "heartbeat", config.Defaults().Node.Heartbeat, "each agent's heartbeat interval, with --host-keys (node.heartbeat)")
	f.BoolVar(&o.FindKnee, "find-knee", false, "sweep host counts for the largest sustained one")
	f.IntVar(&o.MaxHosts, "max-hosts", 4096, "largest host count --find-knee tries")
	f.DurationVar(&o.Drain, "drain-timeout", 3*time.Minute, "longest wait for the cluster to store everything after the load")
	f.BoolVar(&o.JSON, "json", false, "print the result as JSON")
}
