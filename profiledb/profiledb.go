// Package profiledb is the profile database as the analysis tools open
// it: a local Pebble database (Local) or a cluster reached through the
// coordinator's query service (Cluster), behind one interface, DB. Beyond
// the samples the tools read (analysis.StackSource, ProfileMe's and value
// sampling's sources), a DB lists what it holds — hosts, epochs, the node
// registry — so that a selection that matched nothing can say why
// (hints.go); SelectHosts narrows a query to the hosts whose registered
// labels a selector matches (labels.go),
// and reads the image files nodes uploaded. Selection turns the tools'
// shared filters into a storage.Query. OpenDir opens a --db directory
// read-only; Prof, Stacks, Trend and ReadTotals are dcpi prof's, dcpi
// stacks', dcpi trend's and dcpi totals' reports, from their options as
// given to the printable result.
package profiledb

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dcpi/analysis"
	"dcpi/analysis/imagefind"
	"dcpi/analysis/profileme"
	"dcpi/analysis/values"
	"dcpi/coordinator"
	"dcpi/storage"
	"dcpi/transport"
	"dcpi/wire"
)

// DB is a profile database opened for the tools.
type DB interface {
	analysis.StackSource
	profileme.Source
	profileme.HistorySource
	profileme.AddrSource
	values.Source

	// Hosts lists the hosts with samples or registrations, sorted.
	Hosts(ctx context.Context) ([]string, error)
	// EpochNumbers lists the epochs, in order.
	EpochNumbers(ctx context.Context) ([]uint64, error)
	// Epochs lists the epochs with their acknowledgements ("waiting
	// for" is known only to a cluster's leader).
	Epochs(ctx context.Context) ([]coordinator.EpochInfo, error)
	// Nodes is the node registry (liveness known only to a cluster's
	// leader).
	Nodes(ctx context.Context) ([]coordinator.NodeInfo, error)
	// Totals is the samples q selects, unknown included.
	Totals(ctx context.Context, q storage.Query) (uint64, error)
	// StoredTotals is what q selects as stored: samples with an image,
	// unknown, and every drop counter (dcpi totals).
	StoredTotals(ctx context.Context, q storage.Query) (coordinator.TotalsReply, error)
	// ImageFile reads the file a node uploaded for key (wrapping
	// imagefind.ErrNotUploaded when none was; nil for a local database,
	// which keeps no files).
	ImageFile(ctx context.Context, key wire.ImageKey) ([]byte, error)
	// PathImages lists every image with uploaded path data, of either
	// source; PathProfile merges one image's uploads of hosts (nil:
	// every host's). dcpi pp fleet reads them (analysis/fleetpaths).
	PathImages(ctx context.Context) ([]storage.PathImage, error)
	PathProfile(ctx context.Context, src wire.PathSource, image wire.ImageKey, hosts []string) (*wire.PathProfile, error)
	// Where names the database in hints: "this database", "the cluster".
	Where() string
	Close() error
}

// Local is a local profile database.
type Local struct {
	*storage.DB
	// Name names it in hints (default "this database").
	Name string
}

var _ DB = (*Local)(nil)

// NewLocal opens db for the tools; Close closes db.
func NewLocal(db *storage.DB) *Local { return &Local{DB: db} }

// Hosts lists the hosts the database holds samples of.
func (l *Local) Hosts(context.Context) ([]string, error) { return l.DB.Hosts() }

// EpochNumbers lists the database's epochs.
func (l *Local) EpochNumbers(context.Context) ([]uint64, error) {
	es, err := l.DB.Epochs()
	if err != nil {
		return nil, err
	}
	out := make([]uint64, 0, len(es))
	for _, e := range es {
		out = append(out, e.Number)
	}
	return out, nil
}

// Epochs lists the epochs with their acknowledgements.
func (l *Local) Epochs(context.Context) ([]coordinator.EpochInfo, error) {
	return coordinator.LocalEpochs(l.DB)
}

