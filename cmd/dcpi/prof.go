package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"dcpi/analysis"
	"dcpi/analysis/report"
	"dcpi/coordinator"
	"dcpi/profiledb"
	"dcpi/storage"
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
or per image with --by image, and for each event a column group of samples,
% of the event's total and cumulative %, sorted by the first event. Offsets
are named with the symbol tables the nodes uploaded with their images;
samples that no symbol covers show as the image's unknown_rtn row.

The profile comes from a local database (--db, as "dcpi node --db" writes
it), opened read-only, or from the cluster (--nats URL), where any
coordinator replica answers (--linearizable: the leader, after every
commit). Without filters it covers every epoch, host and
process: the fleet-wide profile, read from the database's roll-up over
hosts. Filters narrow it:

  --epoch N, --epochs A-B   epochs (repeatable; unioned)
  --host H                  hosts (repeatable)
  --image PATH|KEY          images: a path ("/bin/sort"), a file name ("sort")
                            or a content key ("buildid:<hex>"); repeatable
  --pid P                   processes, for images kept per process (PID 0:
                            samples not kept per process); repeatable
  --label K=V               hosts registered with these labels (cluster)
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
  dcpi prof --nats nats://127.0.0.1:4222 --label rack=r1 --limit 20
  dcpi prof --db /tmp/prof --by-caller --limit 10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			q, err := pf.query()
			if err != nil {
				return err
			}
			sel := profiledb.Selection{Filter: q.Filter}
			o, err := pf.open(cmd, "dcpi-prof", &sel)
			if err != nil {
				return err
			}
			defer o.close()
			q.Filter = sel.Filter
			if pf.byCaller {
				return runByCaller(cmd.Context(), cmd.OutOrStdout(), o.src, stackQuery(q.Filter, q.Events, q.ImagePaths), pf.limit, pf.json)
			}
			return runProf(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o.src, q, pf.json, func() string {
				return o.selectionHint(cmd.Context(), profiledb.Selection{Filter: q.Filter, Events: q.Events, ImagePaths: q.ImagePaths})
			})
		},
	}
	f := cmd.Flags()
	pf.register(f, "event column `NAME`, in order; the first sorts (repeatable)")
	f.StringVar(&pf.by, "by", "procedure", "one row per `procedure` or per image")
	f.IntVar(&pf.limit, "limit", 0, "print the top `N` rows and sum the rest (0: all)")
	f.BoolVar(&pf.byCaller, "by-caller", false, "each procedure's callers and their shares, from the sampled call stacks")
	return cmd
}

// openLocalDB opens the local profile database at dir read-only: a
// database "dcpi node --db" wrote, or a (stopped) coordinator replica's
// data directory.
func openLocalDB(dir string) (*storage.DB, error) {
	if d, err := coordinator.ProfileDBDir(dir); err == nil {
		dir = d // a (stopped) coordinator replica's data directory
	} else if err := fleetParentError("--db", dir); err != nil {
		return nil, err
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("--db %s: no such directory (write a profile database with: dcpi node --db %s)", dir, dir)
	case err != nil:
		return nil, fmt.Errorf("--db %s: %w", dir, err)
	case !st.IsDir():
		return nil, fmt.Errorf("--db %s: not a directory", dir)
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) == 0 {
		return nil, fmt.Errorf("--db %s: empty directory, not a profile database", dir)
	}
	db, err := storage.Open(dir, storage.Options{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("--db %s: cannot read a profile database there: %w", dir, err)
	}
	return db, nil
}

// query turns the flags into an analysis query, with a clear error for
// each bad one.
func (pf profFlags) query() (report.ProfQuery, error) {
	var q report.ProfQuery
	var err error
	if q.By, err = report.ParseBy(pf.by); err != nil {
		return q, fmt.Errorf("--by %q: want procedure or image", pf.by)
	}
	if pf.limit < 0 {
		return q, fmt.Errorf("--limit %d: want 0 (all) or more", pf.limit)
	}
	q.Limit = pf.limit
	sel, err := pf.selection()
	if err != nil {
		return q, err
	}
	q.Filter, q.Events, q.ImagePaths = sel.Filter, sel.Events, sel.ImagePaths
	return q, nil
}

// runProf prints the table; an empty one is followed by hint's words on
// a --host or --epoch the source does not hold (on stderr with --json).
func runProf(ctx context.Context, w, errw io.Writer, src analysis.Source, q report.ProfQuery, asJSON bool, hint func() string) error {
	t, err := report.Prof(ctx, src, q)
	if err != nil {
		return err
	}
	if asJSON {
		err = t.WriteJSON(w)
	} else {
		err = t.WriteText(w)
	}
	if len(t.Rows) == 0 && err == nil {
		if h := hint(); h != "" {
			if asJSON {
				w = errw
			}
			_, err = fmt.Fprintln(w, h)
		}
	}
	return err
}

// selectLabels narrows q to the hosts whose registered labels include all
// of labels (intersected with hosts q already names).
func selectLabels(ctx context.Context, c *coordinator.Client, labels map[string]string, q *storage.Query) error {
	if len(labels) == 0 {
		return nil
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return fmt.Errorf("--label: reading the node registry: %w", err)
	}
	var hosts []string
	for _, n := range nodes {
		ok := true
		for k, v := range labels {
			if n.Labels[k] != v {
				ok = false
			}
		}
		if ok && (q.Hosts == nil || slices.Contains(q.Hosts, n.Host)) {
			hosts = append(hosts, n.Host)
		}
	}
	if hosts == nil {
		hosts = []string{} // selects nothing
	}
	q.Hosts = hosts
	return nil
}
