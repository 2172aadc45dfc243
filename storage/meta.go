package storage

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"dcpi/wire"
)

// PutImage stores an image record under its key, replacing any earlier
// record of the same key (images are content-addressed, so only the path
// can differ).
func (db *DB) PutImage(r *wire.ImageRecord) error {
	if err := db.use(true); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	v, err := r.MarshalBinary()
	if err != nil {
		return fmt.Errorf("storage: put image: %w", err)
	}
	if err := db.set(imageKey(r.Key), v, db.wo); err != nil {
		return fmt.Errorf("storage: put image %v: %w", r.Key, err)
	}
	return nil
}

// Image returns the record stored under key, or an error wrapping
// ErrNotFound.
func (db *DB) Image(ctx context.Context, key wire.ImageKey) (*wire.ImageRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := db.use(false); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	v, ok, err := db.get(imageKey(key))
	if err != nil {
		return nil, fmt.Errorf("storage: image %v: %w", key, err)
	}
	if !ok {
		return nil, fmt.Errorf("storage: image %v: %w", key, ErrNotFound)
	}
	var r wire.ImageRecord
	if err := r.UnmarshalBinary(v); err != nil {
		return nil, fmt.Errorf("%w: image %v: %w", ErrCorrupt, key, err)
	}
	if r.Key != key {
		return nil, fmt.Errorf("%w: image %v: record names %v", ErrCorrupt, key, r.Key)
	}
	return &r, nil
}

// EpochState is where an epoch is in its life.
type EpochState uint8

// Epoch states (DCPI sec. 4.3.3's disjoint epochs, cut fleet-wide: a cut
// closes an epoch; it is sealed when every live node has flushed into it).
const (
	EpochOpen    EpochState = 1 // collecting samples
	EpochClosing EpochState = 2 // cut: nodes are flushing into it
	EpochSealed  EpochState = 3 // complete: no more samples will land in it
)

func (s EpochState) String() string {
	switch s {
	case EpochOpen:
		return "open"
	case EpochClosing:
		return "closing"
	case EpochSealed:
		return "sealed"
	}
	return fmt.Sprintf("EpochState(%d)", uint8(s))
}

// Epoch is an epoch's metadata: DCPI's non-overlapping time intervals of
// samples (sec. 4.3.3). Counts name their epoch by Number alone; an epoch
// need not have metadata to hold counts.
type Epoch struct {
	Number     uint64
	Start, End time.Time // End is zero while the epoch is open
	State      EpochState
	// MergedThrough is, for an epoch retention merged (DB.MergeEpochs),
	// the number of the last epoch merged into it: it holds epochs
	// Number..MergedThrough, and the others' numbers are gone. 0: not a
	// merge.
	MergedThrough uint64
}

// Epoch record encoding: version, state, flags (bit 0: start set, bit 1: end
// set), start and end as Unix nanoseconds, big-endian int64. Version 2
// (a merged epoch) appends MergedThrough, big-endian uint64; an epoch that
// is not a merge is still written as version 1, so a build from before
// merges reads every epoch but the merged ones.
const (
	epochRecordVersion   = 1
	epochRecordLen       = 3 + 8 + 8
	epochRecordVersionV2 = 2
	epochRecordLenV2     = epochRecordLen + 8
)

func encodeEpoch(e *Epoch) ([]byte, error) {
	if e.State < EpochOpen || e.State > EpochSealed {
		return nil, fmt.Errorf("%w: epoch %d: state %d", ErrInvalid, e.Number, e.State)
	}
	if !e.Start.IsZero() && !e.End.IsZero() && e.End.Before(e.Start) {
		return nil, fmt.Errorf("%w: epoch %d: end %v before start %v", ErrInvalid, e.Number, e.End, e.Start)
	}
	if e.MergedThrough != 0 && e.MergedThrough <= e.Number {
		return nil, fmt.Errorf("%w: epoch %d: merged through %d, not after it", ErrInvalid, e.Number, e.MergedThrough)
	}
	b := make([]byte, 3, epochRecordLenV2)
	b[0], b[1] = epochRecordVersion, byte(e.State)
	if e.MergedThrough != 0 {
		b[0] = epochRecordVersionV2
	}
	var start, end int64
	for _, t := range []time.Time{e.Start, e.End} {
		if !t.IsZero() && !time.Unix(0, t.UnixNano()).Equal(t) {
			return nil, fmt.Errorf("%w: epoch %d: time %v outside 1678..2262", ErrInvalid, e.Number, t)
		}
	}
	if !e.Start.IsZero() {
		b[2] |= 1
		start = e.Start.UnixNano()
	}
	if !e.End.IsZero() {
		b[2] |= 2
		end = e.End.UnixNano()
	}
	b = binary.BigEndian.AppendUint64(b, uint64(start))
	b = binary.BigEndian.AppendUint64(b, uint64(end))
	if e.MergedThrough != 0 {
		b = binary.BigEndian.AppendUint64(b, e.MergedThrough)
	}
	return b, nil
}

