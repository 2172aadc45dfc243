package analysis

import (
	"cmp"
	"context"
	"fmt"
	"math/bits"
	"slices"
	"sync"

	"dcpi/storage"
	"dcpi/wire"
)

// Source is what the tools read: a profile database, local or remote.
//
// Profile has storage.DB.Profile's contract: fn is called once per (image,
// offset, event, host) that q selects, in (event, image, offset, host)
// order, with the count summed over the selected epochs and PIDs; when
// q.Hosts is nil the count is summed over hosts too and host is "". Image
// returns the record the node uploaded for key, or an error wrapping
// storage.ErrNotFound when none was.
type Source interface {
	Profile(ctx context.Context, q storage.Query, fn func(image wire.ImageKey, offset uint64, event uint8, host string, count uint64) error) error
	Image(ctx context.Context, key wire.ImageKey) (*wire.ImageRecord, error)
}

var _ Source = (*storage.DB)(nil)

var _ StackSource = (*MemSource)(nil)

// MemSource is Source's in-memory twin: records and images in maps. Its
// methods are safe for concurrent use.
type MemSource struct {
	mu     sync.Mutex
	counts map[storage.Record]uint64 // Count zero in the keys
	images map[wire.ImageKey]*wire.ImageRecord

	// Call stacks (stacksource.go), made at the first AddStack.
	stackIDs    map[string]uint64
	stacks      map[uint64]*storage.Stack
	stackCounts map[memStackKey]uint64
}

// NewMemSource returns an empty MemSource.
func NewMemSource() *MemSource {
	return &MemSource{counts: map[storage.Record]uint64{}, images: map[wire.ImageKey]*wire.ImageRecord{}}
}

// Add merges r.Count into the count of r's (epoch, event, image, offset,
// host, PID), saturating as storage's counters do.
func (m *MemSource) Add(r storage.Record) {
	n := r.Count
	r.Count = 0
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counts[r] = satAdd(m.counts[r], n)
}

// PutImage stores an image record (a copy) under its key.
func (m *MemSource) PutImage(r *wire.ImageRecord) {
	c := *r
	c.Symbols = slices.Clone(r.Symbols)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.images[r.Key] = &c
}

// Image returns a copy of the record stored under key.
func (m *MemSource) Image(_ context.Context, key wire.ImageKey) (*wire.ImageRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.images[key]
	if !ok {
		return nil, fmt.Errorf("analysis: image %v: %w", key, storage.ErrNotFound)
	}
	c := *r
	c.Symbols = slices.Clone(r.Symbols)
	return &c, nil
}

type memKey struct {
	event  uint8
	image  wire.ImageKey
	offset uint64
	host   string
}

// Profile implements Source with storage.DB.Profile's contract.
func (m *MemSource) Profile(_ context.Context, q storage.Query, fn func(image wire.ImageKey, offset uint64, event uint8, host string, count uint64) error) error {
	sel := func(list []uint64, v uint64) bool { return list == nil || slices.Contains(list, v) }
	sum := map[memKey]uint64{}
	m.mu.Lock()
	for r, n := range m.counts {
		if !sel(q.Epochs, r.Epoch) ||
			q.Events != nil && !slices.Contains(q.Events, r.Event) ||
			q.Hosts != nil && !slices.Contains(q.Hosts, r.Host) ||
			q.Images != nil && !slices.Contains(q.Images, r.Image) ||
			q.PIDs != nil && !slices.Contains(q.PIDs, r.PID) ||
			q.HostPIDs != nil && !slices.Contains(q.HostPIDs[r.Host], r.PID) {
			continue
		}
		k := memKey{r.Event, r.Image, r.Offset, r.Host}
		if q.Hosts == nil {
			k.host = ""
		}
		sum[k] = satAdd(sum[k], n)
	}
	m.mu.Unlock()
	keys := slices.SortedFunc(func(yield func(memKey) bool) {
		for k := range sum {
			if !yield(k) {
				return
			}
		}
	}, func(a, b memKey) int {
		if c := cmp.Compare(a.event, b.event); c != 0 {
			return c
		}
		if c := a.image.Compare(b.image); c != 0 {
			return c
		}
		if c := cmp.Compare(a.offset, b.offset); c != 0 {
			return c
		}
		return cmp.Compare(a.host, b.host)
	})
	for _, k := range keys {
		if err := fn(k.image, k.offset, k.event, k.host, sum[k]); err != nil {
			return err
		}
	}
	return nil
}

// satAdd adds sample counts, saturating at 2^64-1 as storage's merges do.
func satAdd(a, b uint64) uint64 {
	s, c := bits.Add64(a, b, 0)
	if c != 0 {
		return ^uint64(0)
	}
	return s
}
