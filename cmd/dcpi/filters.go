package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"dcpi/analysis"
	"dcpi/analysis/profileme"
	"dcpi/analysis/report"
	"dcpi/analysis/symbolize"
	valuesa "dcpi/analysis/values"
	"dcpi/coordinator"
	"dcpi/hwsim/alpha"
	"dcpi/storage"
	"dcpi/transport/auth"
	"dcpi/wire"
)

// queryFlags are the options every analysis tool shares:
// where the profile comes from (--db or --nats) and which samples it
// selects (--epoch, --epochs, --host, --label, --event, --image, --pid),
// and --json.
type queryFlags struct {
	dbDir  string
	epochs []string
	ranges []string
	hosts  []string
	images []string
	pids   []uint
	events []string
	json   bool

	nats         []string
	labels       map[string]string
	linearizable bool
}

// register adds the shared flags to f. eventUsage describes --event for
// the tool.
func (qf *queryFlags) register(f *pflag.FlagSet, eventUsage string) {
	f.StringVar(&qf.dbDir, "db", "dcpi-db", "directory of a local profile database (opened read-only)")
	f.StringSliceVar(&qf.epochs, "epoch", nil, "only epoch `N` (repeatable)")
	f.StringArrayVar(&qf.ranges, "epochs", nil, "only epochs `A-B`, inclusive (repeatable)")
	f.StringArrayVar(&qf.hosts, "host", nil, "only host `H` (repeatable)")
	f.StringArrayVar(&qf.images, "image", nil, "only the image at `PATH`, with that file name, or with that content key (repeatable)")
	f.UintSliceVar(&qf.pids, "pid", nil, "only process `P`, for images kept per process (repeatable)")
	f.StringArrayVar(&qf.events, "event", nil, eventUsage)
	f.BoolVar(&qf.json, "json", false, "print JSON for machines")
	f.StringSliceVar(&qf.nats, "nats", nil, "query the cluster through this NATS server instead of a local --db")
	f.StringToStringVar(&qf.labels, "label", nil, "only hosts registered with label `key=value` (repeatable; all must match; cluster only)")
	f.BoolVar(&qf.linearizable, "linearizable", false, "read from the Raft leader after it has applied every commit (cluster only)")
}

// selection is what the shared filter flags select.
type selection struct {
	Filter     storage.Query
	Events     []uint8  // --event, in order; nil: every event present
	ImagePaths []string // --image given as paths or file names
}

// selection turns the flags into a selection, with a clear error for each
// bad one. Labels are applied later, by the opened source (they need the
// cluster's node registry).
func (qf *queryFlags) selection() (selection, error) {
	var s selection
	for _, name := range qf.events {
		e, err := analysis.ParseEvent(strings.TrimSpace(name))
		if err != nil {
			return s, fmt.Errorf("--event: %w", errors.Unwrap(err))
		}
		if slices.Contains(s.Events, e) {
			return s, fmt.Errorf("--event %s: given twice", name)
		}
		s.Events = append(s.Events, e)
	}
	for _, v := range qf.epochs {
		e, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return s, fmt.Errorf("--epoch %q: want an epoch number", v)
		}
		s.Filter.Epochs = append(s.Filter.Epochs, e)
	}
	for _, r := range qf.ranges {
		lo, hi, err := parseEpochRange(r)
		if err != nil {
			return s, err
		}
		for e := lo; ; e++ {
			s.Filter.Epochs = append(s.Filter.Epochs, e)
			if e == hi {
				break
			}
		}
	}
	for _, h := range qf.hosts {
		if h == "" {
			return s, fmt.Errorf("--host: empty host name")
		}
		s.Filter.Hosts = append(s.Filter.Hosts, h)
	}
	for _, p := range qf.pids {
		if p > 1<<32-1 {
			return s, fmt.Errorf("--pid %d: out of range", p)
		}
		s.Filter.PIDs = append(s.Filter.PIDs, uint32(p))
	}
	for _, im := range qf.images {
		switch {
		case im == "":
			return s, fmt.Errorf("--image: empty")
		case strings.HasPrefix(im, "buildid:") || strings.HasPrefix(im, "sha256:"):
			k, err := wire.ParseImageKey(im)
			if err != nil {
				return s, fmt.Errorf("--image: %w", err)
			}
			s.Filter.Images = append(s.Filter.Images, k)
		default:
			s.ImagePaths = append(s.ImagePaths, im)
		}
	}
	if len(s.Filter.Images) > 0 && len(s.ImagePaths) > 0 {
		// Filter.Images and ImagePaths intersect; the flags mean union.
		return s, fmt.Errorf("--image: give either content keys or paths, not both")
	}
	return s, nil
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