func decodeEpoch(n uint64, v []byte) (Epoch, error) {
	e := Epoch{Number: n}
	okLen := len(v) > 0 && (v[0] == epochRecordVersion && len(v) == epochRecordLen ||
		v[0] == epochRecordVersionV2 && len(v) == epochRecordLenV2)
	if !okLen || v[2]&^3 != 0 {
		return e, fmt.Errorf("%w: epoch %d: record %x", ErrCorrupt, n, v)
	}
	if v[0] == epochRecordVersionV2 {
		e.MergedThrough = binary.BigEndian.Uint64(v[epochRecordLen:])
		if e.MergedThrough <= n {
			return Epoch{Number: n}, fmt.Errorf("%w: epoch %d: merged through %d", ErrCorrupt, n, e.MergedThrough)
		}
	}
	e.State = EpochState(v[1])
	if e.State < EpochOpen || e.State > EpochSealed {
		return e, fmt.Errorf("%w: epoch %d: state %d", ErrCorrupt, n, v[1])
	}
	if v[2]&1 != 0 {
		e.Start = time.Unix(0, int64(binary.BigEndian.Uint64(v[3:]))).UTC()
	}
	if v[2]&2 != 0 {
		e.End = time.Unix(0, int64(binary.BigEndian.Uint64(v[11:]))).UTC()
	}
	if !e.Start.IsZero() && !e.End.IsZero() && e.End.Before(e.Start) {
		// encodeEpoch refuses it: no epoch stored here is one.
		return Epoch{Number: n}, fmt.Errorf("%w: epoch %d: end %v before start %v", ErrCorrupt, n, e.End, e.Start)
	}
	return e, nil
}

// PutEpoch stores (or replaces) an epoch's metadata. Times keep nanosecond
// precision and come back in UTC.
func (db *DB) PutEpoch(e Epoch) error {
	if err := db.use(true); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	v, err := encodeEpoch(&e)
	if err != nil {
		return fmt.Errorf("storage: put epoch: %w", err)
	}
	if err := db.set(epochKey(e.Number), v, db.wo); err != nil {
		return fmt.Errorf("storage: put epoch %d: %w", e.Number, err)
	}
	return nil
}

// Epoch returns epoch n's metadata, or an error wrapping ErrNotFound.
func (db *DB) Epoch(n uint64) (Epoch, error) {
	if err := db.use(false); err != nil {
		return Epoch{}, err
	}
	defer db.mu.RUnlock()
	v, ok, err := db.get(epochKey(n))
	if err != nil {
		return Epoch{}, fmt.Errorf("storage: epoch %d: %w", n, err)
	}
	if !ok {
		return Epoch{}, fmt.Errorf("storage: epoch %d: %w", n, ErrNotFound)
	}
	return decodeEpoch(n, v)
}

// Epochs lists every epoch's metadata by number.
func (db *DB) Epochs() ([]Epoch, error) {
	if err := db.use(false); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	it, err := db.newIter(&pebble.IterOptions{LowerBound: []byte{tEpochs}, UpperBound: []byte{tEpochs + 1}})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []Epoch
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) != 9 {
			return nil, fmt.Errorf("%w: epoch key %x", ErrCorrupt, k)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("storage: epochs: %w", err)
		}
		e, err := decodeEpoch(binary.BigEndian.Uint64(k[1:]), v)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("storage: epochs: %w", err)
	}
	return out, nil
}
