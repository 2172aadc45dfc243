package timing

import "fmt"

// WriteBufferStats counts stores, those merged into an existing entry, and
// those that found the buffer full.
type WriteBufferStats struct {
	Stores, Merges, Full uint64
}

// WriteBuffer is the 21164's write buffer between the write-through
// D-cache and the S-cache: a few entries of one aligned block each. A store
// merges into the entry for its block if there is one, else takes a free
// entry. Entries are written to the S-cache in order, each taking a fixed
// number of cycles once it reaches the head: an entry arriving at cycle a
// behind an entry finishing at f finishes at max(a, f) + retire, and may
// take merging stores until then. WMB (Fence) closes the current entries
// to merging, so stores after it take new ones (21164PC manual sec. 4.3.4:
// software that does not want stores merged inserts MB or WMB).
type WriteBuffer struct {
	block  []uint64 // ring of entries: block number,
	done   []uint64 // the cycle it has been written,
	open   []bool   // and whether stores may still merge into it
	head   int
	n      int
	shift  uint
	retire uint64
	stats  WriteBufferStats
}

// NewWriteBuffer returns an empty buffer of entries blocks of block bytes,
// each taking retire cycles to write.
func NewWriteBuffer(entries, block int, retire uint64) (*WriteBuffer, error) {
	switch {
	case entries < 1 || entries > maxQueueEntries:
		return nil, fmt.Errorf("%w: write buffer of %d entries: want 1 to %d", ErrInvalidParams, entries, maxQueueEntries)
	case !isPow2(block):
		return nil, fmt.Errorf("%w: write buffer block of %d bytes: want a power of two", ErrInvalidParams, block)
	case retire < 1:
		return nil, fmt.Errorf("%w: write buffer retire interval 0: want at least 1 cycle", ErrInvalidParams)
	}
	return &WriteBuffer{
		block:  make([]uint64, entries),
		done:   make([]uint64, entries),
		open:   make([]bool, entries),
		shift:  log2(block),
		retire: retire,
	}, nil
}

// Stats returns the store counts.
func (w *WriteBuffer) Stats() WriteBufferStats { return w.stats }

// advance retires the entries written by cycle.
func (w *WriteBuffer) advance(cycle uint64) {
	for w.n > 0 && w.done[w.head] <= cycle {
		w.head++
		if w.head == len(w.block) {
			w.head = 0
		}
		w.n--
	}
}

func (w *WriteBuffer) slot(k int) int {
	i := w.head + k
	if i >= len(w.block) {
		i -= len(w.block)
	}
	return i
}

// mergeable reports whether an entry for block blk takes stores.
func (w *WriteBuffer) mergeable(blk uint64) bool {
	for k := 0; k < w.n; k++ {
		if i := w.slot(k); w.block[i] == blk && w.open[i] {
			return true
		}
	}
	return false
}

// Wait returns the cycles a store to addr at cycle would wait for an entry:
// 0 if it would merge or an entry is free, else until the oldest entry has
// been written. It changes nothing but the retirement of finished entries.
func (w *WriteBuffer) Wait(addr, cycle uint64) uint64 {
	w.advance(cycle)
	if w.n < len(w.block) || w.mergeable(addr>>w.shift) {
		return 0
	}
	return w.done[w.head] - cycle
}

// Store puts a store to addr at cycle into the buffer. It merges into the
// open entry for the block if there is one, else takes a free entry; if
// none is free it waits until the oldest entry has been written, takes
// that entry then, and returns the cycles it waited.
func (w *WriteBuffer) Store(addr, cycle uint64) (stall uint64, merged bool) {
	stall, merged = w.tryStore(addr, cycle)
	if stall > 0 {
		w.insert(addr>>w.shift, cycle+stall)
	}
	return stall, merged
}

// tryStore is Store unless the buffer is full, when it stores nothing and
// returns the cycles until an entry frees (Full is counted, the store not).
func (w *WriteBuffer) tryStore(addr, cycle uint64) (wait uint64, merged bool) {
	w.advance(cycle)
	blk := addr >> w.shift
	if w.mergeable(blk) {
		w.stats.Stores++
		w.stats.Merges++
		return 0, true
	}
	if w.n == len(w.block) {
		w.stats.Full++
		return w.done[w.head] - cycle, false
	}
	w.insert(blk, cycle)
	return 0, false
}

// insert puts block blk into a new entry at cycle, which must find one
// free once finished entries retire.
func (w *WriteBuffer) insert(blk, cycle uint64) {
	w.stats.Stores++
	w.advance(cycle)
	start := cycle
	if w.n > 0 {
		if f := w.done[w.slot(w.n-1)]; f > start {
			start = f
		}
	}
	i := w.slot(w.n)
	w.block[i], w.done[i], w.open[i] = blk, start+w.retire, true
	w.n++
}

// Drain returns the cycles until every entry has been written, as a memory
// barrier waits, and empties the buffer as of then.
func (w *WriteBuffer) Drain(cycle uint64) (stall uint64) {
	w.advance(cycle)
	if w.n == 0 {
		return 0
	}
	stall = w.done[w.slot(w.n-1)] - cycle
	w.head, w.n = 0, 0
	return stall
}

// Fence closes every entry to merging (WMB).
func (w *WriteBuffer) Fence() {
	for k := 0; k < w.n; k++ {
		w.open[w.slot(k)] = false
	}
}

// Len returns the entries still unwritten at cycle.
func (w *WriteBuffer) Len(cycle uint64) int {
	w.advance(cycle)
	return w.n
}

// Reset empties the buffer. The counts are kept.
func (w *WriteBuffer) Reset() { w.head, w.n = 0, 0 }
