package transport

import (
	"bytes"
	"fmt"
	"testing"

	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// TestQueueModel runs random sequences of pushes, failed attempts and acks
// against outQueue and checks, after every step, the rules its comment
// states: FIFO order of batches and images, contiguous sequences per CPU,
// the memory bound, immutability of attempted items, tombstones that keep
// identity and count exactly the samples they replace, and exact
// conservation of samples.
func TestQueueModel(t *testing.T) {
	r := testRand(t)
	keys := []wire.ImageKey{wiretest.RandKey(r), wiretest.RandKey(r), wiretest.RandKey(r)}
	for run := range 60 {
		max := 200 + r.IntN(8000)
		q := newOutQueue(max)
		var (
			orig      = map[string]*wire.Batch{} // by msg ID
			nextSeq   = map[uint16]uint64{0: 1, 1: 1, 7: 1}
			seen      = map[uint16]uint64{0: 0, 1: 0, 7: 0} // last seq popped per CPU
			accepted  uint64
			published uint64
			attempted []byte             // data of the attempted head, which must not change
			checked   = map[*item]bool{} // items checked, and whether as tombstones
			pushed    []*item            // in push order, popped from the front
		)
		check := func(step string) {
			t.Helper()
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("run %d (max %d) %s: %s", run, max, step, fmt.Sprintf(format, args...))
			}
			var bytesSum int
			var queued uint64
			lastSeq := map[uint16]uint64{}
			for k, v := range seen {
				lastSeq[k] = v
			}
			candidates := 0
			for _, it := range q.items {
				bytesSum += it.size()
				queued += it.samples
				if it.candidate() {
					candidates++
				}
				if it.image {
					continue
				}
				if it.hdr.Seq != lastSeq[it.hdr.CPU]+1 {
					fail("cpu %d: seq %d after %d", it.hdr.CPU, it.hdr.Seq, lastSeq[it.hdr.CPU])
				}
				lastSeq[it.hdr.CPU] = it.hdr.Seq
				if tomb, ok := checked[it]; !ok || tomb != it.tomb {
					checkItem(t, it, orig[it.id])
					checked[it] = it.tomb
				}
			}
			if bytesSum != q.bytes {
				fail("bytes %d, items sum to %d", q.bytes, bytesSum)
			}
			if queued != q.queuedSamples {
				fail("queued samples %d, items sum to %d", q.queuedSamples, queued)
			}
			if q.bytes > q.max && candidates > 0 {
				fail("%d bytes over max %d with %d full batches still replaceable", q.bytes, q.max, candidates)
			}
			var dropped uint64
			for _, n := range q.drops {
				dropped += n
			}
			if accepted != published+q.queuedSamples+dropped {
				fail("accepted %d != published %d + queued %d + dropped %d", accepted, published, q.queuedSamples, dropped)
			}
			if attempted != nil && (len(q.items) == 0 || !bytes.Equal(q.items[0].data, attempted)) {
				fail("attempted head changed")
			}
		}
		for step := range 300 {
			switch op := r.IntN(10); {
			case op < 6:
				cpus := []uint16{0, 1, 7}
				cpu := cpus[r.IntN(len(cpus))]
				b := streamBatch(r, "alpha0", 1, cpu, nextSeq[cpu], []int{0, 5, 50, 400}[r.IntN(4)], keys)
				nextSeq[cpu]++
				it, err := newBatchItem(b)
				if err != nil {
					t.Fatal(err)
				}
				orig[it.id] = b
				accepted += b.Total()
				q.push(it)
				pushed = append(pushed, it)
			case op < 7:
				it, err := newImageItem(genImage(r, wiretest.RandKey(r), r.IntN(20)))
				if err != nil {
					t.Fatal(err)
				}
				q.push(it)
				pushed = append(pushed, it)
			case op < 8:
				if it := q.head(); it != nil {
					attempted = it.data // a failed attempt
				}
			default:
				if q.head() == nil {
					continue
				}
				it := q.pop()
				if it != pushed[0] {
					t.Fatalf("run %d step %d: popped %s, pushed %s first", run, step, it.describe(), pushed[0].describe())
				}
				pushed = pushed[1:]
				attempted = nil
				if !it.image {
					published += it.samples
					seen[it.hdr.CPU] = it.hdr.Seq
				}
			}
			check(fmt.Sprintf("step %d", step))
		}
	}
}

// checkItem checks that an item's bytes are the original batch or its
// exact tombstone.
func checkItem(t *testing.T, it *item, b *wire.Batch) {
	t.Helper()
	var got wire.Batch
	if err := got.UnmarshalBinary(it.data); err != nil {
		t.Fatalf("%s: %v", it.describe(), err)
	}
	if !it.tomb {
		want, _ := b.MarshalBinary()
		if !bytes.Equal(it.data, want) || it.samples != b.Total() {
			t.Fatalf("%s: content changed", it.describe())
		}
		return
	}
	if got.Host != b.Host || got.Epoch != b.Epoch || got.CPU != b.CPU || got.Seq != b.Seq || got.Start != b.Start || got.End != b.End {
		t.Fatalf("%s: identity changed: %+v", it.describe(), got)
	}
	if got.Entries != nil || got.Unknown != nil || it.samples != 0 {
		t.Fatalf("%s: tombstone carries samples", it.describe())
	}
	for name, n := range b.Drops {
		if got.Drops[name] != n {
			t.Fatalf("%s: drop %s = %d, original %d", it.describe(), name, got.Drops[name], n)
		}
	}
	if got.Drops[wire.DropBufferFull] != b.Total() {
		t.Fatalf("%s: %s = %d, original carried %d samples", it.describe(), wire.DropBufferFull, got.Drops[wire.DropBufferFull], b.Total())
	}
}

// TestQueueTombstoneOrder: with room for not quite three batches, pushing a third
// replaces the oldest, not the newest; a batch bigger than the bound
// replaces only itself; the attempted head is never replaced.
func TestQueueTombstoneOrder(t *testing.T) {
	r := testRand(t)
	keys := []wire.ImageKey{wiretest.RandKey(r)}
	mk := func(seq uint64, entries int) *item {
		b := streamBatch(r, "alpha0", 1, 0, seq, 0, keys)
		for i := range entries {
			b.Entries = append(b.Entries, wire.Entry{Image: keys[0], Offset: uint64(i) * 4, Count: 1})
		}
		b.Unknown, b.Drops = nil, nil
		it, err := newBatchItem(b)
		if err != nil {
			t.Fatal(err)
		}
		return it
	}
	a, b, c := mk(1, 100), mk(2, 100), mk(3, 100)
	// Room for three full batches less a byte: the third push replaces
	// one, and a full batch plus a tombstone plus a full batch fit.
	q := newOutQueue(a.size() + b.size() + c.size() - 1)
	q.push(a)
	q.head() // attempted: exempt
	q.push(b)
	if q.tombstones != 0 {
		t.Fatalf("tombstoned with room left")
	}
	q.push(c)
	if a.tomb || !b.tomb || c.tomb {
		t.Fatalf("want only the oldest unattempted (seq 2) replaced; tomb = %v %v %v", a.tomb, b.tomb, c.tomb)
	}
	huge := mk(4, 2000)
	q.push(huge)
	if !huge.tomb || c.tomb {
		t.Fatalf("oversized batch: want it alone replaced; tomb = %v (c %v)", huge.tomb, c.tomb)
	}
	if q.drops[wire.DropBufferFull] != 100+2000 {
		t.Fatalf("drops = %v, want %d", q.drops, 2100)
	}
}
