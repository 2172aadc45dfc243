package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"dcpi/cluster"
	"dcpi/internal/slogf"
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
			log := slogf.Role("aggregator: ")
			tel, err := startRoleTelemetry(cmd, slogf.Printf(log))
			if err != nil {
				return err
			}
			defer tel.Close()
			return cluster.RunAggregatorRole(ctx, cfg, tel, log)
		},
	}
	cmd.Flags().StringSlice("nats", []string{"nats://127.0.0.1:4222"}, "NATS server(s) of the cluster")
	addMetricsFlag(cmd.Flags(), "")
	return cmd
}
