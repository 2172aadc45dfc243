package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"dcpi/conservation"
	"dcpi/coordinator"
	"dcpi/profiledb"
	"dcpi/storage"
	"dcpi/transport/auth"
)

// totalsJSON is what dcpi totals --json prints.
type totalsJSON struct {
	Samples uint64            `json:"samples"` // stored with an image
	Unknown uint64            `json:"unknown"` // stored without one
	Drops   map[string]uint64 `json:"drops"`   // every drop counter, by name
	Total   uint64            `json:"total"`   // samples + unknown + every drop
}

func newTotalsCommand() *cobra.Command {
	var natsURLs, hosts []string
	var dbDir string
	var epochs []uint
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
commits may answer with less. --host and --epoch narrow the figures.
--json prints {"samples", "unknown", "drops": {name: count}, "total"}.`,
		Example: `  dcpi totals --nats nats://127.0.0.1:4222
  dcpi totals --nats nats://127.0.0.1:4222 --host alpha1 --json
  dcpi totals --db /tmp/fleet/c1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var q storage.Query
			if len(hosts) > 0 {
				q.Hosts = hosts
			}
			for _, e := range epochs {
				q.Epochs = append(q.Epochs, uint64(e))
			}
			tot, hint, err := readTotals(cmd, dbDir, natsURLs, q)
			if err != nil {
				return err
			}
			out := totalsJSON{Samples: tot.Samples, Unknown: tot.Unknown, Drops: tot.Drops, Total: tot.Samples + tot.Unknown}
			if out.Drops == nil {
				out.Drops = map[string]uint64{}
			}
			var names []string
			for name, n := range out.Drops {
				out.Total += n
				names = append(names, name+" "+strconv.FormatUint(n, 10))
			}
			if asJSON {
				if out.Total == 0 && hint != "" {
					fmt.Fprintln(cmd.ErrOrStderr(), hint)
				}
				return json.NewEncoder(cmd.OutOrStdout()).Encode(out)
			}
			slices.Sort(names)
			fmt.Fprintf(cmd.OutOrStdout(), "%d samples stored, %d unknown, %d dropped (%s); %d in all\n",
				out.Samples, out.Unknown, out.Total-out.Samples-out.Unknown, conservation.DropList(names), out.Total)
			if out.Total == 0 && hint != "" {
				fmt.Fprintln(cmd.OutOrStdout(), hint)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&natsURLs, "nats", []string{"nats://127.0.0.1:4222"}, "NATS server(s) of the cluster")
	f.StringVar(&dbDir, "db", "", "read this local profile database (or a stopped replica's data directory) instead of the cluster")
	cmd.MarkFlagsMutuallyExclusive("db", "nats")
	f.StringArrayVar(&hosts, "host", nil, "only host `H` (repeatable)")
	f.UintSliceVar(&epochs, "epoch", nil, "only epoch `N` (repeatable)")
	f.BoolVar(&asJSON, "json", false, "print JSON for machines")
	return cmd
}

// readTotals reads the totals from --db when given, else from the
// cluster, with emptyHint's words for a --host or --epoch it does not hold
// (computed only when nothing matched).
func readTotals(cmd *cobra.Command, dbDir string, natsURLs []string, q storage.Query) (tot coordinator.TotalsReply, hint string, err error) {
	empty := func(t coordinator.TotalsReply) bool {
		n := t.Samples + t.Unknown
		for _, d := range t.Drops {
			n += d
		}
		return n == 0
	}
	if dbDir != "" {
		db, err := profiledb.OpenDir(dbDir)
		if err != nil {
			return tot, "", err
		}
		defer db.Close()
		if tot.Samples, tot.Unknown, tot.Drops, err = db.Totals(q); err != nil {
			return tot, "", fmt.Errorf("totals: %w", err)
		}
		if empty(tot) {
			hint = profiledb.EmptyHint(cmd.Context(), profiledb.NewLocal(db), q)
		}
		return tot, hint, nil
	}
	nc, err := connectTool(natsConfig(cmd, natsURLs), auth.Query, "dcpi-totals")
	if err != nil {
		return tot, "", err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
	defer cancel()
	c := coordinator.NewClient(nc)
	if tot, err = c.Totals(ctx, q, false); err != nil {
		return tot, "", fmt.Errorf("totals: %w", err)
	}
	if empty(tot) {
		hint = profiledb.EmptyHint(ctx, profiledb.NewCluster(nc, false), q)
	}
	return tot, hint, nil
}
