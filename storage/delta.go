package storage

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"dcpi/internal/hotlist"
	"dcpi/wire"
)

// Delta is one stream's consecutive batches [Batch.Seq, Last] merged into
// Batch by an aggregator (Last == 0 means Last = Batch.Seq): the counts of
// many batches of one (Host, CPU), applied or refused as a unit.
type Delta struct {
	Batch *wire.Batch
	Last  uint64
}

// last is the delta's last Seq.
func (d *Delta) last() uint64 {
	if d.Last == 0 {
		return d.Batch.Seq
	}
	return d.Last
}

// Outcome is what ApplyDeltas did with one delta. It is a function of the
// delta and the applied Seqs alone, so Raft replicas that apply the same log
// agree on it.
type Outcome uint8

// Outcomes. Only Applied changes the database.
const (
	// Applied: the delta's counts and its stream's new applied Seq (Last)
	// were written.
	Applied Outcome = 1 + iota
	// Duplicate: Last is at or below the applied Seq; every batch in the
	// delta is a redelivery.
	Duplicate
	// Gap: Batch.Seq is past the applied Seq + 1; a batch before it is
	// missing and must be delivered first.
	Gap
	// Overlap: Batch.Seq <= applied < Last; part of the delta is applied
	// and part is not, and counts merged across batches cannot be split
	// here, so the proposer must re-merge from applied+1.
	Overlap
)

