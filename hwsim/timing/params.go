package timing

import (
	"errors"
	"fmt"
	"math"
)

// Params is every number of the memory-system and branch timing of one
// CPU. Each field says where its default comes from: ALPHA-NOTES.md (which
// cites Linux arch/alpha/kernel/setup.c, DEC EK-SWRA2 sec. 4.1, gcc's
// ev5.md, gem5's AlphaTLB.py and the 21164PC hardware reference manual), or
// "assumption" with the reasoning where no source was found. Latencies are
// in CPU cycles; sizes in bytes.
//
// Every field is exported so that configuration can override it; call
// Validate after overriding.
type Params struct {
	// ClockMHz is the processor clock. It matters only for converting the
	// off-chip latencies, which are fixed in nanoseconds, into cycles (see
	// DefaultParamsAt). Default 333: the DCPI paper's 333 MHz 21164 hosts
	// (hwsim.DefaultConfig).
	ClockMHz int

	// Seed seeds the generator behind random replacement, so runs repeat.
	Seed uint64

	// PageShift is log2 of the page size: 13, Alpha Linux's 8 KB pages
	// (ALPHA-NOTES "Linux/Alpha user ABI"). TLB entries map one page.
	PageShift uint

	// I-cache: 8 KB, direct-mapped, 32-byte lines, virtually indexed and
	// tagged with the ASN (ALPHA-NOTES "Memory system"; EK-SWRA2 4.1.1).
	IcacheSize, IcacheLine, IcacheWays int

	// D-cache: 8 KB, direct-mapped, 32-byte lines, write-through,
	// read-allocate, physically addressed (ALPHA-NOTES; EK-SWRA2 4.1.2).
	DcacheSize, DcacheLine, DcacheWays int
	// DcacheLatency is the load-to-use latency of a D-cache hit: 2 (ev5.md,
	// ALPHA-NOTES "21164 pipeline").
	DcacheLatency uint64

	// S-cache: 96 KB, 3-way, unified, write-back (ALPHA-NOTES; setup.c
	// reports CSHAPE(96K, width, 3)). The line is 32 or 64 bytes, set by
	// SC_CTL<12> (setup.c reads it); 64 is modelled because the board
	// cache's line always equals the S-cache's (setup.c probes the B-cache
	// with the same width) and 64-byte board-cache lines are what the
	// 21164 systems of the paper's era used, so one S-cache line maps onto
	// one board-cache line. With 64-byte lines each way is 32 KB and the
	// set index is PA<14:6>, 512 sets: the 21164 builds the 3-way cache as
	// three 32 KB banks indexed alike, so the set count stays a power of
	// two even though the size is not.
	ScacheSize, ScacheLine, ScacheWays int
	// ScacheReplacement is Random: recalled from the 21164 hardware
	// reference manual (the S-cache picks the way to replace at random),
	// not verified in a source available here. LRU is available.
	ScacheReplacement Replacement
	// ScacheLatency is the load-to-use latency of a D-cache miss that hits
	// the S-cache: 8. Assumption: ALPHA-NOTES says the S-cache hit latency
	// was not found. The S-cache is pipelined, with two cycles for its tags
	// and two for its data (Wikipedia's Alpha 21164 article, citing
	// Edmondson et al., "Internal Organization of the Alpha 21164", 1995);
	// add the 2 cycles in which the D-cache miss is found and about 2 to
	// fill the D-cache and forward the data, and the load takes 8. It must
	// be a small part of the measured board-cache latency below, and is.
	ScacheLatency uint64

	// Board cache (B-cache): direct-mapped, 1-16 MB (ALPHA-NOTES); 0 means
	// none, as some 21164 systems had. Default 4 MB with 64-byte lines (the
	// S-cache's line, see above). BcacheWays is 1 on every 21164 system;
	// it is a field only so the model can be explored.
	BcacheSize, BcacheLine, BcacheWays int
	// BcacheLatency is the load-to-use latency of an S-cache miss that
	// hits the board cache: 30 at 333 MHz. Derived from the one
	// measurement in ALPHA-NOTES: a dependent-load loop on an EV56 at 400
	// MHz with a 2 MB board cache takes 38 cycles an iteration on a
	// board-cache hit, about 3 of them ALU work, so the load takes 35.
	// ScacheLatency (8) of those are on-chip cycles that scale with the
	// clock; the other 27 cycles at 400 MHz are 67.5 ns of SRAM and bus
	// time, which stay 67.5 ns at any clock: at 333 MHz (0.333 cycles a
	// ns) that is 22.48 cycles, rounded to 22, plus 8 on chip is 30. Converting
	// all 35 cycles as time instead would give 29; the split is the
	// honest one since the on-chip part runs at the CPU clock. The board
	// cache's size (4 MB here, 2 MB measured) is assumed not to change it.
	BcacheLatency uint64
	// MemoryLatency is the load-to-use latency of a miss in every cache:
	// 142 at 333 MHz, from the same measurement: 172 cycles a loop
	// iteration to memory, less 3 ALU cycles is 169; less 8 on chip is 161
	// cycles at 400 MHz = 402.5 ns; at 333 MHz that is 134.03 cycles,
	// rounded to 134, plus 8 on chip is 142.
	MemoryLatency uint64

	// Cycles fetch stalls on an I-cache miss filled from the S-cache, the
	// board cache or memory. Assumption: an I-stream fill costs what a
	// D-stream fill from the same level costs beyond a D-cache hit, that
	// is the load latency less DcacheLatency: 6, 28 and 140. The 21164's
	// I-stream prefetch (its refill buffer) is not modelled.
	IcacheMissScache, IcacheMissBcache, IcacheMissMemory uint64

	// ITBEntries is 48 and DTBEntries 64, both fully associative with an
	// ASN in every entry (ALPHA-NOTES, from gem5's AlphaTLB.py; the 21164PC
	// manual sec. 2.1.4.1 for the 64-entry DTB).
	ITBEntries, DTBEntries int
	// TLBReplacement is NotLastUsed: recalled from the 21164 hardware
	// reference manual (a round-robin pointer that skips the entry used
	// last), not verified in a source available here. RoundRobin is
	// available.
	TLBReplacement TLBReplacement
	// ITBMissCycles and DTBMissCycles are what a TLB miss costs: 35 each.
	// Assumption: the 21164 fills its TLBs in PALcode. A miss traps (a
	// pipeline restart of about 5 cycles), the PAL flow runs about ten
	// instructions including a dependent load of the PTE from the virtual
	// page table (about an S-cache hit, 8), writes the TB registers, which
	// serialize, and returns with HW_REI, which restarts fetch again:
	// roughly 30-40 cycles, taken as 35. A PTE that misses in the caches,
	// or a double miss on the page table itself, is not modelled.
	ITBMissCycles, DTBMissCycles uint64

	// BranchEntries is the number of 2-bit saturating counters of the
	// branch history table, indexed by PC<12:2>: 2048, one per instruction
	// of the 8 KB I-cache. Assumption: ALPHA-NOTES says the predictor's
	// design was not found; published descriptions of the 21164 put a
	// 2-bit history with each instruction in the I-cache, which is this.
	BranchEntries int
	// BranchHistoryInIcache makes an I-cache fill forget the history of
	// the line's instructions, as history kept in the I-cache would be
	// lost with the line. A branch with no history is predicted by
	// direction: backward taken, forward not taken (BranchPredictor).
	// Default true, following the same published descriptions.
	BranchHistoryInIcache bool
	// MispredictPenalty is the refetch delay after a mispredicted branch,
	// jump or return: 5 cycles. Assumption (ALPHA-NOTES: not found): a
	// branch resolves in the integer pipeline's execute stage, about five
	// stages after fetch in the 7-stage pipeline.
	MispredictPenalty uint64
	// ReturnStackDepth is the depth of the return-address stack that
	// predicts RET and JSR_COROUTINE: 12, recalled from Edmondson et al.
	// (1995) for the 21164; not verified in a source available here.
	ReturnStackDepth int

	// The write buffer: 6 entries (ALPHA-NOTES, 21164PC manual p. 2-28) of
	// one 32-byte block each, merging stores to the same block (21164PC
	// manual sec. 4.3.4 on merging).
	WriteBufferEntries, WriteBufferBlock int
	// WriteBufferRetire is the cycles each entry takes to be written into
	// the S-cache, one after another: 4. Assumption: a 32-byte block over
	// the 16-byte S-cache data path is 2 cycles, plus the tag access and
	// arbitration with fills; 4 also lets a stream of one quadword store
	// a cycle (4 per block) just keep up, as compiled copy loops need.
	WriteBufferRetire uint64

	// MAFEntries is the miss address file: 6 outstanding D-cache miss
	// blocks; loads to a block already missing merge into its entry
	// (ALPHA-NOTES, 21164PC manual p. 2-28).
	MAFEntries int

	// ReplayTrapCycles is what a replay trap costs each time: a store that
	// finds the write buffer full, or a load that misses with the miss
	// address file full, is aborted and reissued (ALPHA-NOTES "21164
	// pipeline"). 5. Assumption: the same restart as a mispredict.
	ReplayTrapCycles uint64
}