// Nodes lists the hosts dcpi node and dcpi profile recorded.
func (l *Local) Nodes(context.Context) ([]coordinator.NodeInfo, error) {
	nodes, err := l.DB.Nodes()
	infos := make([]coordinator.NodeInfo, len(nodes))
	for i, n := range nodes {
		infos[i] = coordinator.NodeInfo{Node: n}
	}
	return infos, err
}

// Totals is the samples q selects.
func (l *Local) Totals(_ context.Context, q storage.Query) (uint64, error) {
	samples, unknown, _, err := l.DB.Totals(q)
	return samples + unknown, err
}

// StoredTotals reads q's samples, unknown and drop counters.
func (l *Local) StoredTotals(_ context.Context, q storage.Query) (coordinator.TotalsReply, error) {
	var t coordinator.TotalsReply
	var err error
	t.Samples, t.Unknown, t.Drops, err = l.DB.Totals(q)
	return t, err
}

// ImageFile: a local database keeps no image files.
func (l *Local) ImageFile(context.Context, wire.ImageKey) ([]byte, error) {
	return nil, fmt.Errorf("%w: a local database keeps no image files", imagefind.ErrNotUploaded)
}

// PathImages lists every image with path data, of either source.
func (l *Local) PathImages(context.Context) ([]storage.PathImage, error) { return l.DB.PathImages(0) }

// PathProfile is storage.DB.PathProfile.
func (l *Local) PathProfile(_ context.Context, src wire.PathSource, image wire.ImageKey, hosts []string) (*wire.PathProfile, error) {
	return l.DB.PathProfile(src, image, hosts)
}

// Where names the database.
func (l *Local) Where() string {
	if l.Name != "" {
		return l.Name
	}
	return "this database"
}

// Cluster is a cluster's database, read through the coordinator's query
// service (coordinator.Reader).
type Cluster struct {
	*coordinator.Reader
	nc *nats.Conn
}

var _ DB = (*Cluster)(nil)

// NewCluster reads the cluster nc reaches; Close does not close nc.
func NewCluster(nc *nats.Conn, linearizable bool) *Cluster {
	return &Cluster{Reader: coordinator.NewReader(coordinator.NewClient(nc), linearizable), nc: nc}
}

// EpochNumbers lists the cluster's epochs, in order.
func (c *Cluster) EpochNumbers(ctx context.Context) ([]uint64, error) {
	es, err := c.Reader.Epochs(ctx)
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, e := range es {
		out = append(out, e.Number)
	}
	slices.Sort(out)
	return out, nil
}

// StoredTotals asks a replica (the leader when linearizable) for q's
// samples, unknown and drop counters.
func (c *Cluster) StoredTotals(ctx context.Context, q storage.Query) (coordinator.TotalsReply, error) {
	return c.Client.Totals(ctx, q, c.Linearizable)
}

// ImageFile reads the file a node uploaded to the cluster.
func (c *Cluster) ImageFile(ctx context.Context, key wire.ImageKey) ([]byte, error) {
	js, err := jetstream.New(c.nc)
	if err != nil {
		return nil, err
	}
	b, err := transport.FetchImageFile(ctx, js, key)
	if errors.Is(err, transport.ErrImageNotFound) {
		return nil, fmt.Errorf("%w: %w", imagefind.ErrNotUploaded, err)
	}
	return b, err
}

// Where names the cluster.
func (c *Cluster) Where() string { return "the cluster" }

// Close does nothing: the caller owns the connection.
func (c *Cluster) Close() error { return nil }

// RunInfoOf is the run record of a local database dcpi profile wrote
// (storage.RunInfo); ok is false for a cluster's or an older database.
func RunInfoOf(db DB) (r storage.RunInfo, ok bool) {
	if l, isLocal := db.(*Local); isLocal {
		r, ok, _ = l.DB.RunInfo()
	}
	return r, ok
}

// MeIntervalOf is the ProfileMe sampling interval S the run that wrote db
// recorded (dcpi profile does), else dflt (the simulated hardware's
// default, for a cluster's or an older database): every ProfileMe
// estimate is k·S.
func MeIntervalOf(db DB, dflt float64) float64 {
	if ri, ok := RunInfoOf(db); ok && ri.MeInterval > 0 {
		return ri.MeInterval
	}
	return dflt
}
