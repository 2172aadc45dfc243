package storage

import (
	"bytes"
	"cmp"
	"fmt"
	"math/bits"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"dcpi/wire"
)

// batchWriter turns wire batches into the counter merges of one Pebble
// batch, collecting them first and writing them in key order, one merge per
// key.
//
// Order matters for speed alone: Pebble inserts a committed batch into its
// memtable, a skiplist, one key at a time. Written in the order a batch
// lists its entries — each entry's 'c' key, then its 'f' key, far apart —
// every insert walked the skiplist through memory the one before had not
// touched, and those cache misses were most of ingest's CPU time. In key
// order, consecutive inserts find the skiplist's upper levels in the cache.
//
// A batch's entries are sorted by (image, event, offset, pid), its 'c' and
// 'f' keys by (epoch, event, image, offset[, host, pid]). So add emits each
// batch's 'c' and 'f' merges event-major, one ascending run per batch and
// table, as fields rather than keys; writeTo merges the runs, comparing
// images and hosts by their rank among those of the call (integers, not
// 34-byte keys), and builds each key once, as it writes it.
//
// The 'h' keys (epoch, host, event, image, offset, pid) are the 'c' merges
// again in another order: a batch has one epoch and host, so its 'c' run
// is also an ascending 'h' run, and only the runs of one (epoch, host) —
// the batches of a host's CPUs — need merging with one another.
type batchWriter struct {
	counts, fleet runList // 'c' (and 'h') and 'f' merges
	misc          opList  // the rest: 's', 'u' and 'd', a few per batch

	images   []wire.ImageKey // the call's images, by index
	imageIdx map[wire.ImageKey]uint32
	hosts    []string // the call's hosts, by index
	hostIdx  map[string]uint32
	imgRank  []uint32 // rank of images[i] in key order (writeTo)
	hostRank []uint32

	groups []group
	key    []byte // scratch
	val    [8]byte
}

// countOp is a merge of n into a 'c' key (epoch, event, image, offset, host,
// pid) or an 'f' key (no host or pid); image and host index the writer's
// lists.
type countOp struct {
	epoch, offset, n uint64
	image, host, pid uint32
	event            uint8
}

// runList is a list of countOps in ascending runs: ops[runs[i-1]:runs[i]] is
// run i.
type runList struct {
	ops  []countOp
	runs []int
}

// endRun ends the run begun after the last endRun.
func (l *runList) endRun() {
	if n := len(l.ops); len(l.runs) == 0 || l.runs[len(l.runs)-1] != n {
		l.runs = append(l.runs, n)
	}
}

// opList is a list of merges whose keys are stored back to back.
type opList struct {
	keys []byte
	ops  []mergeOp
}

// mergeOp is a merge of n into the key at keys[off:off+len].
type mergeOp struct {
	off, len int
	n        uint64
}

func (l *opList) add(key []byte, n uint64) {
	l.ops = append(l.ops, mergeOp{off: len(l.keys), len: len(key), n: n})
	l.keys = append(l.keys, key...)
}

func (l *opList) key(o *mergeOp) []byte { return l.keys[o.off : o.off+o.len] }

// group is a run of entries [start, end) of one (image, event).
type group struct {
	event      uint8
	start, end int
}

func (w *batchWriter) len() int { return len(w.counts.ops) + len(w.fleet.ops) + len(w.misc.ops) }

func (w *batchWriter) image(k wire.ImageKey) uint32 {
	i, ok := w.imageIdx[k]
	if !ok {
		if w.imageIdx == nil {
			w.imageIdx = map[wire.ImageKey]uint32{}
		}
		i = uint32(len(w.images))
		w.images = append(w.images, k)
		w.imageIdx[k] = i
	}
	return i
}

func (w *batchWriter) host(h string) uint32 {
	i, ok := w.hostIdx[h]
	if !ok {
		if w.hostIdx == nil {
			w.hostIdx = map[string]uint32{}
		}
		i = uint32(len(w.hosts))
		w.hosts = append(w.hosts, h)
		w.hostIdx[h] = i
	}
	return i
}