// The measurement behind the off-chip latencies (ALPHA-NOTES "Memory
// system"): an EV56 at 400 MHz with a 2 MB board cache, dependent-load loop.
const (
	measuredMHz        = 400
	measuredLoopALU    = 3   // ALU cycles in each loop iteration
	measuredBcacheLoop = 38  // cycles an iteration, board-cache hit
	measuredMemoryLoop = 172 // cycles an iteration, from memory
	defaultClockMHz    = 333
	defaultScacheLat   = 8
	defaultDcacheLat   = 2
)

// offChipLatency converts a measured loop time to a load latency at
// clockMHz: the on-chip cycles stay cycles, the rest stays nanoseconds.
func offChipLatency(loop, onChip uint64, clockMHz int) uint64 {
	offChip := loop - measuredLoopALU - onChip // cycles at measuredMHz
	ns := float64(offChip) * 1000 / measuredMHz
	return onChip + uint64(math.Round(ns*float64(clockMHz)/1000))
}

// DefaultParams returns the 21164 at 333 MHz with a 4 MB board cache.
func DefaultParams() Params { return DefaultParamsAt(defaultClockMHz) }

// DefaultParamsAt returns the default 21164 at another clock: the on-chip
// latencies stay in cycles and the board-cache and memory latencies stay in
// nanoseconds, as derived in BcacheLatency's comment.
func DefaultParamsAt(clockMHz int) Params {
	p := Params{
		ClockMHz:  clockMHz,
		Seed:      1,
		PageShift: 13,

		IcacheSize: 8 << 10, IcacheLine: 32, IcacheWays: 1,
		DcacheSize: 8 << 10, DcacheLine: 32, DcacheWays: 1,
		DcacheLatency: defaultDcacheLat,

		ScacheSize: 96 << 10, ScacheLine: 64, ScacheWays: 3,
		ScacheReplacement: Random,
		ScacheLatency:     defaultScacheLat,

		BcacheSize: 4 << 20, BcacheLine: 64, BcacheWays: 1,

		ITBEntries: 48, DTBEntries: 64,
		TLBReplacement: NotLastUsed,
		ITBMissCycles:  35, DTBMissCycles: 35,

		BranchEntries:         2048,
		BranchHistoryInIcache: true,
		MispredictPenalty:     5,
		ReturnStackDepth:      12,

		WriteBufferEntries: 6, WriteBufferBlock: 32,
		WriteBufferRetire: 4,
		MAFEntries:        6,
		ReplayTrapCycles:  5,
	}
	if clockMHz > 0 { // else Validate reports the clock
		p.BcacheLatency = offChipLatency(measuredBcacheLoop, defaultScacheLat, clockMHz)
		p.MemoryLatency = offChipLatency(measuredMemoryLoop, defaultScacheLat, clockMHz)
		p.IcacheMissScache = p.ScacheLatency - p.DcacheLatency
		p.IcacheMissBcache = p.BcacheLatency - p.DcacheLatency
		p.IcacheMissMemory = p.MemoryLatency - p.DcacheLatency
	}
	return p
}

