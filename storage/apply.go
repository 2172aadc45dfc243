package storage

import (
	"encoding/binary"
	"fmt"

	"dcpi/wire"
)

// ApplyBatch stores a batch: its counts, unknown samples, drop counters and
// its (Host, CPU)'s new applied Seq, in one Pebble batch. It returns applied
// = false, and changes nothing, for a redelivery (Seq at or below the
// applied one); an error wrapping ErrSeqGap, changing nothing, for a Seq past
// the next expected; an error wrapping wire.ErrInvalid (or another wire
// error) for a batch that does not validate.
func (db *DB) ApplyBatch(b *wire.Batch) (applied bool, err error) {
	a, err := db.ApplyBatches([]*wire.Batch{b})
	if err != nil {
		return false, err
	}
	return a[0], nil
}

// ApplyBatches stores several batches atomically: one Pebble batch, one
// commit (the form a Raft log entry of many batches wants). Batches are
// taken in order, each with ApplyBatch's rules, so a group may carry
// consecutive batches of one stream. applied[i] reports whether bs[i] was
// new. On any error (an invalid batch, a gap) nothing is written. It is
// ApplyDeltas of one-batch deltas, with a gap an error.
func (db *DB) ApplyBatches(bs []*wire.Batch) (applied []bool, err error) {
	ds := make([]Delta, len(bs))
	for i, b := range bs {
		if b == nil {
			return nil, fmt.Errorf("storage: apply batch %d: nil", i)
		}
		ds[i] = Delta{Batch: b}
	}
	out, err := db.applyDeltas(ds, nil, true)
	if err != nil {
		return nil, err
	}
	applied = make([]bool, len(bs))
	for i, o := range out {
		applied[i] = o == Applied
	}
	return applied, nil
}

func (db *DB) stream(id streamID) *stream {
	db.smu.Lock()
	defer db.smu.Unlock()
	st := db.streams[id]
	if st == nil {
		st = &stream{}
		db.streams[id] = st
	}
	return st
}

func (db *DB) loadApplied(id streamID) (uint64, error) {
	k := appliedKey(id.host, id.cpu)
	v, ok, err := db.get(k)
	if err != nil {
		return 0, fmt.Errorf("storage: read applied seq of host %q cpu %d: %w", id.host, id.cpu, err)
	}
	if !ok {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: applied seq of host %q cpu %d: %d bytes, want 8", ErrCorrupt, id.host, id.cpu, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// Applied returns the highest contiguous Seq applied for (host, cpu), 0 if
// none: where a restarted publisher resumes.
func (db *DB) Applied(host string, cpu uint16) (uint64, error) {
	if err := db.use(false); err != nil {
		return 0, err
	}
	defer db.mu.RUnlock()
	st := db.stream(streamID{host, cpu})
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.loaded {
		return st.seq, nil
	}
	return db.loadApplied(streamID{host, cpu})
}
