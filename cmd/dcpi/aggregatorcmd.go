package main

import (
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"dcpi/aggregator"
	"dcpi/cluster"
	"dcpi/transport"
	"dcpi/transport/auth"
)

func newAggregatorCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "aggregator",
		Short: "Consume sample batches from JetStream, merge them, and commit them through the coordinator",
		Long: `Run an aggregator: a stateless consumer of the nodes' sample batches
(the JetStream durable consumer "aggregators", shared by every aggregator,
so run more to scale out). It merges consecutive batches of each host and
CPU into deltas, proposes them to the coordinator in bounded groups, and
acknowledges a batch only after the Raft commit of the proposal that
carried it. A redelivered batch is recognized by its (host, CPU, sequence)
and changes nothing; a malformed or forged one is rejected with its reason
logged. It does the same for the nodes' value-sampling records (stream
DCPI_VALUES, consumer "values"; docs/values.md): consecutive records of a
host merge by Gibbons-Matias's rule before they are proposed.`,
		Example: `  dcpi aggregator --nats nats://127.0.0.1:4222
  dcpi aggregator --nats nats://127.0.0.1:4222 --metrics 127.0.0.1:9102`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadRoleConfig(cmd)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log := roleLogger("aggregator: ")
			logf := roleLogf(log)
			tel, err := startRoleTelemetry(cmd, logf)
			if err != nil {
				return err
			}
			defer tel.Close()
			nc, err := cluster.ConnectRole(ctx, cfg.NATS, auth.Aggregator, "", "aggregator", log)
			if err != nil {
				return err
			}
			defer nc.Close()
			consuming := &cluster.StartedCheck{What: "waiting for the stream " + transport.StreamName}
			tel.Ready.Add("nats", cluster.NATSReady(nc))
			tel.Ready.Add("aggregator", consuming.Check)
			ac := cfg.Aggregator
			a, err := cluster.StartAggregator(ctx, nc, cluster.AggregatorConfig{
				Aggregator: aggregator.Config{FetchMax: ac.FetchMax, FetchWait: ac.FetchWait, InFlight: ac.InFlight, MaxPendingEntries: ac.MaxPendingEntries,
					Limits: aggregator.Limits{MaxProposalEntries: ac.MaxProposalEntries, MaxDeltaEntries: ac.MaxProposalEntries / 2, FoldHosts: ac.FoldHosts}},
				StreamReplicas: cfg.NATS.StreamReplicas, StatsEvery: 10 * time.Second, Logger: log})
			if err != nil {
				return err
			}
			if err := tel.Register(nil, a.Collector()); err != nil {
				return err
			}
			consuming.Started()
			logf("consuming %s", transport.StreamName)
			return a.Wait()
		},
	}
	cmd.Flags().StringSlice("nats", []string{"nats://127.0.0.1:4222"}, "NATS server(s) of the cluster")
	addMetricsFlag(cmd.Flags(), "")
	return cmd
}