// ErrInvalidParams is wrapped by every error Validate returns.
var ErrInvalidParams = errors.New("invalid timing parameters")

// Validate reports every problem with p, each naming the field.
func (p *Params) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s", ErrInvalidParams, fmt.Sprintf(format, args...)))
	}
	geometry := func(name string, size, line, ways int) {
		switch {
		case size <= 0:
			bad("%sSize = %d: want a positive size in bytes", name, size)
		case line < 4 || !isPow2(line):
			bad("%sLine = %d: want a power of two of at least 4 bytes", name, line)
		case ways < 1:
			bad("%sWays = %d: want at least 1", name, ways)
		case size%(line*ways) != 0:
			bad("%sSize = %d is not a whole number of sets of %d ways of %d bytes", name, size, ways, line)
		}
	}
	if p.ClockMHz <= 0 {
		bad("ClockMHz = %d: want a positive clock", p.ClockMHz)
	}
	if p.PageShift < 10 || p.PageShift > 30 {
		bad("PageShift = %d: want 10 to 30 (1 KB to 1 GB pages)", p.PageShift)
	}
	geometry("Icache", p.IcacheSize, p.IcacheLine, p.IcacheWays)
	geometry("Dcache", p.DcacheSize, p.DcacheLine, p.DcacheWays)
	geometry("Scache", p.ScacheSize, p.ScacheLine, p.ScacheWays)
	if p.BcacheSize != 0 {
		geometry("Bcache", p.BcacheSize, p.BcacheLine, p.BcacheWays)
		if p.BcacheLine < p.ScacheLine {
			bad("BcacheLine = %d is smaller than ScacheLine = %d: the S-cache must be a subset of the board cache", p.BcacheLine, p.ScacheLine)
		}
	}
	if p.ScacheLine < p.DcacheLine {
		bad("ScacheLine = %d is smaller than DcacheLine = %d: the D-cache must be a subset of the S-cache", p.ScacheLine, p.DcacheLine)
	}
	if !p.ScacheReplacement.valid() {
		bad("ScacheReplacement = %d: want LRU or Random", p.ScacheReplacement)
	}
	if p.DcacheLatency < 1 {
		bad("DcacheLatency = 0: want at least 1 cycle")
	}
	if p.ScacheLatency < p.DcacheLatency {
		bad("ScacheLatency = %d is less than DcacheLatency = %d", p.ScacheLatency, p.DcacheLatency)
	}
	outer := p.ScacheLatency
	if p.BcacheSize != 0 {
		if p.BcacheLatency < p.ScacheLatency {
			bad("BcacheLatency = %d is less than ScacheLatency = %d", p.BcacheLatency, p.ScacheLatency)
		}
		outer = p.BcacheLatency
	}
	if p.MemoryLatency < outer {
		bad("MemoryLatency = %d is less than the cache level above it (%d)", p.MemoryLatency, outer)
	}
	if p.IcacheMissBcache < p.IcacheMissScache || p.IcacheMissMemory < p.IcacheMissBcache {
		bad("I-cache miss costs %d (S-cache), %d (board cache), %d (memory) must not decrease outwards",
			p.IcacheMissScache, p.IcacheMissBcache, p.IcacheMissMemory)
	}
	if p.ITBEntries < 1 || p.ITBEntries > maxTLBEntries {
		bad("ITBEntries = %d: want 1 to %d", p.ITBEntries, maxTLBEntries)
	}
	if p.DTBEntries < 1 || p.DTBEntries > maxTLBEntries {
		bad("DTBEntries = %d: want 1 to %d", p.DTBEntries, maxTLBEntries)
	}
	if !p.TLBReplacement.valid() {
		bad("TLBReplacement = %d: want NotLastUsed or RoundRobin", p.TLBReplacement)
	}
	if p.BranchEntries < 1 || !isPow2(p.BranchEntries) {
		bad("BranchEntries = %d: want a power of two", p.BranchEntries)
	}
	if p.ReturnStackDepth < 1 {
		bad("ReturnStackDepth = %d: want at least 1", p.ReturnStackDepth)
	}
	if p.WriteBufferEntries < 1 || p.WriteBufferEntries > maxQueueEntries {
		bad("WriteBufferEntries = %d: want 1 to %d", p.WriteBufferEntries, maxQueueEntries)
	}
	if p.WriteBufferBlock < 4 || !isPow2(p.WriteBufferBlock) {
		bad("WriteBufferBlock = %d: want a power of two of at least 4 bytes", p.WriteBufferBlock)
	}
	if p.WriteBufferRetire < 1 {
		bad("WriteBufferRetire = 0: want at least 1 cycle")
	}
	if p.MAFEntries < 1 || p.MAFEntries > maxQueueEntries {
		bad("MAFEntries = %d: want 1 to %d", p.MAFEntries, maxQueueEntries)
	}
	if p.ReplayTrapCycles < 1 {
		bad("ReplayTrapCycles = 0: want at least 1 cycle")
	}
	return errors.Join(errs...)
}

// maxQueueEntries bounds the write buffer and miss address file, which are
// scanned linearly.
const maxQueueEntries = 64

func isPow2(n int) bool { return n > 0 && n&(n-1) == 0 }

// log2 returns log2(n) for a power of two n.
func log2(n int) uint {
	var s uint
	for 1<<s < n {
		s++
	}
	return s
}
