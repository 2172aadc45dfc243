package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"dcpi/profiledb"
)

// profFlags are dcpi prof's options: the shared query flags, and the
// table's shape.
type profFlags struct {
	queryFlags
	by       string
	limit    int
	byCaller bool
}

func newProfCommand() *cobra.Command {
	var pf profFlags
	cmd := &cobra.Command{
		Use:   "prof",
		Short: "Samples per procedure (or image), DCPI's dcpiprof: where the cycles went",
		Long: `Print DCPI's dcpiprof table (Figure 1 of the paper): one row per procedure,
per image with --by image, or per value of a host label with --by LABEL
(--by service; --by host), and for each event a column group of samples, %
of the event's total and cumulative %, sorted by the first event. Offsets
are named with the symbol tables the nodes uploaded with their images;
samples that no symbol covers show as the image's unknown_rtn row.

The profile comes from a local database (--db, as "dcpi node --db" writes
it), opened read-only, or from the cluster (--nats URL), where any
coordinator replica answers (--linearizable: the leader, after every
commit). Without filters it covers every epoch, host and
process: the fleet-wide profile, read from the database's roll-up over
hosts. Filters narrow it:

  --epoch N, --epochs A-B   epochs (repeatable; unioned)
  --since 2h, --from/--to T the epochs overlapping a wall-clock range
  --host H                  hosts (repeatable)
  --image PATH|KEY          images: a path ("/bin/sort"), a file name ("sort")
                            or a content key ("buildid:<hex>"); repeatable
  --pid P                   processes, for images kept per process (PID 0:
                            samples not kept per process); repeatable
  --select SELECTOR         hosts whose labels match: service=db,version=~"1\\..*"
                            (Prometheus matchers =, !=, =~, !~; quotes optional)
  --label K=V               hosts registered with these labels
  --event NAME              events, as columns in this order; the first sorts
                            (default: every event present, cycles first)

Percentages are of everything the filters select, shown or not; --limit N
keeps the top N rows and sums the rest on one line. --json prints the same
table for machines: {"by", "events": [{"event", "name", "total"}], "rows":
[{"procedure", "image", "image_key", "counts", "percent", "cum_percent"}],
"omitted_rows", "omitted_counts"}, per-row arrays parallel to "events".

--by-caller reads the sampled call stacks instead (nodes record them with
stacks on; see dcpi stacks for the call trees): for the first --event
(cycles by default), each procedure with its samples as the sampled one
(self) and anywhere on a stack (inclusive, a stack counted once), then its
callers with their shares of the inclusive samples, "[root]" for stacks
that end at it and "[truncated]" for partial chains. Rows by inclusive
samples; --limit N keeps the top N. --json prints {"event", "total",
"rows": [{"proc": {"procedure", "image"}, "self", "inclusive", "percent",
"callers": [{"caller", "samples", "percent"}]}], "omitted_rows"}.`,
		Example: `  dcpi node --mix default --seconds 0.3 --db /tmp/prof
  dcpi prof --db /tmp/prof
  dcpi prof --db /tmp/prof --event imiss --event cycles --limit 10
  dcpi prof --db /tmp/prof --by image
  dcpi prof --db /tmp/prof --image hashdb --epochs 1-3 --host alpha0
  dcpi prof --db /tmp/fleet/c1      # a stopped coordinator replica's data directory
  dcpi prof --db /tmp/prof --json | jq '.rows[0]'
  dcpi prof --nats nats://127.0.0.1:4222 --select 'rack=~"r[01]"' --by rack
  dcpi prof --db /tmp/prof --by-caller --limit 10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := profiledb.ProfOptions{By: pf.by, Limit: pf.limit, ByCaller: pf.byCaller}
			if err := opts.Check(); err != nil {
				return err
			}
			sel, err := pf.selection()
			if err != nil {
				return err
			}
			o, err := pf.open(cmd, "dcpi-prof", &sel)
			if err != nil {
				return err
			}
			defer o.close()
			r, err := profiledb.Prof(cmd.Context(), o.DB, o.src, sel, opts)
			if err != nil {
				return err
			}
			if !pf.json {
				return r.WriteText(cmd.OutOrStdout())
			}
			if err := r.WriteJSON(cmd.OutOrStdout()); err != nil || r.Hint == "" {
				return err
			}
			_, err = fmt.Fprintln(cmd.ErrOrStderr(), r.Hint)
			return err
		},
	}
	f := cmd.Flags()
	pf.register(f, "event column `NAME`, in order; the first sorts (repeatable)")
	f.StringVar(&pf.by, "by", "procedure", "one row per `procedure`, per image, or per value of a label (service, host, ...)")
	f.IntVar(&pf.limit, "limit", 0, "print the top `N` rows and sum the rest (0: all)")
	f.BoolVar(&pf.byCaller, "by-caller", false, "each procedure's callers and their shares, from the sampled call stacks")
	return cmd
}
