package storage

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

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

// batchWriter turns wire batches into merges on one Pebble batch, reusing
// its key buffers.
type batchWriter struct {
	pb        *pebble.Batch
	key, key2 []byte
	val       [8]byte
}

func (w *batchWriter) merge(key []byte, n uint64) error {
	if err := w.pb.Merge(key, encodeCount(&w.val, n), nil); err != nil {
		return fmt.Errorf("storage: apply: %w", err)
	}
	return nil
}

func (w *batchWriter) add(b *wire.Batch) error {
	var known, unknown [256]uint64 // per event, for the 's' summary
	es := b.Entries
	for i := 0; i < len(es); {
		// Entries are sorted by (image, event, offset, pid): a run of
		// one (image, event, offset) is one fleet key.
		j, sum := i, uint64(0)
		for ; j < len(es) && es[j].Image == es[i].Image && es[j].Event == es[i].Event && es[j].Offset == es[i].Offset; j++ {
			w.key = countsKey(w.key, b.Epoch, &es[j], b.Host)
			if err := w.merge(w.key, es[j].Count); err != nil {
				return err
			}
			sum += es[j].Count // Validate bounds the batch total
		}
		w.key2 = fleetKey(w.key2, b.Epoch, &es[i])
		if err := w.merge(w.key2, sum); err != nil {
			return err
		}
		known[es[i].Event] += sum
		i = j
	}
	for i := range b.Unknown {
		u := &b.Unknown[i]
		w.key = unknownKey(w.key, b.Epoch, b.Host, u)
		if err := w.merge(w.key, u.Count); err != nil {
			return err
		}
		unknown[u.Event] += u.Count
	}
	for ev := range 256 {
		if known[ev] != 0 {
			if err := w.merge(summaryKey(b.Epoch, uint8(ev), b.Host, classKnow), known[ev]); err != nil {
				return err
			}
		}
		if unknown[ev] != 0 {
			if err := w.merge(summaryKey(b.Epoch, uint8(ev), b.Host, classUnkn), unknown[ev]); err != nil {
				return err
			}
		}
	}
	for name, n := range b.Drops {
		if n != 0 {
			if err := w.merge(dropKey(b.Epoch, b.Host, name), n); err != nil {
				return err
			}
		}
	}
	return nil
}
