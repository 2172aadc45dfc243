package storage

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"dcpi/wire"
)

// stackRow is a grouping key of Stacks: (event, stack, host).
type stackRow struct {
	event uint8
	id    uint64
	host  string
}

// Stacks calls fn once per (stack, event, host) that q selects, with the
// count summed over the selected epochs and PIDs; when q.Hosts is nil the
// count is summed over hosts too and host is "", read from the roll-up
// unless q.PIDs is set. Rows come in (event, stack ID, host) order. A stack
// is selected by its leaf frame's image — the image the flat profile counts
// the sample in — so Stacks and Profile select the same samples. Each call
// of fn has its own copy of the stack, which fn may keep.
func (db *DB) Stacks(ctx context.Context, q Query, fn func(st *Stack, event uint8, host string, count uint64) error) error {
	fn = untilDone4(ctx, fn)
	if err := db.use(false); err != nil {
		return err
	}
	rows, err := db.stackRows(q)
	var stacks map[uint64]*Stack
	if err == nil {
		stacks, err = db.loadStacks(rows)
	}
	db.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("storage: stacks: %w", err)
	}
	f := newFilter(&q)
	keys := slices.SortedFunc(func(yield func(stackRow) bool) {
		for k := range rows {
			if !yield(k) {
				return
			}
		}
	}, func(a, b stackRow) int {
		if c := cmp.Compare(a.event, b.event); c != 0 {
			return c
		}
		if c := cmp.Compare(a.id, b.id); c != 0 {
			return c
		}
		return cmp.Compare(a.host, b.host)
	})
	for _, k := range keys {
		st := stacks[k.id]
		if f.images != nil && !f.imset[st.Leaf().Image] {
			continue
		}
		c := *st
		c.Frames = slices.Clone(st.Frames)
		if err := fn(&c, k.event, k.host, rows[k]); err != nil {
			return err
		}
	}
	return nil
}

