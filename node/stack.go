package node

import (
	"fmt"
	"slices"

	"dcpi/hwsim/alpha"
	"dcpi/node/unwind"
	"dcpi/wire"
)

// Sampled call stacks: with StackConfig.Entries > 0 the
// interrupt handler, after counting the sample in the flat table, walks
// the interrupted user context's call chain (package unwind) and counts
// (process, event, chain) in a second per-CPU table beside the flat one,
// with its own overflow buffer pair, drained by the same IPI protocol
// (driver_flush.go): BeginFlush/EndFlush, HandOff and Release act on both
// pairs. It is DCPI's discipline again: no lock, no atomic instruction, no
// allocation on the CPU side.
//
// Every handler call ends in exactly one place of the stack side, as of
// the flat side: counted in the stack table, written to a stack buffer,
// or dropped (StackDropped: no stack buffer had room), so over a run the
// stacks a stream publishes plus its stack drops equal its samples.

// StackConfig configures one CPU's stack table; zero Entries turns stacks
// off, and the handler then tests one flag.
type StackConfig struct {
	// Entries is the stack table's size, a multiple of StackAssoc (4).
	Entries int
	// BufferEntries is each stack overflow buffer's size.
	BufferEntries int
	// Depth caps the frames walked, 1 to wire.MaxStackFrames.
	Depth int
}

// StackAssoc is the stack table's associativity.
const StackAssoc = 4

// DefaultStackConfig is what --stacks turns on: a 4K-entry table and two
// 1K-entry buffers, walking up to wire.MaxStackFrames frames (an entry
// holds its chain in place: 536 bytes, so 3.1 MB per CPU).
func DefaultStackConfig() StackConfig {
	return StackConfig{Entries: 4 << 10, BufferEntries: 1 << 10, Depth: wire.MaxStackFrames}
}

func (c StackConfig) validate() error {
	if c.Entries == 0 {
		return nil
	}
	switch {
	case c.Entries < 0 || c.Entries%StackAssoc != 0 || c.Entries > 1<<22:
		return fmt.Errorf("stack table of %d entries: want a positive multiple of %d up to %d", c.Entries, StackAssoc, 1<<22)
	case c.BufferEntries < 1 || c.BufferEntries > 1<<20:
		return fmt.Errorf("stack buffers of %d entries: want 1 to %d", c.BufferEntries, 1<<20)
	case c.Depth < 1 || c.Depth > wire.MaxStackFrames:
		return fmt.Errorf("stack depth %d: want 1 to %d", c.Depth, wire.MaxStackFrames)
	}
	return nil
}

// memoryBytes is the stack table's and buffers' memory.
func (c StackConfig) memoryBytes() int {
	if c.Entries == 0 {
		return 0
	}
	return stackSlotBytes * (c.Entries + 2*c.BufferEntries)
}

// StackSample is one aggregated stack count as it leaves the driver:
// Count samples of Event in process PID (the incarnation, as Entry's)
// with this chain, leaf first (Frames[0] is the sampled PC).
type StackSample struct {
	PID       uint32
	Event     uint8
	Truncated bool
	Frames    []uint64
	Count     uint32
}

// stackSlot is a stack table or buffer entry: key packs the incarnation,
// event and count as a flat slot's does (count 0: empty); the chain is
// held in place, so the handler never allocates.
type stackSlot struct {
	key       uint64
	hash      uint64
	n         uint8
	truncated bool
	frames    [wire.MaxStackFrames]uint64
}

const stackSlotBytes = 8 + 8 + 8 + 8*wire.MaxStackFrames

func (s *stackSlot) live() bool    { return s.key&countMask != 0 }
func (s *stackSlot) count() uint32 { return uint32(s.key & countMask) }

func (s *stackSlot) sample() StackSample {
	return StackSample{PID: uint32(s.key >> 32), Event: uint8(s.key >> countBits), Truncated: s.truncated,
		Frames: append([]uint64(nil), s.frames[:s.n]...), Count: s.count()}
}

// stackSide is one CPU's stack state, CPU side except where noted.
type stackSide struct {
	slots    []stackSlot
	buckets  uint64
	rr       uint64
	depth    int
	out      overflowPair[stackSlot]
	flushing bool
	scratch  stackSlot // the chain being looked up
	drained  uint64    // daemon side: samples handed over
}

func newStackSide(c StackConfig) *stackSide {
	return &stackSide{slots: pinned[stackSlot](c.Entries), buckets: uint64(c.Entries / StackAssoc),
		depth: c.Depth, out: newOverflowPair[stackSlot](c.BufferEntries)}
}

// stackHash mixes (key's tag, truncated, chain) the way hashKey mixes a
// flat sample: one multiply per frame.
func stackHash(tag uint64, truncated bool, frames []uint64) uint64 {
	h := tag
	if truncated {
		h ^= 1
	}
	for _, f := range frames {
		h = (h ^ f>>2) * hashMul
		h ^= h >> 29
	}
	return h * hashMul
}

