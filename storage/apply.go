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
	st, err := decodeStreamState(v)
	if err != nil {
		return 0, fmt.Errorf("%w: applied seq of host %q cpu %d: %v", ErrCorrupt, id.host, id.cpu, err)
	}
	return st.Seq, nil
}

// StreamState is what the database knows of one (host, CPU) batch stream:
// the highest contiguous Seq applied, and the sample accounting of the
// batch that applied it (wire.Batch.Delivered, Accounted; 0 for version-1
// batches). A restarted agent continues after Seq and reports what its
// predecessor's driver still held, Delivered - Accounted, as lost.
type StreamState struct {
	Seq, Delivered, Accounted uint64
}

// appliedValue encodes a stream's state: its Seq alone (8 bytes) when the
// batch carried no accounting, else Seq, Delivered and Accounted (24).
func appliedValue(st StreamState) []byte {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 24), st.Seq)
	if st.Delivered != 0 || st.Accounted != 0 {
		v = binary.BigEndian.AppendUint64(v, st.Delivered)
		v = binary.BigEndian.AppendUint64(v, st.Accounted)
	}
	return v
}

func decodeStreamState(v []byte) (StreamState, error) {
	switch len(v) {
	case 8:
		return StreamState{Seq: binary.BigEndian.Uint64(v)}, nil
	case 24:
		return StreamState{Seq: binary.BigEndian.Uint64(v), Delivered: binary.BigEndian.Uint64(v[8:]),
			Accounted: binary.BigEndian.Uint64(v[16:])}, nil
	}
	return StreamState{}, fmt.Errorf("%d bytes, want 8 or 24", len(v))
}

// Stream returns the state of (host, cpu)'s stream; the zero state if
// nothing of it was applied.
func (db *DB) Stream(host string, cpu uint16) (StreamState, error) {
	if err := db.use(false); err != nil {
		return StreamState{}, err
	}
	defer db.mu.RUnlock()
	v, ok, err := db.get(appliedKey(host, cpu))
	if err != nil || !ok {
		return StreamState{}, err
	}
	st, err := decodeStreamState(v)
	if err != nil {
		return StreamState{}, fmt.Errorf("%w: applied state of host %q cpu %d: %v", ErrCorrupt, host, cpu, err)
	}
	return st, nil
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
