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
//
// A delta with Folded is a host fold: Batch also holds the batches of runs
// of other streams of Batch.Host, in Batch.Epoch. Storage keeps counts per
// host, not per CPU, so the merged entries store exactly what the runs'
// separate deltas would, while a host's CPUs — which sample mostly the
// same instructions — send, decode and merge each (image, offset, event,
// PID) once. Batch's CPU, Seq, Last, Delivered and Accounted are the first
// run's; each folded run carries its own. A fold applies only if every run
// in it is next in its stream (else Unfold, and nothing changes), so
// exactly-once is judged per stream as for single-stream deltas.
type Delta struct {
	Batch  *wire.Batch
	Last   uint64
	Folded []StreamRun
}

// StreamRun is one stream's part of a host fold: the batches [First, Last]
// of (the delta's host, CPU), and the sample accounting of its last batch
// (wire.Batch.Delivered, Accounted), which the stream's state keeps.
type StreamRun struct {
	CPU                  uint16
	First, Last          uint64
	Delivered, Accounted uint64
}

// MaxFolded caps a host fold's other streams: a host has at most MaxCPUs
// CPU streams and its daemon's AllCPUs stream.
const MaxFolded = MaxCPUs

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
	// Unfold: a host fold (Delta.Folded) whose runs are neither all next
	// in their streams, nor all duplicates, nor all gaps (which a fold
	// reports as Duplicate and Gap). Nothing was written; counts merged
	// across streams cannot be split here, so the proposer must propose
	// the runs as separate deltas, each then judged alone. Single-stream
	// deltas never get it.
	Unfold
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
	case Unfold:
		return "unfold"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// CheckDelta checks a delta as ApplyDeltas does before writing anything: its
// batch validates, and its runs are valid (CheckDeltaRuns).
func CheckDelta(d Delta) error {
	if d.Batch == nil {
		return fmt.Errorf("%w: delta without a batch", ErrInvalid)
	}
	if err := d.Batch.Validate(); err != nil {
		return fmt.Errorf("delta (host %q cpu %d seq %d): %w", d.Batch.Host, d.Batch.CPU, d.Batch.Seq, err)
	}
	return CheckDeltaRuns(d)
}

// CheckDeltaRuns is CheckDelta less the batch's validation, for a decoder
// whose batch validated as it was read: Last is 0 or at least Batch.Seq,
// and a host fold's runs are valid — at most MaxFolded, CPUs ascending
// after Batch.CPU, First from 1 to Last, accounting as wire.Batch's.
func CheckDeltaRuns(d Delta) error {
	b := d.Batch
	if b == nil {
		return fmt.Errorf("%w: delta without a batch", ErrInvalid)
	}
	if d.Last != 0 && d.Last < b.Seq {
		return fmt.Errorf("%w: delta (host %q cpu %d): last seq %d before first %d", ErrInvalid, b.Host, b.CPU, d.Last, b.Seq)
	}
	if len(d.Folded) > MaxFolded {
		return fmt.Errorf("%w: host fold (host %q): %d streams folded (cap %d)", ErrInvalid, b.Host, len(d.Folded), MaxFolded)
	}
	prev := b.CPU
	for i, r := range d.Folded {
		switch {
		case r.CPU <= prev:
			return fmt.Errorf("%w: host fold (host %q) run %d: cpu %d not after cpu %d", ErrInvalid, b.Host, i, r.CPU, prev)
		case r.First == 0:
			return fmt.Errorf("%w: host fold (host %q cpu %d): seq 0 (sequences start at 1)", ErrInvalid, b.Host, r.CPU)
		case r.Last < r.First:
			return fmt.Errorf("%w: host fold (host %q cpu %d): last seq %d before first %d", ErrInvalid, b.Host, r.CPU, r.Last, r.First)
		case r.Accounted > r.Delivered:
			return fmt.Errorf("%w: host fold (host %q cpu %d): %d samples accounted of %d delivered", ErrInvalid, b.Host, r.CPU, r.Accounted, r.Delivered)
		case b.Version < 2 && (r.Delivered != 0 || r.Accounted != 0):
			return fmt.Errorf("%w: host fold (host %q cpu %d): version %d carries no sample accounting", ErrInvalid, b.Host, r.CPU, b.Version)
		}
		prev = r.CPU
	}
	return nil
}

// judge is the outcome of a run [first, last] of a stream applied through
// have.
func judge(have, first, last uint64) Outcome {
	switch {
	case last <= have:
		return Duplicate
	case first > have+1:
		return Gap
	case first <= have:
		return Overlap
	}
	return Applied
}

// judgeFold is a host fold's outcome against the applied Seqs next: Applied
// if every run is next; Duplicate or Gap if every run is; else Unfold.
func judgeFold(d *Delta, next map[streamID]uint64) Outcome {
	b := d.Batch
	o := judge(next[streamID{b.Host, b.CPU}], b.Seq, d.last())
	for _, r := range d.Folded {
		if judge(next[streamID{b.Host, r.CPU}], r.First, r.Last) != o {
			return Unfold
		}
	}
	if o == Overlap {
		return Unfold
	}
	return o
}

// ApplyDeltas stores the deltas that are next in their streams, in order,
// with their streams' new applied Seqs, in one Pebble batch, and reports
// each delta's Outcome. A call may carry consecutive deltas of one stream,
// host folds among them.
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
		for _, r := range d.Folded {
			ids = append(ids, streamID{d.Batch.Host, r.CPU})
		}
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
		o := judge(have, b.Seq, last)
		if len(d.Folded) > 0 {
			o = judgeFold(d, next)
		}
		if o != Applied {
			if o == Gap && gapIsError {
				return nil, fmt.Errorf("%w: host %q cpu %d: applied through seq %d, got seq %d", ErrSeqGap, b.Host, b.CPU, have, b.Seq)
			}
			out[i] = o
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
		for _, r := range d.Folded {
			fid := streamID{b.Host, r.CPU}
			next[fid] = r.Last
			acct[fid] = StreamState{Delivered: r.Delivered, Accounted: r.Accounted}
		}
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
	if err := db.commit(pb); err != nil {
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