// add collects the merges of one valid batch.
func (w *batchWriter) add(b *wire.Batch) {
	var known, unknown [256]uint64 // per event, for the 's' summary
	var events [256]bool
	es := b.Entries
	w.groups = w.groups[:0]
	for i := 0; i < len(es); {
		j := i + 1
		for j < len(es) && es[j].Image == es[i].Image && es[j].Event == es[i].Event {
			j++
		}
		w.groups = append(w.groups, group{event: es[i].Event, start: i, end: j})
		events[es[i].Event] = true
		i = j
	}
	host := w.host(b.Host)
	// Groups are in image order within each event, so taking the events
	// in turn visits them in key order: (event, image, offset, pid).
	for ev := range 256 {
		if !events[ev] {
			continue
		}
		for _, g := range w.groups {
			if g.event != uint8(ev) {
				continue
			}
			img := w.image(es[g.start].Image)
			for i := g.start; i < g.end; {
				// A run of one offset is one fleet key.
				j, sum := i, uint64(0)
				for ; j < g.end && es[j].Offset == es[i].Offset; j++ {
					w.counts.ops = append(w.counts.ops, countOp{epoch: b.Epoch, offset: es[j].Offset, n: es[j].Count,
						image: img, host: host, pid: es[j].PID, event: uint8(ev)})
					sum += es[j].Count // Validate bounds the batch total
				}
				w.fleet.ops = append(w.fleet.ops, countOp{epoch: b.Epoch, offset: es[i].Offset, n: sum, image: img, event: uint8(ev)})
				known[ev] += sum
				i = j
			}
		}
	}
	w.counts.endRun()
	w.fleet.endRun()
	for i := range b.Unknown {
		u := &b.Unknown[i]
		w.key = unknownKey(w.key, b.Epoch, b.Host, u)
		w.misc.add(w.key, u.Count)
		unknown[u.Event] += u.Count
	}
	for ev := range 256 {
		if known[ev] != 0 {
			w.misc.add(summaryKey(b.Epoch, uint8(ev), b.Host, classKnow), known[ev])
		}
		if unknown[ev] != 0 {
			w.misc.add(summaryKey(b.Epoch, uint8(ev), b.Host, classUnkn), unknown[ev])
		}
	}
	for name, n := range b.Drops {
		if n != 0 {
			w.misc.add(dropKey(b.Epoch, b.Host, name), n)
		}
	}
}

// ranks sets rank[i] to the place of list[i] in sorted order.
func ranks[T any](list []T, compare func(a, b T) int, rank []uint32) []uint32 {
	order := make([]uint32, len(list))
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(a, b uint32) int { return compare(list[a], list[b]) })
	rank = slices.Grow(rank[:0], len(list))[:len(list)]
	for r, i := range order {
		rank[i] = uint32(r)
	}
	return rank
}

// compareHostOps orders countOps as their 'h' keys sort.
func (w *batchWriter) compareHostOps(x, y *countOp) int {
	if c := cmp.Compare(x.epoch, y.epoch); c != 0 {
		return c
	}
	if c := cmp.Compare(w.hostRank[x.host], w.hostRank[y.host]); c != 0 {
		return c
	}
	if c := cmp.Compare(x.event, y.event); c != 0 {
		return c
	}
	if c := cmp.Compare(w.imgRank[x.image], w.imgRank[y.image]); c != 0 {
		return c
	}
	if c := cmp.Compare(x.offset, y.offset); c != 0 {
		return c
	}
	return cmp.Compare(x.pid, y.pid)
}

// compareOps orders countOps as their keys sort (an image's bytes and a
// host's name sort as their ranks; a host name has no NUL, so "a\x00"
// sorts before "ab\x00" as "a" before "ab").
func (w *batchWriter) compareOps(x, y *countOp) int {
	if c := cmp.Compare(x.epoch, y.epoch); c != 0 {
		return c
	}
	if c := cmp.Compare(x.event, y.event); c != 0 {
		return c
	}
	if c := cmp.Compare(w.imgRank[x.image], w.imgRank[y.image]); c != 0 {
		return c
	}
	if c := cmp.Compare(x.offset, y.offset); c != 0 {
		return c
	}
	if c := cmp.Compare(w.hostRank[x.host], w.hostRank[y.host]); c != 0 {
		return c
	}
	return cmp.Compare(x.pid, y.pid)
}