// openedSource is a profile database opened for a tool: the Source (with
// a symbol cache), the catalog of its hosts and epochs, and how to turn
// labels into hosts.
type openedSource struct {
	src *symbolize.Symbolizer
	// hosts and epochs list what the database holds, for one sample set
	// per host or per epoch.
	hosts  func() ([]string, error)
	epochs func() ([]uint64, error)
	// nodes lists the node registry (local: the hosts dcpi node and
	// dcpi profile recorded).
	nodes func() ([]storage.Node, error)
	// labels narrows q to the hosts registered with all of labels.
	labels func(labels map[string]string, q *storage.Query) error
	// imageFile reads an image file a node uploaded (nil: no cluster).
	imageFile func(wire.ImageKey) ([]byte, error)
	// epochInfo and nodeInfo are the epochs with their acknowledgements
	// and the node registry with liveness (known only to a cluster's
	// leader), for dcpi web's pages; totals the samples q selects.
	epochInfo func() ([]coordinator.EpochInfo, error)
	nodeInfo  func() ([]coordinator.NodeInfo, error)
	totals    func(q storage.Query) (uint64, error)
	// me reads the ProfileMe sums (dcpi me).
	me profileme.Source
	// values reads value sampling's hot lists and accounting (dcpi values).
	values valuesa.Source
	close  func()
	// where names the source in hints: "this database", "the cluster".
	where string
}

// open opens the source the flags name (--nats, else --db) and applies
// --label to sel. The caller must call close.
func (qf *queryFlags) open(cmd *cobra.Command, name string, sel *selection) (*openedSource, error) {
	if len(qf.nats) > 0 {
		ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
		nc, err := connectTool(natsConfig(cmd, qf.nats), auth.Query, name)
		if err != nil {
			cancel()
			return nil, err
		}
		o := clusterOpened(ctx, nc, qf.linearizable)
		o.close = func() { nc.Close(); cancel() }
		if err := o.labels(qf.labels, &sel.Filter); err != nil {
			o.close()
			return nil, err
		}
		return o, nil
	}
	if len(qf.labels) > 0 {
		return nil, errNoLabels
	}
	db, err := openLocalDB(qf.dbDir)
	if err != nil {
		return nil, err
	}
	return localOpened(db), nil
}

// clusterOpened is the source of a cluster reached through nc, queried
// under ctx. Its close does nothing: the caller owns nc.
func clusterOpened(ctx context.Context, nc *nats.Conn, linearizable bool) *openedSource {
	c := coordinator.NewClient(nc)
	return &openedSource{
		src:       symbolize.New(clusterSource{ctx: ctx, c: c, linearizable: linearizable}),
		hosts:     func() ([]string, error) { return clusterHosts(ctx, c) },
		epochs:    func() ([]uint64, error) { return clusterEpochs(ctx, c) },
		nodes:     func() ([]storage.Node, error) { return clusterNodes(ctx, c) },
		labels:    func(labels map[string]string, q *storage.Query) error { return selectLabels(ctx, c, labels, q) },
		imageFile: clusterImageFiles(ctx, nc),
		epochInfo: func() ([]coordinator.EpochInfo, error) { return c.Epochs(ctx) },
		nodeInfo:  func() ([]coordinator.NodeInfo, error) { return c.Nodes(ctx) },
		totals: func(q storage.Query) (uint64, error) {
			t, err := c.Totals(ctx, q, false)
			return t.Samples + t.Unknown, err
		},
		me:     clusterSource{ctx: ctx, c: c, linearizable: linearizable},
		values: clusterValues{ctx: ctx, c: c, linearizable: linearizable},
		close:  func() {},
		where:  "the cluster",
	}
}

