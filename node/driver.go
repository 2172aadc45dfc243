package node

import (
	"errors"
	"fmt"
)

// maxAssoc bounds a bucket's entries (the cost tables are arrays of it).
const maxAssoc = 16

// DriverConfig configures one CPU's driver data structures.
type DriverConfig struct {
	// TableEntries is the aggregation table's size in entries, a multiple
	// of Assoc (DCPI: 16K).
	TableEntries int
	// Assoc is the entries per bucket, 1 to 16 (DCPI: 4, one 64-byte line;
	// sec. 5.4 proposes 6).
	Assoc int
	// Policy is the replacement policy (DCPI: RoundRobin).
	Policy Policy
	// BufferEntries is the size of each of the two overflow buffers (DCPI:
	// 8K).
	BufferEntries int
	// Cost is the handler's cost model.
	Cost CostModel
	// Stacks configures the call stack table (zero: stacks off).
	Stacks StackConfig
	// Me configures the ProfileMe table (zero: off; profileme.go).
	Me MeConfig
}

// DefaultDriverConfig is DCPI's: a 16K-entry 4-way round-robin table and
// two 8K-entry overflow buffers, 16 bytes an entry, 512 KB per CPU
// (sec. 5.3).
func DefaultDriverConfig() DriverConfig {
	return DriverConfig{TableEntries: 16 << 10, Assoc: 4, Policy: RoundRobin, BufferEntries: 8 << 10, Cost: DefaultCostModel()}
}

// ErrDriverConfig is wrapped by every error of DriverConfig.Validate.
var ErrDriverConfig = errors.New("invalid driver configuration")

// Validate reports the first problem with c.
func (c DriverConfig) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("node: driver: %s: %w", fmt.Sprintf(format, a...), ErrDriverConfig)
	}
	switch {
	case c.Assoc < 1 || c.Assoc > maxAssoc:
		return bad("associativity %d: want 1 to %d", c.Assoc, maxAssoc)
	case c.TableEntries < c.Assoc || c.TableEntries%c.Assoc != 0:
		return bad("table of %d entries: want a positive multiple of the associativity %d", c.TableEntries, c.Assoc)
	case c.TableEntries/c.Assoc > 1<<32-1:
		return bad("table of %d entries: at most %d buckets", c.TableEntries, uint64(1<<32-1))
	case c.TableEntries > 1<<26:
		return bad("table of %d entries: at most %d", c.TableEntries, 1<<26)
	case c.Policy >= numPolicies:
		return bad("policy %d: want round-robin or swap-to-front", c.Policy)
	case c.BufferEntries < 1 || c.BufferEntries > 1<<24:
		return bad("overflow buffers of %d entries: want 1 to %d", c.BufferEntries, 1<<24)
	}
	if err := c.Stacks.validate(); err != nil {
		return bad("%v", err)
	}
	if err := c.Me.validate(); err != nil {
		return bad("%v", err)
	}
	return nil
}

// MemoryBytes is the driver's memory at 16 bytes an entry: the table and
// both buffers (DCPI's default: 512 KB), and the stack table and buffers
// when stacks are on.
func (c DriverConfig) MemoryBytes() int {
	return 16*(c.TableEntries+2*c.BufferEntries) + c.Stacks.memoryBytes() + c.Me.memoryBytes()
}

// handler is one specialized version of the interrupt handler (sec. 4.2:
// "we switch dynamically among specialized versions of the interrupt
// handler"). The driver's state picks one; the chosen one tests no flag.
type handler func(d *Driver, pid uint32, pc uint64, event uint8) (cost uint64, bufferFull bool)

