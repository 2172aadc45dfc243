package node

// The overflow buffer pair of sec. 4.2.1: entries evicted from the table
// are appended to the active buffer; when it is full the driver switches to
// the other one and notifies the daemon, which copies the full one to user
// space. Two buffers, so that one is filled while the other is copied.
//
// A buffer moves through four states, each change made on one side only:
//
//	free ──(CPU: becomes the active one)──▶ active
//	active ──(CPU: fills, or is sealed by HandOff(true))──▶ complete
//	complete ──(CPU, in HandOff: published to the daemon)──▶ handed
//	handed ──(daemon: TakeFull copies it) … (CPU, in Release)──▶ free
//
// The CPU numbers buffers in the order they complete (seq). HandOff, which
// runs on the CPU inside an IPI, publishes every complete buffer with its
// seq and length in pub, which only HandOff writes; the daemon reads pub
// only after it has seen the IPI complete, and takes buffers in seq order,
// counting them in taken, which only the daemon writes; Release, again on
// the CPU inside an IPI sent after the daemon's copies, frees every handed
// buffer whose seq is below taken. So every field has one writer, and each
// read of another side's field is ordered after the write by an IPI (the
// mutex in hwsim.Machine.SendIPI orders the daemon's writes before the
// handler) or by the channel on which the daemon waits for the handler.

type bufState uint8

const (
	bufFree bufState = iota
	bufActive
	bufComplete
	bufHanded
)

// published is what HandOff tells the daemon about one handed buffer.
type published struct {
	seq uint64 // completion order
	n   int    // entries
}

// overflowPair holds entries of type T: the flat table's slots, or the
// stack table's (stack.go), which share the protocol.
type overflowPair[T any] struct {
	bufs [2][]T // fixed at construction; contents owned per state

	// Owned by the CPU.
	cur       []T // the active buffer, or nil when none has room
	n         int // entries in cur
	active    int // index of cur in bufs, or -1
	state     [2]bufState
	fill      [2]int    // entries in a complete buffer
	seq       [2]uint64 // completion order of a complete or handed buffer
	completed uint64    // buffers completed so far

	// Written by the CPU in HandOff only; read by the daemon.
	pub      [2]published
	pubCount uint64 // buffers handed so far: those with seq < pubCount

	// Owned by the daemon, on its own cache line: the interrupt handler
	// never reads it, so the daemon's writes never steal the handler's lines
	// (sec. 4.2.2).
	_     [64]byte
	taken uint64 // buffers the daemon has copied: those with seq < taken
	_     [56]byte
}

func newOverflowPair[T any](entries int) overflowPair[T] {
	o := overflowPair[T]{bufs: [2][]T{pinned[T](entries), pinned[T](entries)}}
	o.pub[0].seq, o.pub[1].seq = ^uint64(0), ^uint64(0) // never published
	o.activate(0)
	return o
}

func (o *overflowPair[T]) activate(i int) {
	o.state[i] = bufActive
	o.active, o.cur, o.n = i, o.bufs[i], 0
}

// push appends s to the active buffer. ok is false, and s is not stored,
// when no buffer has room; full is true when s filled the active buffer,
// which is then complete, and the caller should notify the daemon.
func (o *overflowPair[T]) push(s *T) (ok, full bool) {
	if o.n >= len(o.cur) {
		return false, false
	}
	o.cur[o.n] = *s
	o.n++
	if o.n == len(o.cur) {
		o.complete()
		return true, true
	}
	return true, false
}

// room reports whether push would store an entry.
func (o *overflowPair[T]) room() bool { return o.n < len(o.cur) }

// complete ends the active buffer and makes the other one active if it is
// free; if not (the daemon still has it), no buffer is active until
// Release returns one.
func (o *overflowPair[T]) complete() {
	i := o.active
	o.state[i], o.fill[i], o.seq[i] = bufComplete, o.n, o.completed
	o.completed++
	if j := 1 - i; o.state[j] == bufFree {
		o.activate(j)
	} else {
		o.active, o.cur, o.n = -1, nil, 0
	}
}

// handOff (CPU) publishes every complete buffer, oldest first, and
// returns how many buffers the daemon may now take. With seal, a partly
// filled active buffer is completed first, so that a full drain gets
// every entry.
func (o *overflowPair[T]) handOff(seal bool) int {
	if seal && o.active >= 0 && o.n > 0 {
		o.complete()
	}
	first := 0
	if o.state[1] == bufComplete && (o.state[0] != bufComplete || o.seq[1] < o.seq[0]) {
		first = 1
	}
	for k := range 2 {
		i := first ^ k
		if o.state[i] != bufComplete {
			continue
		}
		o.state[i] = bufHanded
		o.pub[i] = published{seq: o.seq[i], n: o.fill[i]}
		o.pubCount = o.seq[i] + 1
	}
	return int(o.pubCount - o.taken)
}

// takeFull (daemon) returns the oldest handed buffer the daemon has not
// taken yet: its entries stay the daemon's until release.
func (o *overflowPair[T]) takeFull() ([]T, bool) {
	if o.taken >= o.pubCount {
		return nil, false
	}
	i := 0
	if o.pub[1].seq == o.taken {
		i = 1
	}
	o.taken++
	return o.bufs[i][:o.pub[i].n], true
}

// release (CPU) frees the buffers the daemon has taken and, if no buffer
// was active, makes a freed one active. It returns how many it freed.
func (o *overflowPair[T]) release() int {
	freed := 0
	for i := range 2 {
		if o.state[i] == bufHanded && o.seq[i] < o.taken {
			o.state[i], o.fill[i] = bufFree, 0
			freed++
		}
	}
	if o.active < 0 {
		for i := range 2 {
			if o.state[i] == bufFree {
				o.activate(i)
				break
			}
		}
	}
	return freed
}

// pending (CPU, or after the CPU has stopped) calls visit with the
// entries of the buffers the daemon has not taken: the active one,
// complete ones, and handed ones not yet copied.
func (o *overflowPair[T]) pending(visit func([]T)) {
	if o.active >= 0 {
		visit(o.cur[:o.n])
	}
	for i := range 2 {
		switch {
		case o.state[i] == bufComplete:
			visit(o.bufs[i][:o.fill[i]])
		case o.state[i] == bufHanded && o.seq[i] >= o.taken:
			visit(o.bufs[i][:o.fill[i]])
		}
	}
}