// localOpened is the source of a local database; its close closes db.
func localOpened(db *storage.DB) *openedSource {
	return &openedSource{
		src:    symbolize.New(db),
		hosts:  db.Hosts,
		epochs: func() ([]uint64, error) { return localEpochs(db) },
		nodes:  db.Nodes,
		labels: func(labels map[string]string, q *storage.Query) error {
			if len(labels) == 0 {
				return nil
			}
			return errNoLabels
		},
		epochInfo: func() ([]coordinator.EpochInfo, error) { return coordinator.LocalEpochs(db) },
		nodeInfo: func() ([]coordinator.NodeInfo, error) {
			nodes, err := db.Nodes()
			infos := make([]coordinator.NodeInfo, len(nodes))
			for i, n := range nodes {
				infos[i] = coordinator.NodeInfo{Node: n}
			}
			return infos, err
		},
		totals: func(q storage.Query) (uint64, error) {
			samples, unknown, _, err := db.Totals(q)
			return samples + unknown, err
		},
		me:     db,
		values: db,
		close:  func() { db.Close() },
		where:  "this database",
	}
}

var errNoLabels = errors.New("--label: labels live in the cluster's node registry; query the cluster with --nats URL")

// emptyHint says why a selection that matched nothing did: a --host or
// --epoch the source does not hold, with the ones it does ("no samples for
// host alpha9; hosts in this database: alpha0, alpha1"). It is "" when
// every named host and epoch is known (or the source cannot say).
func (o *openedSource) emptyHint(f storage.Query) string {
	return knownHint(f, o.where, o.hosts, o.epochs)
}

// selectionHint is emptyHint, and when the hosts and epochs are known, the
// images and events they hold (contentHint).
func (o *openedSource) selectionHint(sel selection) string {
	if h := o.emptyHint(sel.Filter); h != "" {
		return h
	}
	return contentHint(o.src, sel, o.where)
}

// contentHint says, for a selection that matched nothing because of its
// --image or --event, which images and events the same hosts, epochs and
// PIDs do hold samples of, most samples first ("images with samples in
// this database: /bin/sort, /vmunix"). It scans the profile without those
// two filters, which only an empty result pays for.
func contentHint(src analysis.Source, sel selection, where string) string {
	if len(sel.Filter.Images) == 0 && len(sel.ImagePaths) == 0 && len(sel.Events) == 0 {
		return ""
	}
	q := sel.Filter
	q.Images, q.Events = nil, nil
	byImage, byEvent := map[wire.ImageKey]uint64{}, map[uint8]uint64{}
	if err := src.Profile(q, func(image wire.ImageKey, _ uint64, event uint8, _ string, n uint64) error {
		byImage[image] += n
		byEvent[event] += n
		return nil
	}); err != nil {
		return ""
	}
	var hints []string
	if len(sel.Filter.Images) > 0 || len(sel.ImagePaths) > 0 {
		var names []string
		for _, k := range mostFirst(byImage) {
			name := k.String()
			if r, err := src.Image(k); err == nil && r.Path != "" {
				name = r.Path
			}
			names = append(names, name)
		}
		hints = append(hints, fmt.Sprintf("images with samples in %s: %s", where, orNone(capList(names, 12))))
	}
	if len(sel.Events) > 0 {
		var names []string
		for _, e := range mostFirst(byEvent) {
			names = append(names, alpha.Event(e).String())
		}
		hints = append(hints, fmt.Sprintf("events with samples in %s: %s", where, orNone(names)))
	}
	return strings.Join(hints, "; ")
}

