package node

// CostModel gives the modelled cost, in cycles of a 21164, of each path
// through DCPI's interrupt handler, so that a simulated host spends on
// profiling what a real one did (Sample returns it; hwsim adds the
// interrupt's delivery, ProfileConfig.InterruptCycles), and so that table
// designs can be compared (Simulate).
//
// The defaults come from Table 4 of the paper (sec. 5.2), SPECint95 row:
// a hit costs 430 cycles (the default configuration's column) and a miss
// 700 (the cycles configuration's; the default column's 654 and gcc's
// 669-716 bracket it). The table's parts are an assumption that splits
// those two figures along sec. 4.2.2's account of where the time goes —
// cache misses dominate, about 100 cycles each, and one bucket line, one
// per-CPU state line and, on an eviction, one overflow-buffer line are
// touched:
//
//	hit at position j     = Base + probe×(j+1) + ExtraLine×(lines touched−1) [+ 2×Move if swapped to front]
//	miss, evicting        = Base + probe×Assoc + ExtraLine×(lines−1) + Replace + OverflowWrite [+ Move×(Assoc−1) inserting at front]
//	miss, empty slot      = the same without OverflowWrite [moving only the entries before the empty slot]
//	miss, no buffer room  = Base + probe×Assoc + ExtraLine×(lines−1)   (the sample is dropped)
//	count at CountMax     = the hit's cost + OverflowWrite
//	flushing, direct      = Direct
//	a buffer completes    = + BufferSwitch
//
// With the defaults a 4-way round-robin hit costs 424-436 cycles (430 on
// average over the four positions) and an eviction 700.
//
// The layout decides probe and lines (see layout): up to four 16-byte
// entries share one 64-byte line; a 6-way bucket is sec. 5.4's proposal of
// packing six entries (about 10 bytes each: 43-bit PC, 16-bit PID, event,
// count) into the same line, so it touches one line but pays PackedProbe
// more per compare to unpack; larger buckets keep 16-byte entries and span
// two or more lines, the second costing ExtraLine when a probe reaches it.
type CostModel struct {
	Base          uint64 // entry, hash, per-CPU state, bucket line fetch, return
	Probe         uint64 // per entry compared
	PackedProbe   uint64 // extra per entry compared in a packed (6-per-line) bucket
	ExtraLine     uint64 // each further cache line of the bucket a lookup touches
	Replace       uint64 // choosing the victim and writing the new entry (miss path code)
	OverflowWrite uint64 // writing an entry to the overflow buffer: one more line
	Move          uint64 // per entry moved within a bucket (swap, insert at front)
	Direct        uint64 // a flushing handler's direct write to the overflow buffer
	BufferSwitch  uint64 // completing a buffer: switch to the other, wake the daemon

	// The stack side (stack.go), charged only with stacks on. The walk
	// reads the interrupted context and the process's unwind space
	// (StackWalk, with hashing the chain), then per frame unwound finds
	// the PC's row by binary search and checks the step (StackFrame), and
	// per memory read (a saved RA or FP on the user stack, or a code word
	// the heuristic scans) pays StackRead: the stack's lines were just
	// used by the program, so most reads hit the cache. Counting the chain
	// costs StackHit on a hit and StackFill on a miss; an entry written
	// to a stack buffer (eviction, saturation, a direct write while
	// flushing) StackOut, several lines as the chain is held in place.
	StackWalk, StackFrame, StackRead uint64
	StackHit, StackFill, StackOut    uint64

	// Not charged by the handler; Simulate adds them for the system's cost.
	Delivery uint64 // interrupt delivery and return (hwsim's InterruptCycles)
	// Daemon is the daemon's cycles per entry it reads from the driver. A
	// line through Table 4's default-configuration SPECint95 (9.5% misses,
	// 245 cycles of daemon per sample) and gcc (44.5%, 927) rows gives
	// 60 + 1949 × miss rate cycles per sample: about 2,000 per entry.
	Daemon uint64
}

// DefaultCostModel is the model described at CostModel.
func DefaultCostModel() CostModel {
	return CostModel{
		Base:          420,
		Probe:         4,
		PackedProbe:   2,
		ExtraLine:     100,
		Replace:       164,
		OverflowWrite: 100,
		Move:          4,
		Direct:        420,
		BufferSwitch:  1000,
		StackWalk:     150,
		StackFrame:    80,
		StackRead:     50,
		StackHit:      120,
		StackFill:     220,
		StackOut:      200,
		Delivery:      214,
		Daemon:        2000,
	}
}

// layout says how the modelled Alpha handler lays out an assoc-way bucket:
// entries per 64-byte line, and whether they are packed.
func layout(assoc int) (perLine int, packed bool) {
	if assoc == 5 || assoc == 6 {
		return 6, true
	}
	return 4, false
}

// costTable is the model evaluated for one configuration: what each path
// costs, looked up by the handler with no arithmetic.
type costTable struct {
	hit      [maxAssoc]uint64 // hit at position j
	fill     [maxAssoc]uint64 // miss into the empty slot at position j
	evict    uint64
	drop     uint64
	overflow uint64 // extra for an entry written to a buffer outside a miss
	direct   uint64
	switched uint64 // extra when a buffer completes

	stackWalk, stackFrame, stackRead, stackHit, stackFill, stackOut uint64
}

func (c CostModel) table(assoc int, p Policy) costTable {
	perLine, packed := layout(assoc)
	probe := c.Probe
	if packed {
		probe += c.PackedProbe
	}
	lookup := func(probes int) uint64 {
		lines := (probes + perLine - 1) / perLine
		return c.Base + probe*uint64(probes) + c.ExtraLine*uint64(lines-1)
	}
	var t costTable
	for j := range assoc {
		t.hit[j] = lookup(j + 1)
		if p == SwapToFront && j > 0 {
			t.hit[j] += 2 * c.Move
		}
		t.fill[j] = lookup(assoc) + c.Replace
		if p == SwapToFront {
			t.fill[j] += c.Move * uint64(j)
		}
	}
	t.evict = lookup(assoc) + c.Replace + c.OverflowWrite
	if p == SwapToFront {
		t.evict += c.Move * uint64(assoc-1)
	}
	t.drop = lookup(assoc)
	t.overflow = c.OverflowWrite
	t.direct = c.Direct
	t.switched = c.BufferSwitch
	t.stackWalk, t.stackFrame, t.stackRead = c.StackWalk, c.StackFrame, c.StackRead
	t.stackHit, t.stackFill, t.stackOut = c.StackHit, c.StackFill, c.StackOut
	return t
}
