package transport

import (
	"fmt"
	"maps"
	"math/bits"

	"dcpi/wire"
)

// itemOverhead approximates the memory an item costs beyond its encoded
// bytes (the item, its header copy and its message ID), in bytes, so that
// a queue of many tombstones is charged honestly against the bound.
const itemOverhead = 160

// item is one message waiting to be sent: a batch (or its tombstone), an
// image record or a value record.
type item struct {
	image bool
	name  string // image: the object name, ImageKey.String()
	// values: a value-sampling record (wire.ValuesRecord), sent on its
	// host's values subject; never replaced by a tombstone (see push).
	values bool

	// hdr is the batch without entries: what a tombstone keeps. Its Drops
	// are a copy, never the caller's map.
	hdr     wire.Batch
	samples uint64 // samples the encoded batch carries; 0 for a tombstone
	// meSamples are its ProfileMe samples (wire.Batch.MeTotal), which a
	// tombstone counts under the same reason in MeDrops.
	meSamples uint64
	tomb      bool
	id        string // Nats-Msg-Id

	data []byte
	// attempted: the sender has tried to send it, so the server may have
	// stored it; its content must not change any more.
	attempted bool
	// released: retained until applied, and now applied (retention);
	// resending: on the Publisher's list to be sent again.
	released, resending bool
}

func (it *item) size() int { return len(it.data) + len(it.id) + len(it.name) + itemOverhead }

// candidate reports whether the item may still be replaced by a tombstone.
func (it *item) candidate() bool { return !it.image && !it.values && !it.tomb && !it.attempted }

// newBatchItem encodes b (validating it) into an item; it keeps no
// reference to b.
func newBatchItem(b *wire.Batch) (*item, error) {
	data, err := b.MarshalBinary()
	if err != nil {
		return nil, err
	}
	hdr := wire.Batch{Version: b.Version, Host: b.Host, Epoch: b.Epoch, CPU: b.CPU, Seq: b.Seq,
		Start: b.Start, End: b.End, Drops: maps.Clone(b.Drops), Delivered: b.Delivered, Accounted: b.Accounted,
		MeDrops: maps.Clone(b.MeDrops)}
	return &item{hdr: hdr, samples: b.Total(), meSamples: b.MeTotal(), id: msgID(b.Host, b.Epoch, b.CPU, b.Seq), data: data}, nil
}

// newValuesItem encodes r (validating it) into an item.
func newValuesItem(r *wire.ValuesRecord) (*item, error) {
	data, err := r.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return &item{values: true, id: valuesMsgID(r.Host, r.Epoch, r.Seq), data: data}, nil
}

// newImageItem encodes r (validating it) into an item.
func newImageItem(r *wire.ImageRecord) (*item, error) {
	data, err := r.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return &item{image: true, name: r.Key.String(), data: data}, nil
}

// tombstone replaces the item's content by its tombstone: the same identity
// and interval, no samples, and the samples added to the drop counter
// reason. It reports false, changing nothing, if the tombstone cannot be
// encoded (the batch already has wire.MaxDrops counters, or the counter
// would overflow 64 bits); such a batch is kept whole.
func (it *item) tombstone(reason string) (dropped uint64, ok bool) {
	drops := maps.Clone(it.hdr.Drops)
	if drops == nil {
		drops = make(map[string]uint64, 1)
	}
	sum, carry := bits.Add64(drops[reason], it.samples, 0)
	if carry != 0 {
		return 0, false
	}
	if it.samples > 0 {
		drops[reason] = sum
	}
	tb := it.hdr
	tb.Drops = drops
	if it.meSamples > 0 {
		tb.MeDrops = maps.Clone(it.hdr.MeDrops)
		if tb.MeDrops == nil {
			tb.MeDrops = make(map[string]uint64, 1)
		}
		if tb.MeDrops[reason], carry = bits.Add64(tb.MeDrops[reason], it.meSamples, 0); carry != 0 {
			return 0, false
		}
	}
	data, err := tb.MarshalBinary()
	if err != nil {
		return 0, false
	}
	dropped = it.samples
	it.hdr.Drops, it.hdr.MeDrops, it.data, it.samples, it.meSamples, it.tomb = drops, tb.MeDrops, data, 0, 0, true
	return dropped, true
}

