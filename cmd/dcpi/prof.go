package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"dcpi/analysis"
	"dcpi/coordinator"
	"dcpi/storage"
	"dcpi/wire"
)

func init() { subcommands = append(subcommands, newProfCommand) }

// profFlags are dcpi prof's options.
type profFlags struct {
	dbDir  string
	epochs []string
	ranges []string
	hosts  []string
	images []string
	pids   []uint
	events []string
	by     string
	limit  int
	json   bool

	nats         []string
	labels       map[string]string
	linearizable bool
}

// maxEpochRange bounds --epochs A-B: the range becomes a list in the
// query, one entry per epoch.
const maxEpochRange = 1 << 20

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
"omitted_rows", "omitted_counts"}, per-row arrays parallel to "events".`,
		Example: `  dcpi node --mix default --seconds 0.3 --db /tmp/prof
  dcpi prof --db /tmp/prof
  dcpi prof --db /tmp/prof --event imiss --event cycles --limit 10
  dcpi prof --db /tmp/prof --by image
  dcpi prof --db /tmp/prof --image hashdb --epochs 1-3 --host alpha0
  dcpi prof --db /tmp/fleet/c1      # a stopped coordinator replica's data directory
  dcpi prof --db /tmp/prof --json | jq '.rows[0]'
  dcpi prof --nats nats://127.0.0.1:4222 --label rack=r1 --limit 20`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			q, err := pf.query()
			if err != nil {
				return err
			}
			if len(pf.nats) > 0 {
				ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
				defer cancel()
				nc, err := connectNATS(natsConfig(cmd, pf.nats), "dcpi-prof", func(string, ...any) {})
				if err != nil {
					return err
				}
				defer nc.Close()
				c := coordinator.NewClient(nc)
				if err := selectLabels(ctx, c, pf.labels, &q.Filter); err != nil {
					return err
				}
				return runProf(cmd.OutOrStdout(), analysis.NewSymbolizer(clusterSource{ctx: ctx, c: c, linearizable: pf.linearizable}), q, pf.json)
			}
			if len(pf.labels) > 0 {
				return fmt.Errorf("--label: labels live in the cluster's node registry; query the cluster with --nats URL")
			}
			src, closeSrc, err := openProfSource(pf)
			if err != nil {
				return err
			}
			defer closeSrc()
			return runProf(cmd.OutOrStdout(), src, q, pf.json)
		},
	}
	f := cmd.Flags()
	f.StringVar(&pf.dbDir, "db", "dcpi-db", "directory of a local profile database (opened read-only)")
	f.StringSliceVar(&pf.epochs, "epoch", nil, "only epoch `N` (repeatable)")
	f.StringArrayVar(&pf.ranges, "epochs", nil, "only epochs `A-B`, inclusive (repeatable)")
	f.StringArrayVar(&pf.hosts, "host", nil, "only host `H` (repeatable)")
	f.StringArrayVar(&pf.images, "image", nil, "only the image at `PATH`, with that file name, or with that content key (repeatable)")
	f.UintSliceVar(&pf.pids, "pid", nil, "only process `P`, for images kept per process (repeatable)")
	f.StringArrayVar(&pf.events, "event", nil, "event column `NAME`, in order; the first sorts (repeatable)")
	f.StringVar(&pf.by, "by", "procedure", "one row per `procedure` or per image")
	f.IntVar(&pf.limit, "limit", 0, "print the top `N` rows and sum the rest (0: all)")
	f.BoolVar(&pf.json, "json", false, "print JSON for machines")
	f.StringSliceVar(&pf.nats, "nats", nil, "query the cluster through this NATS server instead of a local --db")
	f.StringToStringVar(&pf.labels, "label", nil, "only hosts registered with label `key=value` (repeatable; all must match; cluster only)")
	f.BoolVar(&pf.linearizable, "linearizable", false, "read from the Raft leader after it has applied every commit (cluster only)")
	return cmd
}

