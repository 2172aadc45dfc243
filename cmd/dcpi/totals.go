package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"dcpi/coordinator"
	"dcpi/storage"
)

func init() { subcommands = append(subcommands, newTotalsCommand) }

// totalsJSON is what dcpi totals --json prints.
type totalsJSON struct {
	Samples uint64            `json:"samples"` // stored with an image
	Unknown uint64            `json:"unknown"` // stored without one
	Drops   map[string]uint64 `json:"drops"`   // every drop counter, by name
	Total   uint64            `json:"total"`   // samples + unknown + every drop
}

func newTotalsCommand() *cobra.Command {
	var natsURLs, hosts []string
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

Any replica answers, so a replica that has not yet applied the newest
commits may answer with less. --host and --epoch narrow the figures.
--json prints {"samples", "unknown", "drops": {name: count}, "total"}.`,
		Example: `  dcpi totals --nats nats://127.0.0.1:4222
  dcpi totals --nats nats://127.0.0.1:4222 --host alpha1 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			nc, err := connectTool(natsConfig(cmd, natsURLs), "dcpi-totals")
			if err != nil {
				return err
			}
			defer nc.Close()
			var q storage.Query
			if len(hosts) > 0 {
				q.Hosts = hosts
			}
			for _, e := range epochs {
				q.Epochs = append(q.Epochs, uint64(e))
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			tot, err := coordinator.NewClient(nc).Totals(ctx, q)
			if err != nil {
				return fmt.Errorf("totals: %w", err)
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
				return json.NewEncoder(cmd.OutOrStdout()).Encode(out)
			}
			slices.Sort(names)
			fmt.Fprintf(cmd.OutOrStdout(), "%d samples stored, %d unknown, %d dropped (%s); %d in all\n",
				out.Samples, out.Unknown, out.Total-out.Samples-out.Unknown, dropList(names), out.Total)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&natsURLs, "nats", []string{"nats://127.0.0.1:4222"}, "NATS server(s) of the cluster")
	f.StringArrayVar(&hosts, "host", nil, "only host `H` (repeatable)")
	f.UintSliceVar(&epochs, "epoch", nil, "only epoch `N` (repeatable)")
	f.BoolVar(&asJSON, "json", false, "print JSON for machines")
	return cmd
}
