package analysis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"dcpi/storage"
	"dcpi/wire"
)

// StackSource is a Source that also holds sampled call stacks: the second,
// independent view of the samples (wire.StackEntry). Stacks has
// storage.DB.Stacks's contract: fn is called once per (stack, event, host)
// that q selects — a stack selected by its leaf frame's image — with the
// count summed over the selected epochs and PIDs; host is "" when q.Hosts
// is nil. The tools that read stacks take a Source and ask it for this
// interface, so a source without stacks (a test's, or an older one) still
// serves every flat tool.
type StackSource interface {
	Source
	Stacks(ctx context.Context, q storage.Query, fn func(st *storage.Stack, event uint8, host string, count uint64) error) error
}

var _ StackSource = (*storage.DB)(nil)

// ErrNoStacks: the source cannot give call stacks at all (as opposed to
// giving none for a query).
var ErrNoStacks = errors.New("the profile source does not serve call stacks")

// Stacks reads q's stacks from src, or fails with ErrNoStacks when src
// has none to give.
func Stacks(ctx context.Context, src Source, q storage.Query, fn func(st *storage.Stack, event uint8, host string, count uint64) error) error {
	ss, ok := src.(StackSource)
	if !ok {
		return fmt.Errorf("analysis: %w", ErrNoStacks)
	}
	return ss.Stacks(ctx, q, fn)
}

// memStackKey is a MemSource stack count's key.
type memStackKey struct {
	epoch uint64
	event uint8
	host  string
	pid   uint32
	id    uint64
}

// AddStack merges count samples of a call stack (frames leaf first, as
// wire.StackEntry's) into the MemSource. A stack's ID is the order in
// which MemSource first saw it, from 1.
func (m *MemSource) AddStack(epoch uint64, event uint8, host string, pid uint32, truncated bool, frames []wire.Frame, count uint64) {
	k := fmt.Sprint(truncated, frames)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stackIDs == nil {
		m.stackIDs, m.stacks, m.stackCounts = map[string]uint64{}, map[uint64]*storage.Stack{}, map[memStackKey]uint64{}
	}
	id, ok := m.stackIDs[k]
	if !ok {
		id = uint64(len(m.stackIDs) + 1)
		m.stackIDs[k] = id
		m.stacks[id] = &storage.Stack{ID: id, Truncated: truncated, Frames: slices.Clone(frames)}
	}
	sk := memStackKey{epoch, event, host, pid, id}
	m.stackCounts[sk] = satAdd(m.stackCounts[sk], count)
}

// Stacks implements StackSource with storage.DB.Stacks's contract.
func (m *MemSource) Stacks(_ context.Context, q storage.Query, fn func(st *storage.Stack, event uint8, host string, count uint64) error) error {
	type row struct {
		event uint8
		id    uint64
		host  string
	}
	sum := map[row]uint64{}
	stacks := map[uint64]storage.Stack{}
	m.mu.Lock()
	for k, n := range m.stackCounts {
		st := m.stacks[k.id]
		if q.Epochs != nil && !slices.Contains(q.Epochs, k.epoch) ||
			q.Events != nil && !slices.Contains(q.Events, k.event) ||
			q.Hosts != nil && !slices.Contains(q.Hosts, k.host) ||
			q.Images != nil && !slices.Contains(q.Images, st.Leaf().Image) ||
			q.PIDs != nil && !slices.Contains(q.PIDs, k.pid) ||
			q.HostPIDs != nil && !slices.Contains(q.HostPIDs[k.host], k.pid) {
			continue
		}
		r := row{k.event, k.id, k.host}
		if q.Hosts == nil {
			r.host = ""
		}
		sum[r] = satAdd(sum[r], n)
		stacks[k.id] = *st
	}
	m.mu.Unlock()
	rows := make([]row, 0, len(sum))
	for r := range sum {
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b row) int {
		if c := cmp.Compare(a.event, b.event); c != 0 {
			return c
		}
		if c := cmp.Compare(a.id, b.id); c != 0 {
			return c
		}
		return cmp.Compare(a.host, b.host)
	})
	for _, r := range rows {
		st := stacks[r.id]
		st.Frames = slices.Clone(st.Frames)
		if err := fn(&st, r.event, r.host, sum[r]); err != nil {
			return err
		}
	}
	return nil
}
