package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"dcpi/coordinator"
)

func newEpochCommand() *cobra.Command {
	var (
		natsURLs []string
	)
	cmd := &cobra.Command{
		Use:   "epoch",
		Short: "Cut and list the fleet's profile epochs",
		Long: `Epochs are DCPI's non-overlapping intervals of samples (sec. 4.3.3), cut
fleet-wide: "dcpi epoch cut" commits a cut through the coordinator's Raft
log; every node flushes its driver tables by IPI into the closing epoch,
acknowledges, and continues in the new one; the coordinator seals the
closing epoch once every live node has acknowledged and its acknowledged
batches are stored; "dcpi coordinator --epoch-every 1h" also cuts hourly.`,
		Example: `  dcpi epoch cut --nats nats://127.0.0.1:4222
  dcpi epoch list --nats nats://127.0.0.1:4222
  dcpi prof --nats nats://127.0.0.1:4222 --epoch 1`,
	}
	cmd.PersistentFlags().StringSliceVar(&natsURLs, "nats", []string{"nats://127.0.0.1:4222"}, "NATS server(s) of the cluster")
	cmd.AddCommand(&cobra.Command{
		Use:   "cut",
		Short: "Close the current epoch and open the next",
		Long: `Commit an epoch cut through the coordinator's Raft log and print the
epoch closing and the one now open. Nodes flush their driver tables into
the closing epoch and acknowledge; "dcpi epoch list" shows when it is
sealed, and the tools' --epoch N selects it.`,
		Example: `  dcpi epoch cut
  dcpi epoch cut --nats nats://10.0.0.5:4222`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withCoordinator(cmd, natsURLs, "dcpi-epoch", func(ctx context.Context, c *coordinator.Client) error {
				next, err := c.CutEpoch(ctx)
				if err != nil {
					return fmt.Errorf("epoch cut: %w", err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "epoch %d closing, epoch %d open\n", next-1, next)
				return nil
			})
		},
	})
	cmd.AddCommand(newEpochListCommand())
	return cmd
}

// newEpochListCommand is dcpi epoch list: it reads the cluster the
// parent's --nats names with the query role's key (listing needs no
// more), or a local database.
func newEpochListCommand() *cobra.Command {
	var (
		asJSON bool
		dbDir  string
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "Show every epoch: time span, state, and each node's acknowledgement",
		Long: `Show every epoch: its time span, its state, the nodes that acknowledged
its cut and those the coordinator still waits for. With --db it reads a
local database instead (a stopped replica's data directory, e.g. a demo's
DIR/c1, or dcpi node --db's), which knows no liveness: "waiting for" is
empty there.`,
		Example: `  dcpi epoch list --nats nats://127.0.0.1:4222
  dcpi epoch list --db /tmp/fleet/c1 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			natsURLs, _ := cmd.Flags().GetStringSlice("nats")
			if dbDir != "" {
				if cmd.Flags().Changed("nats") {
					return fmt.Errorf("give --db or --nats, not both")
				}
				natsURLs = nil
			}
			db, closeConn, err := openDB(cmd, "dcpi-epoch", natsURLs, false, dbDir)
			if err != nil {
				return err
			}
			defer closeConn()
			defer db.Close()
			eps, err := db.Epochs(cmd.Context())
			if err != nil {
				return err
			}
			return emit(cmd, asJSON, coordinator.EpochList(eps))
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	list.Flags().StringVar(&dbDir, "db", "", "read this local profile database (or a stopped replica's data directory) instead of the cluster")
	return list
}
