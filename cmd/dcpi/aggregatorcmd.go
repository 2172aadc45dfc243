package main

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"dcpi/aggregator"
	"dcpi/coordinator"
	"dcpi/transport"
	"dcpi/transport/auth"
)

func init() { subcommands = append(subcommands, newAggregatorCommand) }

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
			logf := stderrLog("aggregator: ")
			tel, err := startRoleTelemetry(cmd, logf)
			if err != nil {
				return err
			}
			defer tel.close()
			nc, err := connectNATS(cfg.NATS, auth.Aggregator, "", "aggregator", logf)
			if err != nil {
				return err
			}
			defer nc.Close()
			consuming := &startedCheck{what: "waiting for the stream " + transport.StreamName}
			tel.ready.Add("nats", natsReady(nc))
			tel.ready.Add("aggregator", consuming.check)
			js, err := jetstream.New(nc)
			if err != nil {
				return err
			}
			cons, err := newConsumerRetrying(ctx, nc, js, logf)
			if err != nil {
				return err
			}
			src := transport.BatchSource{Consumer: cons, JS: js}
			a := aggregator.New(aggregator.Config{FetchMax: cfg.Aggregator.FetchMax, FetchWait: cfg.Aggregator.FetchWait, InFlight: cfg.Aggregator.InFlight, MaxPendingEntries: cfg.Aggregator.MaxPendingEntries,
				Limits: aggregator.Limits{MaxProposalEntries: cfg.Aggregator.MaxProposalEntries, MaxDeltaEntries: cfg.Aggregator.MaxProposalEntries / 2, FoldHosts: cfg.Aggregator.FoldHosts},
				Logf:   logf}, src, coordinator.NewClient(nc), src)
			if err := tel.register(nil, a.Collector()); err != nil {
				return err
			}
			consuming.started.Store(true)
			logf("consuming %s", transport.StreamName)
			go runPathUploads(ctx, js, coordinator.NewClient(nc), logf)
			var vwg sync.WaitGroup
			defer vwg.Wait()
			vf := startValueRecords(ctx, &vwg, js, coordinator.NewClient(nc), cfg.NATS.StreamReplicas, logf)
			go func() {
				t := time.NewTicker(10 * time.Second)
				defer t.Stop()
				for {
					select {
					case <-ctx.Done():
						return
					case <-t.C:
						s := a.Stats()
						logf("%d batches acked, %d entries in, %d out, %d proposals, %d rejected, %d gaps, %d overlaps; %v", s.Acked, s.EntriesIn, s.EntriesOut, s.Proposals, s.Rejected, s.Gaps, s.Overlaps, vf.Stats())
					}
				}
			}()
			return a.Run(ctx)
		},
	}
	cmd.Flags().StringSlice("nats", []string{"nats://127.0.0.1:4222"}, "NATS server(s) of the cluster")
	addMetricsFlag(cmd.Flags(), "")
	return cmd
}

// newConsumerRetrying waits for NATS and for the stream (its coordinator
// may start after the aggregator), with backoff and a line per attempt.
func newConsumerRetrying(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, logf func(string, ...any)) (*transport.Consumer, error) {
	if err := transport.WaitConnected(ctx, transport.DefaultBackoff, nc, logf); err != nil {
		return nil, err
	}
	var c *transport.Consumer
	err := transport.Retry(ctx, transport.DefaultBackoff, "the stream "+transport.StreamName+" (a coordinator creates it)", logf,
		func(ctx context.Context) error {
			var err error
			c, err = transport.NewConsumer(ctx, js, transport.ConsumerConfig{})
			return err
		})
	return c, err
}