// stackRows sums the stack counters q selects by (event, stack, host).
func (db *DB) stackRows(q Query) (map[stackRow]uint64, error) {
	f := newFilter(&q)
	rows := map[stackRow]uint64{}
	if f.none {
		return rows, nil
	}
	add := func(k stackRow, n uint64) { rows[k] = addSat(rows[k], n) }
	if f.hosts == nil && f.pids == nil {
		err := db.scanTable(tStackFleet, f, func(k, v []byte) error {
			if len(k) != 1+8+1+8 {
				return fmt.Errorf("%w: stack roll-up key %x: %d bytes", ErrCorrupt, k, len(k))
			}
			if !f.event(k[9]) {
				return nil
			}
			n, err := decodeCount(k, v)
			if err != nil {
				return err
			}
			add(stackRow{event: k[9], id: binary.BigEndian.Uint64(k[10:])}, n)
			return nil
		})
		return rows, err
	}
	err := db.scanHostRows(tStackHosts, "stack", 1+8+4, f, func(host string, rest, k []byte, value func() ([]byte, error)) error {
		if !f.host(host) || !f.event(rest[0]) || !f.pidOn(host, binary.BigEndian.Uint32(rest[9:])) {
			return nil
		}
		v, err := value()
		if err != nil {
			return err
		}
		n, err := decodeCount(k, v)
		if err != nil {
			return err
		}
		r := stackRow{event: rest[0], id: binary.BigEndian.Uint64(rest[1:])}
		if q.Hosts != nil {
			r.host = host
		}
		add(r, n)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// loadStacks reads the records of the rows' stacks.
func (db *DB) loadStacks(rows map[stackRow]uint64) (map[uint64]*Stack, error) {
	out := map[uint64]*Stack{}
	for k := range rows {
		if out[k.id] != nil {
			continue
		}
		st, err := db.stack(k.id)
		if err != nil {
			return nil, err
		}
		out[k.id] = &st
	}
	return out, nil
}

func (db *DB) stack(id uint64) (Stack, error) {
	v, ok, err := db.get(stackKey(id))
	if err != nil {
		return Stack{}, fmt.Errorf("read stack %016x: %w", id, err)
	}
	if !ok {
		return Stack{}, fmt.Errorf("%w: stack %016x counted but not in the stack table", ErrCorrupt, id)
	}
	return decodeStack(id, v)
}

// StackTotals sums what q's epochs, events and hosts select of the stack
// view, for conservation checks: samples counted by stacks (from the
// per-host summary) and each stack drop counter (which have no event, so
// only epochs and hosts select them). With stacks on, a stream's stack
// samples plus stack drops equal its samples delivered (wire.StackEntry).
func (db *DB) StackTotals(q Query) (samples uint64, drops map[string]uint64, err error) {
	if err := db.use(false); err != nil {
		return 0, nil, err
	}
	defer db.mu.RUnlock()
	f := newFilter(&q)
	drops = map[string]uint64{}
	if f.none {
		return 0, drops, nil
	}
	err = db.scanTable(tStackSummary, f, func(k, v []byte) error {
		if len(k) < 11 {
			return fmt.Errorf("%w: stack summary key %x: short", ErrCorrupt, k)
		}
		host, rest, ok := cutHost(k[10:])
		if !ok || len(rest) != 0 {
			return fmt.Errorf("%w: stack summary key %x: bad host", ErrCorrupt, k)
		}
		if !f.event(k[9]) || !f.host(host) {
			return nil
		}
		n, err := decodeCount(k, v)
		samples = addSat(samples, n)
		return err
	})
	if err == nil {
		err = db.scanDropTable(tStackDrops, "stack", f, drops)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("storage: stack totals: %w", err)
	}
	return samples, drops, nil
}

// scanHostRows calls row with each row of table, keyed (table, epoch,
// host, rest of restLen bytes), under the epochs f selects and, when f
// names hosts, only under those hosts' prefixes (a seek, not a read of
// every host's rows); row still filters what else f says. value reads
// the row's value. what names the table in corruption errors.
func (db *DB) scanHostRows(table byte, what string, restLen int, f *filter, row func(host string, rest, k []byte, value func() ([]byte, error)) error) error {
	scan := func(lo []byte) error {
		it, err := db.newIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
		if err != nil {
			return err
		}
		defer it.Close()
		value := func() ([]byte, error) {
			v, err := it.ValueAndErr()
			if err != nil {
				return nil, fmt.Errorf("storage: read %x: %w", it.Key(), err)
			}
			return v, nil
		}
		for ok := it.First(); ok; ok = it.Next() {
			k := it.Key()
			if len(k) < 10 {
				return fmt.Errorf("%w: %s key %x: short", ErrCorrupt, what, k)
			}
			host, rest, ok := cutHost(k[9:])
			if !ok || len(rest) != restLen {
				return fmt.Errorf("%w: %s key %x: bad host or length", ErrCorrupt, what, k)
			}
			if err := row(host, rest, k, value); err != nil {
				return err
			}
		}
		return it.Error()
	}
	epochs, err := db.epochsOf(table, f)
	if err != nil {
		return err
	}
	for _, e := range epochs {
		if f.hosts == nil {
			if err := scan(appendU64([]byte{table}, e)); err != nil {
				return err
			}
			continue
		}
		for _, h := range f.hostl {
			if err := scan(appendHost(appendU64([]byte{table}, e), h)); err != nil {
				return err
			}
		}
	}
	return nil
}

// scanDropTable adds into drops the per-reason counts of one side
// table's drop rows (the stack and ProfileMe tables share a key layout:
// table, epoch, host, reason) that f selects; what names the table in
// corruption errors.
func (db *DB) scanDropTable(table byte, what string, f *filter, drops map[string]uint64) error {
	return db.scanTable(table, f, func(k, v []byte) error {
		if len(k) < 10 {
			return fmt.Errorf("%w: %s drop key %x: short", ErrCorrupt, what, k)
		}
		host, name, ok := cutHost(k[9:])
		if !ok || wire.CheckDropName(string(name)) != nil {
			return fmt.Errorf("%w: %s drop key %x: bad host or name", ErrCorrupt, what, k)
		}
		if !f.host(host) {
			return nil
		}
		n, err := decodeCount(k, v)
		drops[string(name)] = addSat(drops[string(name)], n)
		return err
	})
}
