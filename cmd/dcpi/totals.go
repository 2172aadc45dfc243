package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"dcpi/profiledb"
	"dcpi/profiledb/timerange"
	"dcpi/transport/auth"
)

func newTotalsCommand() *cobra.Command {
	var natsURLs, hosts, selectors []string
	var labels map[string]string
	var dbDir string
	var epochs []string
	var when timerange.Flags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "totals",
		Short: "Print the cluster's storage totals: samples stored, unknown, and every drop counter",
		Long: `Print what the coordinator's profile database holds, for conservation
checks: samples stored with an image, samples stored as unknown (no image
map covered their PC), and every named drop counter the nodes and the
transport reported. Their sum is every sample the fleet's simulated
hardware generated that has reached the database; once every node has
stopped and its batches are committed it must equal the sum of what each
node says its hardware generated ("dcpi node --nats" prints that at exit).

With --db it reads a local profile database instead (dcpi node --db's,
or a stopped replica's data directory, e.g. a demo's DIR/c1).

Any replica answers, so a replica that has not yet applied the newest
commits may answer with less; --host, --select, --label, --epoch,
--since/--from/--to narrow the figures. --json: {"samples", "unknown", "drops": {name: count}, "total"}.`,
		Example: `  dcpi totals --nats nats://127.0.0.1:4222
  dcpi totals --nats nats://127.0.0.1:4222 --host alpha1 --json
  dcpi totals --db /tmp/fleet/c1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			sel, err := profiledb.Filters{Hosts: hosts, Epochs: epochs, Time: when, Select: selectors, Labels: labels}.Selection()
			if err != nil {
				return err
			}
			o, err := openTotalsDB(cmd, dbDir, natsURLs)
			if err != nil {
				return err
			}
			defer o.close()
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			if err := profiledb.Select(ctx, o.DB, &sel, cmd.ErrOrStderr()); err != nil {
				return err
			}
			tot, err := profiledb.ReadTotals(ctx, o.DB, sel.Filter)
			if err != nil {
				return err
			}
			if !asJSON {
				return tot.WriteText(cmd.OutOrStdout())
			}
			if tot.Hint != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), tot.Hint)
			}
			return tot.WriteJSON(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&natsURLs, "nats", []string{"nats://127.0.0.1:4222"}, "NATS server(s) of the cluster")
	f.StringVar(&dbDir, "db", "", "read this local profile database (or a stopped replica's data directory) instead of the cluster")
	cmd.MarkFlagsMutuallyExclusive("db", "nats")
	f.StringArrayVar(&hosts, "host", nil, "only host `H` (repeatable)")
	f.StringArrayVar(&selectors, "select", nil, "only hosts whose labels match `SELECTOR` (as dcpi prof's; repeatable)")
	f.StringToStringVar(&labels, "label", nil, "only hosts registered with label `key=value` (repeatable)")
	f.StringSliceVar(&epochs, "epoch", nil, "only epoch `N` (repeatable)")
	when.Register(f)
	f.BoolVar(&asJSON, "json", false, "print JSON for machines")
	return cmd
}

// openTotalsDB opens --db when given, else the cluster --nats names.
func openTotalsDB(cmd *cobra.Command, dbDir string, natsURLs []string) (*openedSource, error) {
	if dbDir != "" {
		db, err := profiledb.OpenDir(dbDir)
		if err != nil {
			return nil, err
		}
		return opened(profiledb.NewLocal(db), func() {}), nil
	}
	nc, err := connectTool(cmd, natsURLs, auth.Query, "dcpi-totals")
	if err != nil {
		return nil, err
	}
	return opened(profiledb.NewCluster(nc, false), nc.Close), nil
}