// Driver is DCPI's device driver for one CPU: its aggregation table, its
// overflow buffer pair and its counters. Nothing in it is shared with
// another CPU's driver, so handlers on different CPUs never synchronize
// (sec. 4.2.3).
//
// Its methods have two sides, and the split is the whole concurrency
// contract (sec. 4.2.3; details in driver_flush.go):
//
//   - CPU side: Sample, BeginFlush, EndFlush, HandOff, Release, Stats,
//     Pending. Only on the driver's CPU: the simulation goroutine, inside
//     the counter interrupt or an IPI handler (hwsim.Machine.SendIPI), or
//     any goroutine when the CPU is not running and has been synchronized
//     with. They never run concurrently with one another.
//   - Daemon side: DrainTable, TakeFull, Delivered. One daemon goroutine, only after
//     it has seen complete (through a channel the IPI function sends on)
//     the last IPI it sent to this driver. DrainTable only between a
//     BeginFlush and the EndFlush after it; TakeFull after a HandOff.
//
// The handler uses no lock, no atomic instruction, no allocation.
type Driver struct {
	// The handler's per-CPU state, read on every sample (the 64-byte
	// per-processor structure of sec. 4.2.2).
	handle handler
	tab    table
	cost   costTable
	stats  DriverStats
	satAt  uint64 // count at which an entry is sent out (CountMax; tests lower it)
	out    overflowPair[slot]
	stk    *stackSide // nil: stacks off (stack.go)
	me     *meSide    // nil: ProfileMe off (profileme.go)

	normal   handler // the table handler for the configured policy
	flushing bool    // between BeginFlush and EndFlush (not read by handlers)
	cfg      DriverConfig

	// Owned by the daemon side.
	drained uint64 // samples handed to the daemon by DrainTable and TakeFull
}

// NewDriver allocates one CPU's driver.
func NewDriver(cfg DriverConfig) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &Driver{
		tab:   newTable(cfg.TableEntries, cfg.Assoc),
		cost:  cfg.Cost.table(cfg.Assoc, cfg.Policy),
		satAt: CountMax,
		out:   newOverflowPair[slot](cfg.BufferEntries),
		cfg:   cfg,
	}
	if cfg.Stacks.Entries > 0 {
		d.stk = newStackSide(cfg.Stacks)
	}
	if cfg.Me.Entries > 0 {
		d.me = newMeSide(cfg.Me)
	}
	switch {
	case cfg.Policy == SwapToFront:
		d.normal = (*Driver).sampleSwapToFront
	case cfg.Assoc == 4:
		d.normal = (*Driver).sampleRoundRobin4
	default:
		d.normal = (*Driver).sampleRoundRobin
	}
	d.handle = d.normal
	return d, nil
}

// Config returns the driver's configuration.
func (d *Driver) Config() DriverConfig { return d.cfg }

// Sample is the performance counter interrupt handler (CPU side): it
// counts one sample of event at pc in process pid and returns the
// handler's modelled cost in cycles. bufferFull is true when the sample
// completed an overflow buffer: the caller should wake the daemon (Node
// notes it for the host's next sync point; a lost or merged wake-up only
// delays the daemon, see HandOff), which then sends an IPI that calls
// HandOff.
func (d *Driver) Sample(pid uint32, pc uint64, event uint8) (cost uint64, bufferFull bool) {
	return d.handle(d, pid, pc, event)
}

// saturated sends a full count to the overflow buffer and restarts the
// entry at 1 with this sample. Without buffer room it drops this sample
// and keeps the count.
func (d *Driver) saturated(s *slot, j int) (uint64, bool) {
	cost := d.cost.hit[j&(maxAssoc-1)]
	d.stats.Hits++
	ok, full := d.out.push(s)
	if !ok {
		d.stats.Dropped++
		d.stats.CyclesHit += cost
		return cost, false
	}
	d.stats.Saturations++
	d.stats.EntriesOut++
	d.stats.SamplesOut += uint64(s.count())
	s.key = s.key&^countMask | 1
	cost += d.cost.overflow
	if full {
		cost += d.cost.switched
	}
	d.stats.CyclesHit += cost
	return cost, full
}

// sampleRoundRobin4 is the handler for DCPI's own table, 4-way
// round-robin, with the bucket's four compares unrolled.
func (d *Driver) sampleRoundRobin4(pid uint32, pc uint64, event uint8) (uint64, bool) {
	tag := tagOf(pid, event)
	b := d.tab.bucket(pid, pc, event)
	b = b[:4:4]
	var j int
	switch {
	case matches(&b[0], tag, pc):
		j = 0
	case matches(&b[1], tag, pc):
		j = 1
	case matches(&b[2], tag, pc):
		j = 2
	case matches(&b[3], tag, pc):
		j = 3
	default:
		return d.missRoundRobin(b, slot{pc: pc, key: tag | 1})
	}
	// The hit path, written out in each handler (the compiler does not
	// inline a function this size).
	s := &b[j]
	if s.key&countMask >= d.satAt {
		return d.saturated(s, j)
	}
	s.key++
	cost := d.cost.hit[j&(maxAssoc-1)]
	d.stats.Hits++
	d.stats.CyclesHit += cost
	return cost, false
}