func (o Outcome) String() string {
	switch o {
	case Applied:
		return "applied"
	case Duplicate:
		return "duplicate"
	case Gap:
		return "gap"
	case Overlap:
		return "overlap"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// CheckDelta checks a delta as ApplyDeltas does before writing anything: its
// batch validates and Last is 0 or at least Batch.Seq.
func CheckDelta(d Delta) error {
	if d.Batch == nil {
		return fmt.Errorf("%w: delta without a batch", ErrInvalid)
	}
	if err := d.Batch.Validate(); err != nil {
		return fmt.Errorf("delta (host %q cpu %d seq %d): %w", d.Batch.Host, d.Batch.CPU, d.Batch.Seq, err)
	}
	if d.Last != 0 && d.Last < d.Batch.Seq {
		return fmt.Errorf("%w: delta (host %q cpu %d): last seq %d before first %d", ErrInvalid, d.Batch.Host, d.Batch.CPU, d.Last, d.Batch.Seq)
	}
	return nil
}

// ApplyDeltas stores the deltas that are next in their streams, in order,
// with their streams' new applied Seqs, in one Pebble batch, and reports
// each delta's Outcome. A call may carry consecutive deltas of one stream.
// An invalid delta (CheckDelta) is an error for the whole call, and nothing
// is written.
func (db *DB) ApplyDeltas(ds []Delta) ([]Outcome, error) {
	return db.applyDeltas(ds, nil, false)
}

// ApplyDeltasWith is ApplyDeltas committing m's writes in the same Pebble
// batch, so a Raft FSM records its log index (and any metadata the entry
// carries) atomically with the counts. m may be nil; m's writes are
// committed even if no delta applies.
func (db *DB) ApplyDeltasWith(ds []Delta, m *Meta) ([]Outcome, error) {
	return db.applyDeltas(ds, m, false)
}

// applyDeltas is ApplyDeltas; with gapIsError, a Gap fails the whole call
// (ApplyBatches' contract) instead of being reported.
func (db *DB) applyDeltas(ds []Delta, m *Meta, gapIsError bool) ([]Outcome, error) {
	if err := db.use(true); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	for i := range ds {
		if err := CheckDelta(ds[i]); err != nil {
			return nil, fmt.Errorf("storage: apply delta %d: %w", i, err)
		}
	}

	// Lock the streams involved in one global order, so two calls that
	// share streams cannot deadlock.
	ids := make([]streamID, 0, len(ds))
	for _, d := range ds {
		ids = append(ids, streamID{d.Batch.Host, d.Batch.CPU})
	}
	slices.SortFunc(ids, func(x, y streamID) int {
		if c := cmp.Compare(x.host, y.host); c != 0 {
			return c
		}
		return cmp.Compare(x.cpu, y.cpu)
	})
	ids = slices.Compact(ids)
	streams := make(map[streamID]*stream, len(ids))
	for _, id := range ids {
		st := db.stream(id)
		st.mu.Lock()
		defer st.mu.Unlock()
		if !st.loaded {
			seq, err := db.loadApplied(id)
			if err != nil {
				return nil, err
			}
			st.seq, st.loaded = seq, true
		}
		streams[id] = st
	}

	next := make(map[streamID]uint64, len(ids)) // applied Seq as of the call so far
	acct := make(map[streamID]StreamState, len(ids))
	for id, st := range streams {
		next[id] = st.seq
	}
	var w batchWriter
	var stacks *stackAssigner // made, and db.stacks locked, at the first stack
	var addrs *meAddrMerger   // made at the first ProfileMe address list
	out := make([]Outcome, len(ds))
	for i := range ds {
		d := &ds[i]
		b := d.Batch
		id := streamID{b.Host, b.CPU}
		have, last := next[id], d.last()
		switch {
		case last <= have:
			out[i] = Duplicate
			continue
		case b.Seq > have+1:
			if gapIsError {
				return nil, fmt.Errorf("%w: host %q cpu %d: applied through seq %d, got seq %d", ErrSeqGap, b.Host, b.CPU, have, b.Seq)
			}
			out[i] = Gap
			continue
		case b.Seq <= have:
			out[i] = Overlap
			continue
		}
		w.add(b)
		if len(b.Stacks) > 0 {
			if stacks == nil {
				db.stacks.mu.Lock()
				defer db.stacks.mu.Unlock()
				stacks = &stackAssigner{db: db, pending: map[uint64][]byte{}, byRec: map[string]uint64{}}
			}
			ids := make([]uint64, len(b.Stacks))
			for k := range b.Stacks {
				var err error
				if ids[k], err = stacks.id(encodeStack(b.Stacks[k].Truncated, b.Stacks[k].Frames)); err != nil {
					return nil, err
				}
			}
			w.addStacks(b, ids)
		} else if len(b.StackDrops) > 0 {
			w.addStacks(b, nil)
		}
		if hasMe(b) {
			w.addMe(b)
		}
		if len(b.MeAddrs) > 0 {
			if addrs == nil {
				db.meAddrs.Lock()
				defer db.meAddrs.Unlock()
				addrs = &meAddrMerger{db: db, pending: map[string]hotlist.List{}}
			}
			if err := addrs.add(b); err != nil {
				return nil, err
			}
		}
		next[id] = last
		acct[id] = StreamState{Delivered: b.Delivered, Accounted: b.Accounted}
		out[i] = Applied
	}
	pb := db.pdb.NewBatch()
	defer pb.Close()
	if err := w.writeTo(pb); err != nil {
		return nil, err
	}
	changed := w.len() > 0 || m != nil && len(m.ops) > 0
	if addrs != nil {
		if err := addrs.writeTo(pb); err != nil {
			return nil, err
		}
		changed = changed || len(addrs.pending) > 0
	}
	if stacks != nil {
		// New stack records, in ID order for the memtable's sake.
		for _, id := range slices.Sorted(maps.Keys(stacks.pending)) {
			if err := pb.Set(stackKey(id), stacks.pending[id], nil); err != nil {
				return nil, fmt.Errorf("storage: apply: %w", err)
			}
		}
	}
	for _, id := range ids {
		if next[id] != streams[id].seq {
			st := acct[id]
			st.Seq = next[id]
			if err := pb.Set(appliedKey(id.host, id.cpu), appliedValue(st), nil); err != nil {
				return nil, fmt.Errorf("storage: apply: %w", err)
			}
			changed = true
		}
	}
	if m != nil {
		for _, op := range m.ops {
			if err := pb.Set(op.key, op.val, nil); err != nil {
				return nil, fmt.Errorf("storage: apply: %w", err)
			}
		}
	}
	if !changed {
		return out, nil
	}
	if err := pb.Commit(db.wo); err != nil {
		return nil, fmt.Errorf("storage: apply: commit: %w", err)
	}
	for _, id := range ids {
		streams[id].seq = next[id]
	}
	if stacks != nil {
		stacks.committed()
	}
	return out, nil
}