// SampleStack (CPU side) walks s's call chain with the process's unwind
// space (nil: none known) and counts it in the stack table. It returns
// the handler's added modelled cost and whether a stack buffer completed
// (wake the daemon, as for Sample). A driver without stacks returns 0.
func (d *Driver) SampleStack(s Sample, space *unwind.Space) (cost uint64, bufferFull bool) {
	st := d.stk
	if st == nil {
		return 0, false
	}
	sc := &st.scratch
	var res unwind.Result
	if s.Chain != nil {
		// The host walked it (a Linux kernel's callchain).
		res.N = copy(sc.frames[:st.depth], s.Chain)
		res.Truncated = len(s.Chain) > st.depth || s.Truncated
	} else if s.Mem != nil {
		res = space.Walk(unwind.Regs{PC: s.PC, SP: s.SP, FP: s.FP, RA: s.RA, T9: s.T9}, s.Mem, sc.frames[:st.depth])
	} else {
		// Not in user mode: vmunix's PC alone. In a process, the user
		// chain beneath the kernel entry is not recorded: Truncated.
		sc.frames[0] = s.PC
		res = unwind.Result{N: 1, Truncated: s.Incarnation != 0 || s.PC < alpha.KernelBase}
	}
	tag := tagOf(s.Incarnation, s.Event)
	sc.n, sc.truncated = uint8(res.N), res.Truncated
	sc.hash = stackHash(tag, res.Truncated, sc.frames[:res.N])
	sc.key = tag | 1
	c := &d.cost
	cost = c.stackWalk + c.stackFrame*uint64(res.Steps) + c.stackRead*uint64(res.Reads)
	ss := &d.stats
	ss.StackSamples++
	ss.StackFrames += uint64(res.N)
	ss.StackReads += uint64(res.Reads)
	ss.StackHeuristic += uint64(res.Heuristic)
	if res.Truncated {
		ss.StackTruncated++
	}
	var full bool
	if st.flushing {
		cost += c.stackOut
		ok, f := st.out.push(sc)
		if !ok {
			ss.StackDropped++
		} else {
			full = f
		}
	} else {
		var add uint64
		add, full = d.countStack(st, sc, tag)
		cost += add
	}
	if full {
		cost += c.switched
	}
	ss.CyclesStack += cost
	return cost, full
}

// countStack looks the chain in sc up in the stack table.
func (d *Driver) countStack(st *stackSide, sc *stackSlot, tag uint64) (uint64, bool) {
	ss, c := &d.stats, &d.cost
	i := bucketIndex(sc.hash, st.buckets) * StackAssoc
	b := st.slots[i : i+StackAssoc : i+StackAssoc]
	n := int(sc.n)
	for j := range b {
		e := &b[j]
		if e.hash != sc.hash || e.n != sc.n || e.truncated != sc.truncated || (e.key^tag)-1 >= CountMax {
			continue
		}
		if !slices.Equal(e.frames[:n], sc.frames[:n]) {
			continue
		}
		ss.StackHits++
		if e.key&countMask >= d.satAt {
			if ok, full := st.out.push(e); ok {
				e.key = e.key&^countMask | 1
				return c.stackHit + c.stackOut, full
			}
			ss.StackDropped++
			return c.stackHit, false
		}
		e.key++
		return c.stackHit, false
	}
	ss.StackMisses++
	for j := range b {
		if !b[j].live() {
			copyStack(&b[j], sc)
			return c.stackFill, false
		}
	}
	if !st.out.room() {
		ss.StackDropped++
		return c.stackFill, false
	}
	v := &b[st.rr]
	if st.rr++; st.rr == StackAssoc {
		st.rr = 0
	}
	_, full := st.out.push(v)
	ss.StackEvictions++
	copyStack(v, sc)
	return c.stackFill + c.stackOut, full
}

// copyStack copies a chain's used frames only.
func copyStack(dst, src *stackSlot) {
	dst.key, dst.hash, dst.n, dst.truncated = src.key, src.hash, src.n, src.truncated
	copy(dst.frames[:src.n], src.frames[:src.n])
}

// DrainStacks (daemon side) appends every entry of the stack table to dst
// and clears it; like DrainTable, only between BeginFlush and EndFlush.
func (d *Driver) DrainStacks(dst []StackSample) []StackSample {
	st := d.stk
	if st == nil {
		return dst
	}
	if !st.flushing {
		panic("node: DrainStacks outside BeginFlush/EndFlush")
	}
	for i := range st.slots {
		if s := &st.slots[i]; s.live() {
			dst = append(dst, s.sample())
			st.drained += uint64(s.count())
			s.key = 0
		}
	}
	return dst
}

// TakeFullStacks (daemon side) appends the oldest published stack buffer
// not taken yet to dst, as TakeFull does for the flat pair.
func (d *Driver) TakeFullStacks(dst []StackSample) ([]StackSample, bool) {
	st := d.stk
	if st == nil {
		return dst, false
	}
	buf, ok := st.out.takeFull()
	for i := range buf {
		dst = append(dst, buf[i].sample())
		st.drained += uint64(buf[i].count())
	}
	return dst, ok
}

// StacksDelivered (daemon side) is the number of samples DrainStacks and
// TakeFullStacks have handed over. With the CPU stopped, Stats().
// StackSamples == StacksDelivered() + PendingStacks() + Stats().StackDropped.
func (d *Driver) StacksDelivered() uint64 {
	if d.stk == nil {
		return 0
	}
	return d.stk.drained
}

// PendingStacks (CPU side, or when the CPU is stopped) counts the samples
// in the stack table and stack buffers not handed over.
func (d *Driver) PendingStacks() uint64 {
	st := d.stk
	if st == nil {
		return 0
	}
	var n uint64
	for i := range st.slots {
		n += uint64(st.slots[i].count())
	}
	st.out.pending(func(ss []stackSlot) {
		for i := range ss {
			n += uint64(ss[i].count())
		}
	})
	return n
}