// procedureHint names the procedures with the most samples in sel, for a
// dcpi list whose procedures have none ("procedures with the most samples
// here: lap, slot, naive").
func procedureHint(src analysis.Source, sel selection) string {
	t, err := report.Prof(src, report.ProfQuery{Filter: sel.Filter, Events: sel.Events, ImagePaths: sel.ImagePaths, Limit: 10})
	if err != nil {
		return ""
	}
	var names []string
	for _, r := range t.Rows {
		if r.Procedure != "" && !slices.Contains(names, r.Procedure) {
			names = append(names, r.Procedure)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "procedures with the most samples in the selection: " + strings.Join(names, ", ")
}

// mostFirst returns m's keys by count, most first.
func mostFirst[K comparable](m map[K]uint64) []K {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b K) int {
		if c := cmp.Compare(m[b], m[a]); c != 0 {
			return c
		}
		return cmp.Compare(fmt.Sprint(a), fmt.Sprint(b))
	})
	return keys
}

// capList keeps the first n names and says how many more there are.
func capList(names []string, n int) []string {
	if len(names) <= n {
		return names
	}
	return append(names[:n:n], fmt.Sprintf("and %d more", len(names)-n))
}

func knownHint(f storage.Query, where string, hosts func() ([]string, error), epochs func() ([]uint64, error)) string {
	var hints []string
	if len(f.Hosts) > 0 && hosts != nil {
		if known, err := hosts(); err == nil {
			for _, h := range f.Hosts {
				if !slices.Contains(known, h) {
					hints = append(hints, fmt.Sprintf("no samples for host %s; hosts in %s: %s", h, where, orNone(known)))
				}
			}
		}
	}
	if len(f.Epochs) > 0 && epochs != nil {
		if known, err := epochs(); err == nil {
			var missing []string
			for _, e := range f.Epochs {
				if !slices.Contains(known, e) {
					missing = append(missing, strconv.FormatUint(e, 10))
				}
			}
			if len(missing) > 0 {
				names := make([]string, len(known))
				for i, e := range known {
					names[i] = strconv.FormatUint(e, 10)
				}
				hints = append(hints, fmt.Sprintf("no epoch %s; epochs in %s: %s", strings.Join(missing, ", "), where, orNone(names)))
			}
		}
	}
	return strings.Join(hints, "; ")
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// clusterHosts lists the cluster's registered hosts, sorted.
func clusterHosts(ctx context.Context, c *coordinator.Client) ([]string, error) {
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the node registry: %w", err)
	}
	var hosts []string
	for _, n := range nodes {
		hosts = append(hosts, n.Host)
	}
	slices.Sort(hosts)
	return hosts, nil
}

// clusterNodes lists the cluster's node registry.
func clusterNodes(ctx context.Context, c *coordinator.Client) ([]storage.Node, error) {
	infos, err := c.Nodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the node registry: %w", err)
	}
	nodes := make([]storage.Node, len(infos))
	for i, n := range infos {
		nodes[i] = n.Node
	}
	return nodes, nil
}

// clusterEpochs lists the cluster's epochs, in order.
func clusterEpochs(ctx context.Context, c *coordinator.Client) ([]uint64, error) {
	es, err := c.Epochs(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the epochs: %w", err)
	}
	var out []uint64
	for _, e := range es {
		out = append(out, e.Number)
	}
	slices.Sort(out)
	return out, nil
}

// localEpochs lists a local database's epochs.
func localEpochs(db *storage.DB) ([]uint64, error) {
	es, err := db.Epochs()
	if err != nil {
		return nil, err
	}
	out := make([]uint64, 0, len(es))
	for _, e := range es {
		out = append(out, e.Number)
	}
	return out, nil
}