// outQueue is the publisher's FIFO of messages, with no I/O and no locks
// (the Publisher holds its mutex around every call): the part whose rules
// conservation depends on, tested alone against a model.
//
// Rules:
//   - Order is call order; the sender takes the head and pops it only
//     when JetStream acknowledged it, so batches and images leave in the
//     order they came, and an image always precedes the batches queued
//     after it.
//   - bytes never exceeds max except by tombstones, images and the one
//     attempted head: to make room the queue replaces the oldest
//     not-yet-attempted full batches by tombstones, and when no older one
//     is left, the new batch itself. A tombstone is never dropped, since a
//     missing sequence number would stall storage for that CPU forever; at
//     about 230 bytes each, a million of them (hours of an unreachable
//     server on a large host) cost about 230 MB, and Stats reports the
//     queue's bytes so an operator sees it coming.
//   - accepted samples = published + queued + dropped, exactly.
type outQueue struct {
	max   int
	items []*item
	// cand: no item before this index is a candidate for a tombstone.
	// Items only stop being candidates and new ones only append, so it
	// moves forward, and finding the oldest candidate is amortized O(1).
	cand  int
	bytes int

	queuedSamples uint64
	queuedBatches int
	queuedImages  int
	queuedValues  int
	tombstones    uint64
	drops         map[string]uint64
}

func newOutQueue(max int) *outQueue {
	return &outQueue{max: max, drops: map[string]uint64{}}
}

func (q *outQueue) len() int { return len(q.items) }

// push appends it, first making room under max by tombstoning. After push,
// either bytes <= max or no queued item is a candidate any more.
func (q *outQueue) push(it *item) {
	switch {
	case it.image:
		q.queuedImages++
	case it.values:
		q.queuedValues++
	default:
		q.queuedBatches++
		if it.size() > q.max {
			// Bigger than the whole bound: tombstoning older batches
			// could not make it fit, so replace this one only.
			q.tombstoneItem(it, wire.DropBufferFull)
		}
	}
	q.makeRoom(it.size())
	if it.candidate() && q.bytes+it.size() > q.max {
		// No older batch is left to replace: replace the new one.
		q.tombstoneItem(it, wire.DropBufferFull)
	}
	q.items = append(q.items, it)
	q.bytes += it.size()
	q.queuedSamples += it.samples
}

// makeRoom tombstones the oldest candidates until need more bytes fit or
// none is left.
func (q *outQueue) makeRoom(need int) {
	for q.bytes+need > q.max {
		for q.cand < len(q.items) && !q.items[q.cand].candidate() {
			q.cand++
		}
		if q.cand == len(q.items) {
			return
		}
		it := q.items[q.cand]
		before, samples := it.size(), it.samples
		if q.tombstoneItem(it, wire.DropBufferFull) {
			q.bytes += it.size() - before
			q.queuedSamples -= samples
		}
		q.cand++ // tombstoned, or cannot be: not a candidate either way
	}
}

// tombstoneItem tombstones it and counts the drop; it does not touch
// bytes or queuedSamples, which the caller adjusts if it is queued.
func (q *outQueue) tombstoneItem(it *item, reason string) bool {
	n, ok := it.tombstone(reason)
	if !ok {
		return false
	}
	q.tombstones++
	if n > 0 {
		q.drops[reason] += n
	}
	return true
}

// head returns the oldest item, marked attempted, or nil.
func (q *outQueue) head() *item {
	if len(q.items) == 0 {
		return nil
	}
	it := q.items[0]
	it.attempted = true
	return it
}

// tombstoneHead replaces the attempted head by its tombstone, for a batch
// the server can never take (too large). It is safe for the head only
// because such a publish is refused by the client before anything is
// sent, so the server cannot have stored the original.
func (q *outQueue) tombstoneHead(reason string) error {
	it := q.items[0]
	if it.image || it.values || it.tomb {
		return fmt.Errorf("transport: head %s cannot be tombstoned", it.describe())
	}
	before, samples := it.size(), it.samples
	if !q.tombstoneItem(it, reason) {
		return fmt.Errorf("transport: %s: tombstone does not encode", it.describe())
	}
	q.bytes += it.size() - before
	q.queuedSamples -= samples
	return nil
}

// pop removes the head, which JetStream acknowledged.
func (q *outQueue) pop() *item {
	it := q.items[0]
	q.items[0] = nil
	q.items = q.items[1:]
	if q.cand > 0 {
		q.cand--
	}
	q.bytes -= it.size()
	q.queuedSamples -= it.samples
	switch {
	case it.image:
		q.queuedImages--
	case it.values:
		q.queuedValues--
	default:
		q.queuedBatches--
	}
	return it
}

// describe names an item in errors and logs.
func (it *item) describe() string {
	if it.image {
		return "image " + it.name
	}
	if it.values {
		return "value record " + it.id
	}
	if it.tomb {
		return "tombstone " + it.id
	}
	return "batch " + it.id
}