// writeTo merges the collected counts into pb in key order, with one
// merge per key (addition saturating at 2^64-1 is associative and
// commutative, so a sum is what Pebble's merger would make of the separate
// operands): the 'c', 'f' and 'h' runs merged, then the few others sorted.
func (w *batchWriter) writeTo(pb *pebble.Batch) error {
	put := func(k []byte, n uint64) error {
		if err := pb.Merge(k, encodeCount(&w.val, n), nil); err != nil {
			return fmt.Errorf("storage: apply: %w", err)
		}
		return nil
	}
	w.imgRank = ranks(w.images, func(a, b wire.ImageKey) int { return a.Compare(b) }, w.imgRank)
	w.hostRank = ranks(w.hosts, cmp.Compare[string], w.hostRank)
	err := w.mergeRuns(&w.counts, w.counts.heads(), w.compareOps, func(o *countOp) error {
		e := wire.Entry{Image: w.images[o.image], Event: o.event, Offset: o.offset, PID: o.pid}
		w.key = countsKey(w.key, o.epoch, &e, w.hosts[o.host])
		return put(w.key, o.n)
	})
	if err != nil {
		return err
	}
	err = w.mergeRuns(&w.fleet, w.fleet.heads(), w.compareOps, func(o *countOp) error {
		e := wire.Entry{Image: w.images[o.image], Event: o.event, Offset: o.offset}
		w.key = fleetKey(w.key, o.epoch, &e)
		return put(w.key, o.n)
	})
	if err != nil {
		return err
	}
	// 'h': the 'c' runs in (epoch, host) order, merging only the runs of
	// one (epoch, host).
	runs := w.counts.heads()
	c := &w.counts
	slices.SortStableFunc(runs, func(a, b runHead) int {
		x, y := &c.ops[a.i], &c.ops[b.i]
		if d := cmp.Compare(x.epoch, y.epoch); d != 0 {
			return d
		}
		return cmp.Compare(w.hostRank[x.host], w.hostRank[y.host])
	})
	for i := 0; i < len(runs); {
		j := i + 1
		for ; j < len(runs); j++ {
			x, y := &c.ops[runs[i].i], &c.ops[runs[j].i]
			if x.epoch != y.epoch || x.host != y.host {
				break
			}
		}
		err = w.mergeRuns(c, runs[i:j], w.compareHostOps, func(o *countOp) error {
			e := wire.Entry{Image: w.images[o.image], Event: o.event, Offset: o.offset, PID: o.pid}
			w.key = hostsKey(w.key, o.epoch, w.hosts[o.host], &e)
			return put(w.key, o.n)
		})
		if err != nil {
			return err
		}
		i = j
	}
	m := &w.misc
	slices.SortFunc(m.ops, func(x, y mergeOp) int { return bytes.Compare(m.key(&x), m.key(&y)) })
	for i := 0; i < len(m.ops); {
		k, sum := m.key(&m.ops[i]), m.ops[i].n
		j := i + 1
		for ; j < len(m.ops) && bytes.Equal(m.key(&m.ops[j]), k); j++ {
			sum = addSat(sum, m.ops[j].n)
		}
		if err := put(k, sum); err != nil {
			return err
		}
		i = j
	}
	return nil
}

func addSat(a, b uint64) uint64 {
	s, c := bits.Add64(a, b, 0)
	if c != 0 {
		return ^uint64(0)
	}
	return s
}

// runHead is the next op of a run, and the run's end.
type runHead struct{ i, end int }

// heads lists l's non-empty runs.
func (l *runList) heads() []runHead {
	h := make([]runHead, 0, len(l.runs))
	start := 0
	for _, end := range l.runs {
		if end > start {
			h = append(h, runHead{start, end})
		}
		start = end
	}
	return h
}

// mergeRuns calls put with every op of the runs h of l in the order of
// compare, once per key with the sum of its counts: a k-way merge through
// a binary min-heap of the runs' heads. (The 'f' ops have host and pid 0,
// so they compare by their key's fields alone.) It uses h as the heap.
func (w *batchWriter) mergeRuns(l *runList, h []runHead, compare func(x, y *countOp) int, put func(o *countOp) error) error {
	less := func(a, b int) bool { return compare(&l.ops[h[a].i], &l.ops[h[b].i]) < 0 }
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= len(h) {
				return
			}
			if c+1 < len(h) && less(c+1, c) {
				c++
			}
			if !less(c, i) {
				return
			}
			h[i], h[c] = h[c], h[i]
			i = c
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		down(i)
	}
	var cur countOp // the key being summed
	have := false
	for len(h) > 0 {
		o := &l.ops[h[0].i]
		if have && compare(o, &cur) == 0 {
			cur.n = addSat(cur.n, o.n)
		} else {
			if have {
				if err := put(&cur); err != nil {
					return err
				}
			}
			cur, have = *o, true
		}
		if h[0].i++; h[0].i == h[0].end {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		down(0)
	}
	if have {
		return put(&cur)
	}
	return nil
}
