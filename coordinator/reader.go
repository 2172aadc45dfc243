package coordinator

import (
	"context"
	"fmt"
	"slices"

	"dcpi/storage"
	"dcpi/wire"
)

// Reader reads the cluster's profile database through the query service
// with the same methods, and the same meaning, as *storage.DB's: the
// analysis tools take either through their Source interfaces. Each call
// runs under its ctx. With Linearizable every read comes from the leader
// after it has applied every write committed before the call; otherwise
// from any replica (a follower may be a moment behind).
type Reader struct {
	Client       *Client
	Linearizable bool
}

// NewReader reads through c.
func NewReader(c *Client, linearizable bool) *Reader {
	return &Reader{Client: c, Linearizable: linearizable}
}

// Profile is storage.DB.Profile.
func (r *Reader) Profile(ctx context.Context, q storage.Query, fn func(image wire.ImageKey, offset uint64, event uint8, host string, count uint64) error) error {
	return r.Client.Profile(ctx, q, r.Linearizable, fn)
}

// Image is storage.DB.Image: ErrNotFound (wrapped) for an image the
// cluster does not hold.
func (r *Reader) Image(ctx context.Context, key wire.ImageKey) (*wire.ImageRecord, error) {
	rs, err := r.Client.Images(ctx, []wire.ImageKey{key})
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("image %v: %w", key, storage.ErrNotFound)
	}
	return rs[0], nil
}

// Stacks is storage.DB.Stacks.
func (r *Reader) Stacks(ctx context.Context, q storage.Query, fn func(st *storage.Stack, event uint8, host string, count uint64) error) error {
	return r.Client.Stacks(ctx, q, r.Linearizable, fn)
}

// MeProfile is storage.DB.MeProfile.
func (r *Reader) MeProfile(ctx context.Context, q storage.Query, fn func(*storage.MeRow) error) error {
	return r.Client.MeProfile(ctx, q, r.Linearizable, fn)
}

// MeHistory is storage.DB.MeHistory.
func (r *Reader) MeHistory(ctx context.Context, q storage.Query, fn func(*storage.MeHistRow) error) error {
	return r.Client.MeHistory(ctx, q, r.Linearizable, fn)
}

// MeAddrs is storage.DB.MeAddrs.
func (r *Reader) MeAddrs(ctx context.Context, q storage.Query, fn func(*storage.MeAddrRow) error) error {
	return r.Client.MeAddrs(ctx, q, r.Linearizable, fn)
}

// ValueLists is storage.DB.ValueLists.
func (r *Reader) ValueLists(ctx context.Context, q storage.ValueQuery) ([]wire.ValueList, error) {
	return r.Client.ValueLists(ctx, storage.Query{Epochs: q.Epochs, Hosts: q.Hosts}, r.Linearizable)
}

// ValueTotals is storage.DB.ValueTotals.
func (r *Reader) ValueTotals(ctx context.Context, q storage.ValueQuery) ([]string, wire.ValueStats, error) {
	return r.Client.ValueTotals(ctx, storage.Query{Epochs: q.Epochs, Hosts: q.Hosts}, r.Linearizable)
}

// Totals is the samples q selects, unknown included.
func (r *Reader) Totals(ctx context.Context, q storage.Query) (uint64, error) {
	t, err := r.Client.Totals(ctx, q, r.Linearizable)
	return t.Samples + t.Unknown, err
}

// Hosts lists the cluster's registered hosts, sorted.
func (r *Reader) Hosts(ctx context.Context) ([]string, error) {
	nodes, err := r.Client.Nodes(ctx)
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

// Nodes is the node registry with liveness (known to the leader).
func (r *Reader) Nodes(ctx context.Context) ([]NodeInfo, error) {
	infos, err := r.Client.Nodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the node registry: %w", err)
	}
	return infos, nil
}

// Epochs lists the epochs with their acknowledgements, from the leader.
func (r *Reader) Epochs(ctx context.Context) ([]EpochInfo, error) {
	es, err := r.Client.Epochs(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the epochs: %w", err)
	}
	return es, nil
}

// PathImages lists every image with path data, from any replica.
func (r *Reader) PathImages(ctx context.Context) ([]storage.PathImage, error) {
	return r.Client.PathImages(ctx)
}

// PathProfile is storage.DB.PathProfile, from any replica.
func (r *Reader) PathProfile(ctx context.Context, src wire.PathSource, image wire.ImageKey, hosts []string) (*wire.PathProfile, error) {
	return r.Client.PathProfile(ctx, src, image, hosts)
}