// sampleRoundRobin is the round-robin handler for any associativity.
func (d *Driver) sampleRoundRobin(pid uint32, pc uint64, event uint8) (uint64, bool) {
	tag := tagOf(pid, event)
	b := d.tab.bucket(pid, pc, event)
	for j := range b {
		if s := &b[j]; matches(s, tag, pc) {
			if s.key&countMask >= d.satAt {
				return d.saturated(s, j)
			}
			s.key++
			cost := d.cost.hit[j&(maxAssoc-1)]
			d.stats.Hits++
			d.stats.CyclesHit += cost
			return cost, false
		}
	}
	return d.missRoundRobin(b, slot{pc: pc, key: tag | 1})
}

func (d *Driver) missRoundRobin(b []slot, s slot) (uint64, bool) {
	d.stats.Misses++
	if !d.out.room() && allLive(b) {
		return d.dropped()
	}
	victim, pos := d.tab.insertRoundRobin(b, s)
	if !victim.live() {
		cost := d.cost.fill[pos&(maxAssoc-1)]
		d.stats.Fills++
		d.stats.CyclesMiss += cost
		return cost, false
	}
	return d.evicted(victim, d.cost.evict)
}

// sampleSwapToFront is the handler with sec. 5.4's policy.
func (d *Driver) sampleSwapToFront(pid uint32, pc uint64, event uint8) (uint64, bool) {
	tag := tagOf(pid, event)
	b := d.tab.bucket(pid, pc, event)
	for j := range b {
		if s := &b[j]; matches(s, tag, pc) {
			cost, full := d.cost.hit[j&(maxAssoc-1)], false
			if s.key&countMask >= d.satAt {
				cost, full = d.saturated(s, j)
			} else {
				s.key++
				d.stats.Hits++
				d.stats.CyclesHit += cost
			}
			b[0], b[j] = b[j], b[0]
			return cost, full
		}
	}
	return d.missSwapToFront(b, slot{pc: pc, key: tag | 1})
}

func (d *Driver) missSwapToFront(b []slot, s slot) (uint64, bool) {
	d.stats.Misses++
	if !d.out.room() && allLive(b) {
		return d.dropped()
	}
	victim, moved := insertFront(b, s)
	if !victim.live() {
		cost := d.cost.fill[moved&(maxAssoc-1)]
		d.stats.Fills++
		d.stats.CyclesMiss += cost
		return cost, false
	}
	return d.evicted(victim, d.cost.evict)
}

// evicted writes a victim of a miss to the overflow buffer, which the miss
// path has checked has room.
func (d *Driver) evicted(victim slot, cost uint64) (uint64, bool) {
	_, full := d.out.push(&victim)
	d.stats.Evictions++
	d.stats.EntriesOut++
	d.stats.SamplesOut += uint64(victim.count())
	if full {
		cost += d.cost.switched
	}
	d.stats.CyclesMiss += cost
	return cost, full
}

// dropped counts a miss that found its bucket full and no overflow buffer
// with room: the sample is dropped rather than an entry holding many.
func (d *Driver) dropped() (uint64, bool) {
	d.stats.Dropped++
	d.stats.CyclesMiss += d.cost.drop
	return d.cost.drop, false
}

func allLive(b []slot) bool {
	for j := range b {
		if !b[j].live() {
			return false
		}
	}
	return true
}

// sampleFlushing is the handler while the daemon copies the table: the
// sample goes straight to the overflow buffer with a count of one (sec.
// 4.2.3), or is dropped if no buffer has room.
func (d *Driver) sampleFlushing(pid uint32, pc uint64, event uint8) (uint64, bool) {
	cost := d.cost.direct
	d.stats.DirectWrites++
	ok, full := d.out.push(&slot{pc: pc, key: tagOf(pid, event) | 1})
	switch {
	case !ok:
		d.stats.Dropped++
	case full:
		cost += d.cost.switched
		fallthrough
	default:
		d.stats.EntriesOut++
		d.stats.SamplesOut++
	}
	d.stats.CyclesDirect += cost
	return cost, full
}