// openProfSource builds the Source the command reads: today a local
// database. This is the one place a cluster source goes: with
// --coordinator/--nats URL, return the coordinator's query client (an
// analysis.Source) and its close function instead.
func openProfSource(pf profFlags) (analysis.Source, func() error, error) {
	if dir, err := coordinator.ProfileDBDir(pf.dbDir); err == nil {
		pf.dbDir = dir // a (stopped) coordinator replica's data directory
	}
	st, err := os.Stat(pf.dbDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, fmt.Errorf("--db %s: no such directory (write a profile database with: dcpi node --db %s)", pf.dbDir, pf.dbDir)
	case err != nil:
		return nil, nil, fmt.Errorf("--db %s: %w", pf.dbDir, err)
	case !st.IsDir():
		return nil, nil, fmt.Errorf("--db %s: not a directory", pf.dbDir)
	}
	if ents, err := os.ReadDir(pf.dbDir); err == nil && len(ents) == 0 {
		return nil, nil, fmt.Errorf("--db %s: empty directory, not a profile database", pf.dbDir)
	}
	db, err := storage.Open(pf.dbDir, storage.Options{ReadOnly: true})
	if err != nil {
		return nil, nil, fmt.Errorf("--db %s: cannot read a profile database there: %w", pf.dbDir, err)
	}
	return db, db.Close, nil
}

// query turns the flags into an analysis query, with a clear error for
// each bad one.
func (pf profFlags) query() (analysis.ProfQuery, error) {
	var q analysis.ProfQuery
	var err error
	if q.By, err = analysis.ParseBy(pf.by); err != nil {
		return q, fmt.Errorf("--by %q: want procedure or image", pf.by)
	}
	if pf.limit < 0 {
		return q, fmt.Errorf("--limit %d: want 0 (all) or more", pf.limit)
	}
	q.Limit = pf.limit
	for _, name := range pf.events {
		e, err := analysis.ParseEvent(strings.TrimSpace(name))
		if err != nil {
			return q, fmt.Errorf("--event: %w", errors.Unwrap(err))
		}
		if slices.Contains(q.Events, e) {
			return q, fmt.Errorf("--event %s: given twice", name)
		}
		q.Events = append(q.Events, e)
	}
	if len(pf.epochs) > 0 || len(pf.ranges) > 0 {
		for _, s := range pf.epochs {
			e, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
			if err != nil {
				return q, fmt.Errorf("--epoch %q: want an epoch number", s)
			}
			q.Filter.Epochs = append(q.Filter.Epochs, e)
		}
		for _, r := range pf.ranges {
			lo, hi, err := parseEpochRange(r)
			if err != nil {
				return q, err
			}
			for e := lo; ; e++ {
				q.Filter.Epochs = append(q.Filter.Epochs, e)
				if e == hi {
					break
				}
			}
		}
	}
	for _, h := range pf.hosts {
		if h == "" {
			return q, fmt.Errorf("--host: empty host name")
		}
		q.Filter.Hosts = append(q.Filter.Hosts, h)
	}
	for _, p := range pf.pids {
		if p > 1<<32-1 {
			return q, fmt.Errorf("--pid %d: out of range", p)
		}
		q.Filter.PIDs = append(q.Filter.PIDs, uint32(p))
	}
	for _, im := range pf.images {
		switch {
		case im == "":
			return q, fmt.Errorf("--image: empty")
		case strings.HasPrefix(im, "buildid:") || strings.HasPrefix(im, "sha256:"):
			k, err := wire.ParseImageKey(im)
			if err != nil {
				return q, fmt.Errorf("--image: %w", err)
			}
			q.Filter.Images = append(q.Filter.Images, k)
		default:
			q.ImagePaths = append(q.ImagePaths, im)
		}
	}
	if len(q.Filter.Images) > 0 && len(q.ImagePaths) > 0 {
		// Filter.Images and ImagePaths intersect; the flags mean union.
		return q, fmt.Errorf("--image: give either content keys or paths, not both")
	}
	return q, nil
}

// parseEpochRange parses "A-B" (inclusive) or a single "N".
func parseEpochRange(s string) (lo, hi uint64, err error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		b = a
	}
	lo, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 64)
	hi, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 64)
	switch {
	case err1 != nil || err2 != nil:
		return 0, 0, fmt.Errorf("--epochs %q: want A-B with A and B epoch numbers", s)
	case hi < lo:
		return 0, 0, fmt.Errorf("--epochs %q: range ends before it starts", s)
	case hi-lo >= maxEpochRange:
		return 0, 0, fmt.Errorf("--epochs %q: more than %d epochs", s, maxEpochRange)
	}
	return lo, hi, nil
}

func runProf(w io.Writer, src analysis.Source, q analysis.ProfQuery, asJSON bool) error {
	t, err := analysis.Prof(src, q)
	if err != nil {
		return err
	}
	if asJSON {
		return analysis.WriteJSON(w, t)
	}
	return analysis.WriteText(w, t)
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