// DriverStats are one driver's counters. Every sample is in exactly one
// place: counted in the table (a hit or a miss that took a slot), written
// to an overflow buffer (a direct write), or dropped; and every sample
// that leaves the table goes to a buffer inside an entry (EntriesOut,
// SamplesOut) or to the daemon through DrainTable.
type DriverStats struct {
	Samples uint64 // handler invocations: Hits + Misses + DirectWrites
	Hits    uint64 // the sample's entry was in the table
	Misses  uint64 // it was not: Fills + Evictions + dropped misses
	Fills   uint64 // misses that took an empty slot
	// Evictions are misses that pushed a live entry out to the overflow
	// buffer (the paper's "miss rate" is Misses/Samples; in steady state,
	// with the table full, the two are the same).
	Evictions   uint64
	Saturations uint64 // entries sent out because their count reached CountMax
	// DirectWrites are samples taken while the table was being flushed,
	// written to the overflow buffer as entries of count 1 (or dropped).
	DirectWrites     uint64
	EntriesOut       uint64 // entries written to overflow buffers
	SamplesOut       uint64 // the samples those entries hold
	Dropped          uint64 // samples lost: no overflow buffer had room
	BuffersCompleted uint64 // overflow buffers filled, or sealed by HandOff(true)

	// Modelled handler cycles (CostModel) by path.
	CyclesHit, CyclesMiss, CyclesDirect uint64

	// The stack side (stack.go), zero with stacks off. Every
	// StackSamples is counted in the stack table (a hit or a miss), or
	// written to a stack buffer while flushing, or StackDropped.
	StackSamples   uint64 // SampleStack calls
	StackHits      uint64 // the chain was in the stack table
	StackMisses    uint64 // it was not
	StackEvictions uint64 // misses that pushed an entry to a stack buffer
	StackDropped   uint64 // samples whose stack no stack buffer had room for
	StackFrames    uint64 // frames recorded
	StackReads     uint64 // memory reads of the walks
	StackTruncated uint64 // walks that stopped before the outermost frame
	StackHeuristic uint64 // frames unwound by prologue scanning (no table row)
	CyclesStack    uint64 // modelled cycles the stack side added

	// The ProfileMe side (profileme.go), zero with it off.
	MeSamples uint64 // records the handler was given
	MeDropped uint64 // records no ProfileMe buffer had room for
	MeLost    uint64 // records the hardware lost (every register copy full)
	// MePairUnmatched counts paired-sampling records whose partner was
	// missing from their interrupt, never summed (wire.DropMePairUnmatched).
	MePairUnmatched uint64
	// MeAddrsNotKept counts effective addresses not offered to a hot
	// list: the CPU's lists were all taken, or the daemon was reading
	// them. Their samples are counted as usual.
	MeAddrsNotKept uint64
	CyclesMe       uint64 // modelled cycles the ProfileMe side added
}

// Cycles is the modelled total of the handler's cycles.
func (s DriverStats) Cycles() uint64 {
	return s.CyclesHit + s.CyclesMiss + s.CyclesDirect + s.CyclesStack + s.CyclesMe
}

// Add adds o's counters to s, for totals over CPUs or runs.
func (s *DriverStats) Add(o DriverStats) {
	s.Samples += o.Samples
	s.Hits += o.Hits
	s.Misses += o.Misses
	s.Fills += o.Fills
	s.Evictions += o.Evictions
	s.Saturations += o.Saturations
	s.DirectWrites += o.DirectWrites
	s.EntriesOut += o.EntriesOut
	s.SamplesOut += o.SamplesOut
	s.Dropped += o.Dropped
	s.BuffersCompleted += o.BuffersCompleted
	s.CyclesHit += o.CyclesHit
	s.CyclesMiss += o.CyclesMiss
	s.CyclesDirect += o.CyclesDirect
	s.StackSamples += o.StackSamples
	s.StackHits += o.StackHits
	s.StackMisses += o.StackMisses
	s.StackEvictions += o.StackEvictions
	s.StackDropped += o.StackDropped
	s.StackFrames += o.StackFrames
	s.StackReads += o.StackReads
	s.StackTruncated += o.StackTruncated
	s.StackHeuristic += o.StackHeuristic
	s.CyclesStack += o.CyclesStack
	s.MeSamples += o.MeSamples
	s.MeDropped += o.MeDropped
	s.MeLost += o.MeLost
	s.MePairUnmatched += o.MePairUnmatched
	s.MeAddrsNotKept += o.MeAddrsNotKept
	s.CyclesMe += o.CyclesMe
}

// Stats returns the driver's counters (CPU side: call it on the driver's
// CPU, e.g. in an IPI handler, or when the simulation is not running).
func (d *Driver) Stats() DriverStats {
	s := d.stats
	s.Samples = s.Hits + s.Misses + s.DirectWrites
	s.BuffersCompleted = d.out.completed
	if d.stk != nil {
		s.BuffersCompleted += d.stk.out.completed
	}
	if d.me != nil {
		s.BuffersCompleted += d.me.out.completed
	}
	return s
}
