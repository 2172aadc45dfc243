package ev6

import (
	"fmt"
	"slices"

	"dcpi/hwsim/alpha"
	"dcpi/hwsim/timing"
)

// Core is the out-of-order timing model of one 21264 CPU. It implements
// alpha.Core: NewCore installs it in the CPU.
type Core struct {
	p       Params
	cpu     *alpha.CPU
	classes []class

	icache, dcache, l2 *timing.Cache
	itb, dtb           *timing.TLB
	asnOf              map[*alpha.AddressSpace]uint8
	lastAS             *alpha.AddressSpace // the address space asn answered for last
	lastASN            uint8
	pageShift          uint64
	fetchPage          uint64              // page + 1 of the last fetch block looked up in the ITB
	fetchAS            *alpha.AddressSpace // and its address space
	storeWait          []uint64            // per load PC: clearing interval + 1 in which its store-wait bit was set
	bp                 *tournament
	ras                returnStack
	linePred           []uint64 // next fetch block + 1 per fetch block; 0 predicts the sequential one
	jumpPred           []uint64 // last target + 1 of JMP/JSR, by PC

	// Fetch.
	fetchCycle uint64 // cycle the current fetch block was fetched
	fetchBlk   uint64 // current fetch block + 1; 0 when the next instruction starts a new one
	fetchN     int    // instructions fetched from it
	fetchLine  uint64 // I-cache line of the current block + 1
	redirect   uint64 // no fetch before this cycle (a mispredict, a line miss, a restart)
	// redirectCause is why, as a stall cause (noCause: none named).
	redirectCause alpha.StallCause
	loadMissed    [2][64]bool // per register file and register: its last writer was a load that missed
	upperN        int         // instructions of the current fetch block slotted to the upper subclusters
	lowerN        int         // and to the lower ones

	// Map and the out-of-order window, as rings of older instructions'
	// cycles indexed by sequence number.
	seq       uint64
	mapCycle  uint64
	mapN      int
	retired   []uint64 // retire cycle, InFlight ring
	mapped    []uint64 // map cycle, FetchBuffer ring
	intW, fpW ring     // retire cycles of the last writers of each file
	loads     ring     // retire cycles of the last loads
	stores    ring     // retire cycles of the last stores
	iq, fq    []uint64 // issue cycles of instructions that may still be queued, sorted

	// Issue and execution.
	cal      []calSlot     // pipes used per cycle, a ring
	readyInt [2][64]uint64 // integer register values ready, per cluster
	readyFP  [64]uint64
	divFree  uint64
	maf      []mafEntry
	sq       []sqEntry // the last StoreQueue stores, oldest first

	// Retire.
	lastRetire uint64
	retireN    int

	slots []slotEntry // slotting counts by fetch entry PC

	pend    pending
	hasPend bool

	// Truth, if not nil, collects ground truth per PC: retires as
	// executions, the cycles between the previous retire and this one as
	// head cycles (the instruction was the oldest in flight), events and
	// transfers. Stages, if not nil, collects retires, aborts and the
	// cycles between stages. hwsim sets both per image.
	Truth  *alpha.GroundTruth
	Stages *StageTruth
	acct   uint64 // the cycle up to which Truth has charged cycles

	stats   Stats
	observe func(Record)

	wpDecoded []wpDecoded // wrong-path decodes by PC

	// retiredIn counts retires per window of 1<<IPCWindowShift cycles:
	// the CPU's IPC over time.
	retiredIn []uint64
	// hist is the path history Record.History reports: conditional
	// branch directions as fetched, repaired at a mispredict.
	hist uint16

	// Load hit speculation (HRM §2.7.1): the load-use counter, the
	// speculative windows of missed loads that may still matter to
	// younger instructions, the first cycles of hit integer loads'
	// windows (holds), and per register file and register the sequence
	// number + 1 of the missed load whose value it would have held at
	// specAt had the load hit (0: its last writer was no such load).
	loadUse   int
	wins      []specWindow
	winsEnd   uint64           // the last cycle of any window in wins
	holds     [holdRing]uint64 // cycle + 1 of hit integer loads' windows' first cycles, by cycle
	aborted   []abortedIssue   // the pending instruction's aborted issues
	specOwner [2][64]uint64
	specAt    [2][64]uint64
}

// specWindow is the speculative window of a load (HRM §2.7.1): the cycles
// from..to in which the issue queue issued instructions before it knew
// whether the load hit. On a miss the ones it aborts issue again from
// reissue on.
type specWindow struct {
	seq               uint64 // the load's sequence number
	from, to, reissue uint64
	fp                bool
}

// holdRing is how many cycles of hit loads' window starts the core
// remembers: far more than the issue cycles of the instructions in flight
// span, short of a chain of memory misses.
const holdRing = 1024

// maxSpecAborts bounds the aborted issues of one instruction: each
// abort moves its issue past a window, and windows lie ahead of the map
// only as far as the loads in flight.
const maxSpecAborts = 8

type abortedIssue struct {
	cycle uint64
	pipe  uint8
}

// Stats counts what the core did.
type Stats struct {
	Retired, Cycles                   uint64
	Branches, Mispredicts, JumpMisses uint64
	LineMisses                        uint64
	WrongPath, WrongPathIssued        uint64 // wrong-path instructions fetched, and issued before the squash
	ICacheMisses, DCacheMisses        uint64
	L2Misses, Forwarded               uint64
	OrderTraps                        uint64 // loads issued before an older store to their quadword, refetched
	SpecAborts                        uint64 // issues aborted in the speculative window of a load that missed (HRM §2.7.1)
	DTBMisses, ITBMisses              uint64
}

type ring struct {
	a []uint64
	n uint64
}

func newRing(n int) ring { return ring{a: make([]uint64, n)} }

// oldest returns the value pushed len(a) pushes ago, or 0.
func (r *ring) oldest() uint64 {
	if r.n < uint64(len(r.a)) {
		return 0
	}
	return r.a[r.n%uint64(len(r.a))]
}

func (r *ring) push(v uint64) {
	r.a[r.n%uint64(len(r.a))] = v
	r.n++
}

type calSlot struct {
	cycle uint64
	used  uint8
}

const calSize = 1 << 15 // cycles of issue slots remembered; far more than an 80-instruction window spans

type slotEntry struct {
	pc           uint64 // entry PC + 1; 0 when empty
	as           *alpha.AddressSpace
	upper, lower uint8
}

type mafEntry struct{ line, done uint64 }

type wpDecoded struct {
	w  uint32
	ok bool
	d  alpha.Decoded
}

type sqEntry struct{ qw, issue, retire uint64 }

// pending is the timing of the instruction Retire answered for, applied
// by Commit.
type pending struct {
	pc                 uint64
	fetch, mapc, issue uint64
	ready, ea          uint64 // operands ready; the effective address Retire was given
	retire             uint64
	done               uint64 // result cycle in its own cluster
	pipe               uint8
	ev                 alpha.EventSet
	baseLat            uint64           // the class's latency, a load's on a hit
	feCause            alpha.StallCause // why fetch waited (noCause: it did not, or no named cause)
	issueCause         alpha.StallCause // why issue waited beyond the map's earliest
	newBlock           bool
	fetchBlk           uint64
	fetchLine          uint64
	upperN, lowerN     int
	// Load hit speculation: whether an integer load was timed with the
	// counter's upper bit set (it opens a window), and whether its issue
	// queue entry is held a cycle longer (issued first in a hit load's
	// window). Its issues aborted in missed loads' windows are in
	// Core.aborted: a field here would cost zeroing for every
	// instruction.
	specLoad bool
	iqHold   bool
}

// NewCore returns the 21264 core of cpu with parameters p and installs
// it (cpu.Core). seed seeds nothing random today; it is taken for the
// caches' sake should a random replacement be chosen.
func NewCore(cpu *alpha.CPU, p Params) (*Core, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	mk := func(size, ways int) (*timing.Cache, error) {
		return timing.NewCache(timing.CacheConfig{Size: size, Line: p.LineBytes, Ways: ways, Replacement: timing.LRU})
	}
	c := &Core{p: p, cpu: cpu, classes: buildClasses(p)}
	c.redirectCause = noCause
	var err error
	if c.icache, err = mk(p.ICacheBytes, p.CacheWays); err != nil {
		return nil, fmt.Errorf("ev6: I-cache: %w", err)
	}
	if c.dcache, err = mk(p.DCacheBytes, p.CacheWays); err != nil {
		return nil, fmt.Errorf("ev6: D-cache: %w", err)
	}
	if c.l2, err = mk(p.L2Bytes, 1); err != nil {
		return nil, fmt.Errorf("ev6: Bcache: %w", err)
	}
	if c.itb, err = timing.NewTLB(p.ITBEntries, timing.NotLastUsed); err != nil {
		return nil, fmt.Errorf("ev6: ITB: %w", err)
	}
	if c.dtb, err = timing.NewTLB(p.DTBEntries, timing.NotLastUsed); err != nil {
		return nil, fmt.Errorf("ev6: DTB: %w", err)
	}
	c.pageShift = alpha.PageShift
	c.storeWait = make([]uint64, p.StoreWaitEntries)
	c.loadUse = p.LoadUseCounterInit
	c.bp = newTournament(p)
	c.ras = returnStack{a: make([]uint64, p.ReturnStack)}
	c.linePred = make([]uint64, p.LineEntries)
	c.jumpPred = make([]uint64, p.LineEntries)
	c.retired = make([]uint64, p.InFlight)
	c.mapped = make([]uint64, p.FetchBuffer)
	c.intW = newRing(p.IntPhys - intArch)
	c.fpW = newRing(p.FPPhys - fpArch)
	c.loads = newRing(p.LoadQueue)
	c.stores = newRing(p.StoreQueue)
	c.cal = make([]calSlot, calSize)
	c.slots = make([]slotEntry, 4096)
	c.wpDecoded = make([]wpDecoded, 4096)
	cpu.Timing = nil
	cpu.Core = c
	return c, nil
}

// Params returns the core's parameters.
func (c *Core) Params() Params { return c.p }

// Stats returns the core's counts.
func (c *Core) Stats() Stats {
	s := c.stats
	s.Cycles = c.lastRetire
	return s
}

// Restart implements alpha.Core: nothing is in flight, and the next
// instruction is fetched no earlier than cycle.
func (c *Core) Restart(cycle uint64) {
	c.hasPend = false
	c.flush(cycle)
	c.acct = max(c.acct, cycle)
}

// flush empties the front end and the window at cycle.
func (c *Core) flush(cycle uint64) {
	c.setRedirect(cycle, noCause)
	c.fetchBlk = 0
	c.fetchLine = 0
	if cycle > c.lastRetire {
		c.lastRetire, c.retireN = cycle, 0
	}
	c.mapCycle = max(c.mapCycle, cycle)
}

// Stop implements alpha.Core.
func (c *Core) Stop(pc, cycle uint64) {
	if c.Truth != nil && cycle > c.acct {
		pcTruth(c.Truth, pc).HeadCycles += cycle - c.acct
	}
	c.acct = max(c.acct, cycle)
}

// Retire implements alpha.Core: it times the instruction d at pc, which
// the interpreter is about to execute on the correct path.
func (c *Core) Retire(d *alpha.Decoded, pc, ea uint64) uint64 {
	if c.hasPend {
		if c.pend.pc == pc && c.pend.retire >= c.cpu.Cycle {
			return c.pend.retire
		}
		// The instruction timed last did not complete (a system call,
		// a fault): it trapped at its retire, flushing the pipeline.
		c.hasPend = false
		c.flush(c.pend.retire + 1)
	}
	cl := &c.classes[min(int(d.Op), len(c.classes)-1)]
	var dtbMissed bool
	for {
		// Timed in place: the pending record is large, and copying it
		// twice an instruction showed in profiles.
		pd := &c.pend
		trap, cause := c.time(pd, d, cl, pc, ea)
		if trap == 0 {
			if dtbMissed {
				pd.ev = pd.ev.With(alpha.EvDTBMiss) // counted once, on the execution that retires
			}
			c.hasPend = true
			return pd.retire
		}
		dtbMissed = dtbMissed || cause == alpha.StallDTB
		// The instruction trapped at issue (an order trap, a TLB
		// miss): it and everything younger — nothing younger is timed
		// yet — are killed, and it is fetched again at trap.
		if st := c.stagesFor(pc); st != nil {
			st.Replayed++
		}
		c.setRedirect(trap, cause)
		c.fetchBlk = 0
	}
}

// noCause marks cycles the 21164's stall causes do not name (an order
// trap's refetch, a map stall, the instruction's own latency).
const noCause = alpha.NumStallCauses

// setRedirect stops fetch before cycle at, for cause.
func (c *Core) setRedirect(at uint64, cause alpha.StallCause) {
	if at > c.redirect {
		c.redirect, c.redirectCause = at, cause
	}
}

// time computes the cycles of the instruction d at pc from the state the
// older ones left. It returns a non-zero trap when the instruction traps
// at issue instead, and must be fetched again from that cycle on.
func (c *Core) time(pd *pending, d *alpha.Decoded, cl *class, pc, ea uint64) (trap uint64, cause alpha.StallCause) {
	*pd = pending{pc: pc, ea: ea, feCause: noCause, issueCause: noCause}
	c.aborted = c.aborted[:0]
	pd.ev = 1 << alpha.EvIssues

	// Fetch: with the previous instruction if it continues its block and
	// a slot is left, else a new block the cycle after, no earlier than a
	// redirect, and no earlier than the fetch buffer has room.
	blk := pc / uint64(c.p.FetchBlockBytes)
	if c.fetchBlk == blk+1 && c.fetchN < c.p.FetchWidth {
		pd.fetch, pd.fetchBlk, pd.fetchLine = c.fetchCycle, c.fetchBlk, c.fetchLine
	} else {
		pd.newBlock = true
		f := max(c.fetchCycle+1, c.redirect)
		if c.redirect > c.fetchCycle+1 {
			pd.feCause = c.redirectCause
		}
		if c.seq >= uint64(c.p.FetchBuffer) {
			if m := c.mapped[c.seq%uint64(c.p.FetchBuffer)]; m > f+1 {
				f = m - 1
			}
		}
		line := pc/uint64(c.p.LineBytes) + 1
		if line != c.fetchLine {
			if page := pc>>c.pageShift + 1; page != c.fetchPage || c.cpu.AS != c.fetchAS {
				c.fetchPage, c.fetchAS = page, c.cpu.AS
				if !c.itb.Lookup(page-1, c.asn(pc)) {
					// An ITB miss traps to PALcode, which fills the
					// ITB; fetch resumes after both (HRM Table 2-1).
					pd.ev = pd.ev.With(alpha.EvITBMiss)
					pd.feCause = alpha.StallITB
					c.stats.ITBMisses++
					f += uint64(c.p.ITBMissCycles + c.p.TLBFillCycles)
				}
			}
			if pa, ok := c.cpu.PhysAddr(pc); ok && !c.icache.Access(pa) {
				pd.ev = pd.ev.With(alpha.EvIMiss)
				fill := uint64(c.p.L2LoadCycles)
				if !c.l2.Access(pa) {
					pd.ev = pd.ev.With(alpha.EvBMiss)
					fill += uint64(c.p.MemoryCycles)
				}
				f += fill
			}
		}
		pd.fetch, pd.fetchBlk, pd.fetchLine = f, blk+1, line
	}

	// Map: in order, MapWidth a cycle, with room in the window, a free
	// physical register, a queue entry and a load or store queue entry.
	m := max(pd.fetch+uint64(c.p.FetchToMap), c.mapCycle)
	if m == c.mapCycle && c.mapN >= c.p.MapWidth {
		m++
	}
	if c.seq >= uint64(c.p.InFlight) {
		m = max(m, c.retired[c.seq%uint64(c.p.InFlight)]+1)
	}
	dst, fpDst := dest(d, &cl.base)
	if dst {
		if fpDst {
			m = max(m, c.fpW.oldest()+1)
		} else {
			m = max(m, c.intW.oldest()+1)
		}
	}
	switch {
	case cl.base.Load && !prefetch(d.Op):
		m = max(m, c.loads.oldest()+1)
	case cl.base.Store:
		m = max(m, c.stores.oldest()+1)
	}
	if cl.fpQueue {
		m = queueRoom(c.fq, c.p.FPQueue, m)
	} else {
		m = queueRoom(c.iq, c.p.IntQueue, m)
	}
	pd.mapc = m

	// Issue: operands ready in the pipe's cluster, the pipe free, oldest
	// first (the older instructions have their slots already).
	earliest := m + uint64(c.p.MapToIssue)
	if cl.serial {
		earliest = max(earliest, c.lastRetire)
	}
	if cl.divider {
		earliest = max(earliest, c.divFree)
	}
	// Slotting: an instruction that may use either subcluster is assigned
	// the one less used by its fetch block, counting the block's
	// instructions bound to one (the HRM's slotting table balances a
	// block between them, §2.3).
	pipes := cl.pipes
	if pd.newBlock {
		pd.upperN, pd.lowerN = c.slotting(pc)
	} else {
		pd.upperN, pd.lowerN = c.upperN, c.lowerN
	}
	if pipes == pEbox {
		if pd.upperN <= pd.lowerN {
			pipes = pUpper
			pd.upperN++
		} else {
			pipes = pLower
			pd.lowerN++
		}
	}
	best, bestPipe, bestReady := c.pick(d, cl, pipes, earliest, false)
	if len(c.wins) > 0 && c.winsEnd >= earliest {
		best, bestPipe, bestReady = c.speculate(pd, d, cl, pipes, earliest, best, bestPipe, bestReady)
	}
	if !cl.fpQueue {
		// Issued in a hit load's window's first cycle, it is kept in the
		// queue until the hit is known: one cycle longer than normal.
		pd.iqHold = c.holds[best%holdRing] == best+1
	}
	pd.issue, pd.pipe, pd.ready = best, bestPipe, bestReady
	pd.issueCause = c.issueCause(d, cl, pd, m+uint64(c.p.MapToIssue))

	// Execute: a load's latency comes from the store queue or the memory
	// system; everything else's from its class.
	if (cl.base.Load || cl.base.Store) && !prefetch(d.Op) {
		if t := c.translate(pd, ea); t != 0 {
			return t, alpha.StallDTB
		}
	}
	lat := uint64(cl.lat)
	if cl.base.Load && !prefetch(d.Op) {
		var t uint64
		if lat, t = c.load(pd, ea, cl.base.FPDst); t != 0 {
			return t, noCause
		}
	}
	pd.done = pd.issue + lat
	r := pd.issue + max(lat, 1) + uint64(c.p.RetireAfter)
	r = max(r, c.lastRetire)
	if r == c.lastRetire && c.retireN >= c.p.RetireWidth {
		r++
	}
	pd.retire = r
	pd.baseLat = uint64(cl.lat)
	return 0, noCause
}

// pick returns the first cycle from earliest at which d can issue, the
// pipe and the cycle its operands were ready. With spec, an operand a
// missed load wrote counts as ready when it would have been on a hit: the
// issue queue's view inside the load's speculative window.
func (c *Core) pick(d *alpha.Decoded, cl *class, pipes uint8, earliest uint64, spec bool) (best uint64, bestPipe uint8, bestReady uint64) {
	best = ^uint64(0)
	for _, p := range pipeOrder {
		if pipes&p == 0 {
			continue
		}
		t := earliest
		cluster := clusterOf(p)
		if cl.base.ReadsA {
			if spec {
				t = max(t, c.operand(d.Ra, cl.base.FPA, cluster))
			} else {
				t = max(t, c.readyOf(d.Ra, cl.base.FPA, cluster))
			}
		}
		if cl.base.ReadsB && !d.Lit {
			if spec {
				t = max(t, c.operand(d.Rb, cl.base.FPB, cluster))
			} else {
				t = max(t, c.readyOf(d.Rb, cl.base.FPB, cluster))
			}
		}
		ready := t
		for !c.free(t, p) {
			t++
		}
		if t < best {
			best, bestPipe, bestReady = t, p, ready
		}
	}
	return best, bestPipe, bestReady
}

// operand is when register r can be read in cluster as the issue queue
// sees it in a speculative window: a missed load's value when a hit's
// would have come.
func (c *Core) operand(r uint8, fp bool, cluster int) uint64 {
	if c.specOwner[b2i(fp)][r&63] != 0 {
		return c.specAt[b2i(fp)][r&63]
	}
	return c.readyOf(r, fp, cluster)
}

// speculate applies the speculative windows of older loads (HRM §2.7.1)
// to d, which would issue at best on pipe: an IQ-issued instruction that
// issues inside an integer load's window, dependent on it or not, and an
// FQ-issued one that uses an FP load's data inside its window, issue
// there, as the queue does not know the load missed yet; if it did, the
// issue is aborted — its pipe slot spent — and the instruction issues
// again after the window. A consumer of a missed load issues in the
// window at the cycle its data would have come on a hit. It returns the
// issue that stands.
func (c *Core) speculate(pd *pending, d *alpha.Decoded, cl *class, pipes uint8, earliest, best uint64, bestPipe uint8, bestReady uint64) (uint64, uint8, uint64) {
	for len(c.aborted) < maxSpecAborts {
		at, pipe := best, bestPipe
		if c.readsMissed(d, cl) {
			if s, sp, _ := c.pick(d, cl, pipes, earliest, true); s < at && c.inOwnWindow(d, cl, s) {
				at, pipe = s, sp
			}
		}
		w := c.aborting(d, cl, at)
		if w == nil {
			break
		}
		c.aborted = append(c.aborted, abortedIssue{cycle: at, pipe: pipe})
		earliest = max(earliest, w.reissue)
		best, bestPipe, bestReady = c.pick(d, cl, pipes, earliest, false)
	}
	return best, bestPipe, bestReady
}

// readsMissed reports whether d reads a register a missed load wrote.
func (c *Core) readsMissed(d *alpha.Decoded, cl *class) bool {
	return cl.base.ReadsA && c.specOwner[b2i(cl.base.FPA)][d.Ra&63] != 0 ||
		cl.base.ReadsB && !d.Lit && c.specOwner[b2i(cl.base.FPB)][d.Rb&63] != 0
}

// inOwnWindow reports whether cycle t lies in the window of a missed load
// whose data d reads, from the queue that window speculates for.
func (c *Core) inOwnWindow(d *alpha.Decoded, cl *class, t uint64) bool {
	for i := range c.wins {
		if w := &c.wins[i]; w.fp == cl.fpQueue && t >= w.from && t <= w.to && c.uses(d, cl, w) {
			return true
		}
	}
	return false
}

// uses reports whether d reads the register missed load w wrote.
func (c *Core) uses(d *alpha.Decoded, cl *class, w *specWindow) bool {
	f := b2i(w.fp)
	return cl.base.ReadsA && cl.base.FPA == w.fp && c.specOwner[f][d.Ra&63] == w.seq+1 ||
		cl.base.ReadsB && !d.Lit && cl.base.FPB == w.fp && c.specOwner[f][d.Rb&63] == w.seq+1
}

// aborting returns the window of a missed load that aborts d's issue at
// t, or nil.
func (c *Core) aborting(d *alpha.Decoded, cl *class, t uint64) *specWindow {
	for i := range c.wins {
		w := &c.wins[i]
		if w.fp != cl.fpQueue || t < w.from || t > w.to {
			continue
		}
		if !w.fp || c.uses(d, cl, w) { // an FP window aborts only the load's users
			return w
		}
	}
	return nil
}

// issueCause names what held the instruction between the earliest issue
// its map allowed (from) and its issue, in the 21164's terms: the operand
// read last (Ra before Rb on a tie), or the D-cache when that operand's
// producer was a load that missed; the FP divider; a barrier waiting for
// older instructions; else a pipe conflict (slot).
func (c *Core) issueCause(d *alpha.Decoded, cl *class, pd *pending, from uint64) alpha.StallCause {
	if pd.issue <= from {
		return noCause
	}
	cluster := clusterOf(pd.pipe)
	var ra, rb uint64
	if cl.base.ReadsA {
		ra = c.readyOf(d.Ra, cl.base.FPA, cluster)
	}
	if cl.base.ReadsB && !d.Lit {
		rb = c.readyOf(d.Rb, cl.base.FPB, cluster)
	}
	switch {
	case max(ra, rb) >= pd.issue && ra >= rb:
		if c.missedBy(d.Ra, cl.base.FPA) {
			return alpha.StallDCache
		}
		return alpha.StallRa
	case max(ra, rb) >= pd.issue:
		if c.missedBy(d.Rb, cl.base.FPB) {
			return alpha.StallDCache
		}
		return alpha.StallRb
	case cl.divider && c.divFree >= pd.issue:
		return alpha.StallFDiv
	case cl.serial:
		return alpha.StallBarrier
	}
	return alpha.StallSlot
}

// missedBy reports whether register r's last writer was a load that
// missed the D-cache.
func (c *Core) missedBy(r uint8, fp bool) bool {
	return c.loadMissed[b2i(fp)][r&63]
}

// refetch is the cycle an instruction trapping at issue in cycle at is
// fetched again, penalty cycles counted as Table 2-1's abort penalties
// are: from the cycle after the trapping instruction's fetch to the
// refetch, when it issued as early as it could.
func (c *Core) refetch(at uint64, penalty int) uint64 {
	return at + uint64(penalty+1-c.p.FetchToMap-c.p.MapToIssue)
}

// translate looks the data address ea up in the DTB at pd.issue. A miss
// traps: the PALcode handler fills the DTB and the instruction is fetched
// again (HRM Table 2-1's DTB miss penalty, then the fill).
func (c *Core) translate(pd *pending, ea uint64) (trap uint64) {
	if _, ok := c.cpu.PhysAddr(ea); !ok {
		return 0 // it will fault
	}
	if c.dtb.Lookup(ea>>c.pageShift, c.asn(ea)) {
		return 0
	}
	c.stats.DTBMisses++
	return c.refetch(pd.issue, c.p.DTBMissCycles) + uint64(c.p.TLBFillCycles)
}

// asn is the address-space number the TLBs tag va with: 0 for the
// kernel's addresses (global, as the PTE's ASM bit makes them), else one
// per address space, reassigned with both TLBs flushed when they run out.
func (c *Core) asn(va uint64) uint8 {
	if va>>63 != 0 {
		return 0
	}
	if c.cpu.AS == c.lastAS && c.lastAS != nil {
		return c.lastASN // a map lookup per load showed in profiles
	}
	if c.asnOf == nil {
		c.asnOf = make(map[*alpha.AddressSpace]uint8)
	}
	n, ok := c.asnOf[c.cpu.AS]
	if !ok {
		if len(c.asnOf) == 255 {
			clear(c.asnOf)
			c.lastAS = nil
			c.itb, _ = timing.NewTLB(c.p.ITBEntries, timing.NotLastUsed)
			c.dtb, _ = timing.NewTLB(c.p.DTBEntries, timing.NotLastUsed)
			c.fetchPage = 0
		}
		n = uint8(len(c.asnOf) + 1)
		c.asnOf[c.cpu.AS] = n
	}
	c.lastAS, c.lastASN = c.cpu.AS, n
	return n
}

// slotting returns how many of the instructions of the fetch block from pc
// on can only use the upper and the lower subclusters.
func (c *Core) slotting(pc uint64) (upper, lower int) {
	// Decoding the block again at every fetch would cost a quarter of
	// the core's time: the answer is kept per entry PC and address
	// space (code rewritten in place keeps its old balance, which only
	// changes which subcluster an instruction is slotted to).
	e := &c.slots[int(pc>>2)&(len(c.slots)-1)]
	if e.pc == pc+1 && e.as == c.cpu.AS {
		return int(e.upper), int(e.lower)
	}
	defer func() {
		*e = slotEntry{pc: pc + 1, as: c.cpu.AS, upper: uint8(upper), lower: uint8(lower)}
	}()
	end := (pc/uint64(c.p.FetchBlockBytes) + 1) * uint64(c.p.FetchBlockBytes)
	for a := pc; a < end; a += 4 {
		w, ok := c.cpu.FetchWord(a)
		if !ok {
			break
		}
		d := alpha.Decode(w, c.cpu.Model)
		switch p := c.classes[min(int(d.Op), len(c.classes)-1)].pipes; {
		case p == pEbox || p&pEbox == 0:
		case p&pUpper == p:
			upper++
		case p&pLower == p:
			lower++
		}
	}
	return upper, lower
}

// pipeOrder is the order pipes are tried in: on a tie, the HRM's arbiters
// give a lower-subcluster instruction L0 and an upper one U1 (§2.1.1.6).
var pipeOrder = [...]uint8{pL0, pL1, pU1, pU0, pFA, pFM}

// dest reports whether d writes a register that needs a physical one, and
// whether it is an FP register.
func dest(d *alpha.Decoded, b *alpha.IssueClass) (writes, fp bool) {
	reg := d.Rc
	switch b.Writes {
	case 0:
		return false, false
	case 'a':
		reg = d.Ra
	}
	return reg&63 < 31, b.FPDst
}

func destReg(d *alpha.Decoded, b *alpha.IssueClass) uint8 {
	if b.Writes == 'a' {
		return d.Ra & 63
	}
	return d.Rc & 63
}

func prefetch(op alpha.Op) bool {
	return op == alpha.OpFETCH || op == alpha.OpWH64 || op == alpha.OpECB
}

// queueRoom returns the first cycle from m at which an issue queue of
// size entries, holding instructions issuing at the sorted cycles q, has
// a free entry (an entry is free from the cycle after its issue).
func queueRoom(q []uint64, size int, m uint64) uint64 {
	j, _ := slices.BinarySearch(q, m) // first entry issuing at or after m
	if occupied := len(q) - j; occupied >= size {
		return q[j+occupied-size] + 1
	}
	return m
}

// readyOf returns when register r (FP if fp) can be read in cluster.
func (c *Core) readyOf(r uint8, fp bool, cluster int) uint64 {
	if fp {
		return c.readyFP[r&63]
	}
	return c.readyInt[cluster][r&63]
}

func (c *Core) free(cycle uint64, p uint8) bool {
	s := &c.cal[cycle%calSize]
	return s.cycle != cycle || s.used&p == 0
}

func (c *Core) reserve(cycle uint64, p uint8) {
	s := &c.cal[cycle%calSize]
	if s.cycle != cycle {
		*s = calSlot{cycle: cycle}
	}
	s.used |= p
}

// load returns the latency of a load issuing at pd.issue (which it may
// delay: a store to forward from not yet issued, a full miss address
// file) from effective address ea.
func (c *Core) load(pd *pending, ea uint64, fp bool) (lat, trap uint64) {
	pd.ev = pd.ev.With(alpha.EvLoads)
	// The load-use counter (HRM §2.7.1): with its upper bit 0 an integer
	// load's consumers are issued for a 5-cycle latency, and it opens no
	// window.
	pd.specLoad = !fp && c.loadUse>>(c.p.LoadUseCounterBits-1) != 0
	unspeculated := !fp && !pd.specLoad
	// The store-wait table (HRM §2): a load whose bit is set waits until
	// every older store in flight has issued; the others issue when
	// their operands are ready, ahead of older stores.
	sw := &c.storeWait[int(pd.pc>>2)&(len(c.storeWait)-1)]
	if *sw == pd.issue/uint64(c.p.StoreWaitClear)+1 {
		for i := range c.sq {
			if s := &c.sq[i]; s.retire > pd.issue && s.issue > pd.issue {
				pd.issue = s.issue
			}
		}
		for !c.free(pd.issue, pd.pipe) {
			pd.issue++
		}
	}
	// Store-to-load forwarding from the youngest older store to the same
	// quadword still in the store queue at the load's issue. If that
	// store issues after the load, the load read stale data: when the
	// store issues it finds the younger load done and takes an order
	// trap — the load and everything younger are refetched — and sets
	// the load's store-wait bit.
	for i := len(c.sq) - 1; i >= 0; i-- {
		s := &c.sq[i]
		if s.qw == ea>>3 && s.retire > pd.issue {
			if s.issue > pd.issue {
				c.stats.OrderTraps++
				*sw = s.issue/uint64(c.p.StoreWaitClear) + 1
				return 0, c.refetch(s.issue, c.p.OrderTrapCycles)
			}
			c.stats.Forwarded++
			if unspeculated {
				// Forwarded data counts as a hit (assumption): issued
				// for the unspeculated latency too.
				return max(uint64(c.p.LatForward), uint64(c.p.LatLoadNoSpec)), 0
			}
			return uint64(c.p.LatForward), 0
		}
	}
	hit := uint64(c.p.LatLoad)
	if fp {
		hit = uint64(c.p.LatFPLoad)
	}
	scheduled := hit
	if unspeculated {
		scheduled = uint64(c.p.LatLoadNoSpec)
	}
	pa, ok := c.cpu.PhysAddr(ea)
	if !ok {
		return scheduled, 0 // it will fault
	}
	line := pa / uint64(c.p.LineBytes)
	for _, e := range c.maf {
		if e.line == line && e.done > pd.issue+hit {
			// The line is on its way: the load merges into the miss.
			pd.ev = pd.ev.With(alpha.EvDMiss)
			return e.done - pd.issue, 0
		}
	}
	if c.dcache.Access(pa) {
		return scheduled, 0
	}
	pd.ev = pd.ev.With(alpha.EvDMiss)
	lat = hit - 3 + uint64(c.p.L2LoadCycles)
	if !c.l2.Access(pa) {
		pd.ev = pd.ev.With(alpha.EvBMiss)
		lat += uint64(c.p.MemoryCycles)
	}
	// A miss needs a miss address file entry: wait for the earliest to
	// finish while all are busy.
	for {
		busy, first := 0, ^uint64(0)
		for _, e := range c.maf {
			if e.done > pd.issue {
				busy++
				first = min(first, e.done)
			}
		}
		if busy < c.p.MAF {
			break
		}
		pd.issue = first
		for !c.free(pd.issue, pd.pipe) {
			pd.issue++
		}
	}
	// The fill is under way from now whether or not the load retires:
	// a load killed by an interrupt and fetched again merges into it.
	c.addMAF(mafEntry{line: line, done: pd.issue + lat})
	return lat, 0
}

// Commit implements alpha.Core: the instruction Retire timed has executed
// and next follows it.
func (c *Core) Commit(d *alpha.Decoded, pc, next uint64) alpha.EventSet {
	if !c.hasPend || c.pend.pc != pc {
		c.Retire(d, pc, 0) // not timed (cannot happen through Run): time it now
	}
	pd := &c.pend
	c.hasPend = false
	cl := &c.classes[min(int(d.Op), len(c.classes)-1)]

	// Front end state.
	if pd.newBlock {
		c.fetchCycle, c.fetchBlk, c.fetchLine, c.fetchN = pd.fetch, pd.fetchBlk, pd.fetchLine, 0
	}
	c.fetchN++
	c.upperN, c.lowerN = pd.upperN, pd.lowerN
	if pd.mapc == c.mapCycle {
		c.mapN++
	} else {
		c.mapCycle, c.mapN = pd.mapc, 1
	}
	c.retired[c.seq%uint64(c.p.InFlight)] = pd.retire
	c.mapped[c.seq%uint64(c.p.FetchBuffer)] = pd.mapc
	c.seq++
	if pd.retire == c.lastRetire {
		c.retireN++
	} else {
		c.lastRetire, c.retireN = pd.retire, 1
	}

	// Queues and execution resources.
	q := &c.iq
	if cl.fpQueue {
		q = &c.fq
	}
	// Entries issuing before this map cycle are free for every later
	// instruction, which maps no earlier.
	j, _ := slices.BinarySearch(*q, pd.mapc)
	*q = slices.Delete(*q, 0, j)
	held := pd.issue
	if pd.iqHold {
		held++
	}
	k, _ := slices.BinarySearch(*q, held)
	*q = slices.Insert(*q, k, held)
	if pd.pipe != 0 {
		c.reserve(pd.issue, pd.pipe)
	}
	if len(c.aborted) > 0 {
		for _, a := range c.aborted {
			c.reserve(a.cycle, a.pipe)
		}
		c.stats.SpecAborts += uint64(len(c.aborted))
		if st := c.stagesFor(pc); st != nil {
			st.SpecAborted += uint64(len(c.aborted))
		}
		c.aborted = c.aborted[:0]
	}
	if cl.divider {
		c.divFree = pd.done
	}
	if dst, fp := dest(d, &cl.base); dst {
		r := destReg(d, &cl.base)
		c.loadMissed[b2i(fp)][r] = cl.base.Load && pd.ev.Has(alpha.EvDMiss)
		c.specOwner[b2i(fp)][r] = 0
		if cl.base.Load && !prefetch(d.Op) {
			c.loadHitSpeculation(pd, fp, r)
		}
		if fp {
			c.readyFP[r] = pd.done
			c.fpW.push(pd.retire)
		} else {
			c.readyInt[0][r], c.readyInt[1][r] = pd.done, pd.done
			if cl.cross {
				c.readyInt[1-clusterOf(pd.pipe)][r] += uint64(c.p.CrossCluster)
			}
			c.intW.push(pd.retire)
		}
	}
	switch {
	case cl.base.Load && !prefetch(d.Op):
		c.loads.push(pd.retire)
		if len(c.wins) > 0 {
			c.pruneWindows()
		}
	case cl.base.Store:
		pd.ev = pd.ev.With(alpha.EvStores)
		c.stores.push(pd.retire)
		ea := c.storeAddr(d)
		if len(c.sq) == c.p.StoreQueue {
			c.sq = c.sq[:copy(c.sq, c.sq[1:])] // keep the array: no allocation
		}
		c.sq = append(c.sq, sqEntry{qw: ea >> 3, issue: pd.issue, retire: pd.retire})
		// The store writes the D-cache after it retires (write-allocate).
		if pa, ok := c.cpu.PhysAddr(ea); ok && !c.dcache.Access(pa) {
			c.l2.Access(pa)
		}
	}

	miss, predicted, redirect := c.control(d, pd, cl, pc, next)
	hist := c.hist
	if cl.base.Branch {
		c.hist = hist<<1 | uint16(b2i(next != pc+4))
	}
	if c.observe != nil {
		c.observe(c.observed(d, pd, cl, pc, next, miss, hist))
	}
	if miss {
		// The wrong path was fetched after the branch's predicted
		// direction (a jump's adds none).
		wrongHist := c.hist
		if cl.base.Branch {
			wrongHist ^= 1
		}
		c.wrongPath(pd, predicted, redirect, wrongHist)
		c.setRedirect(redirect, alpha.StallMispred)
		c.fetchBlk = 0
	}
	if cl.serial && d.Op == alpha.OpCallPal {
		// PAL code runs after the pipeline drains.
		c.flush(pd.retire + 1)
	}
	c.record(d, pd, pc, next)
	c.stats.Retired++
	if w := int(pd.retire >> IPCWindowShift); w < len(c.retiredIn) {
		c.retiredIn[w]++
	} else {
		c.countRetireLate(w)
	}
	return pd.ev
}

// loadHitSpeculation applies the retired load pd, writing register r (FP
// if fp), to the load-use counter and opens its speculative window (HRM
// §2.7.1). A load to R31/F31 writes no register and does neither: it
// opens no window, the HRM says; that it leaves the counter alone is an
// assumption. The counter moves in program order here, in issue order on
// the chip.
func (c *Core) loadHitSpeculation(pd *pending, fp bool, r uint8) {
	missed := pd.ev.Has(alpha.EvDMiss)
	if missed {
		c.loadUse = max(c.loadUse-c.p.LoadUseMissDec, 0)
	} else {
		c.loadUse = min(c.loadUse+c.p.LoadUseHitInc, 1<<c.p.LoadUseCounterBits-1)
	}
	w := specWindow{seq: c.seq - 1, fp: fp}
	switch {
	case fp && c.p.FPLoadSpecWindow > 0:
		w.from = pd.issue + uint64(c.p.LatFPLoad)
		w.to = w.from + uint64(c.p.FPLoadSpecWindow) - 1
	case !fp && pd.specLoad && c.p.LoadSpecWindow > 0:
		w.from = pd.issue + uint64(c.p.LatLoad)
		w.to = w.from + uint64(c.p.LoadSpecWindow) - 1
	default:
		return
	}
	if !missed {
		if !fp { // an FP hit holds only its users' entries a cycle: not modelled
			c.holds[w.from%holdRing] = w.from + 1
		}
		return
	}
	w.reissue = w.to + 1
	c.specOwner[b2i(fp)][r] = w.seq + 1
	c.specAt[b2i(fp)][r] = w.from
	c.wins = append(c.wins, w)
	c.winsEnd = max(c.winsEnd, w.to)
}

// pruneWindows drops the windows no instruction mapped from now on can
// issue in.
func (c *Core) pruneWindows() {
	first := c.mapCycle + uint64(c.p.MapToIssue)
	k := 0
	for _, w := range c.wins {
		if w.to >= first {
			c.wins[k] = w
			k++
		}
	}
	c.wins = c.wins[:k]
}

// observed is the observer's Record of the retired instruction d at pc,
// timed in pd, with successor next and the path history hist before it.
func (c *Core) observed(d *alpha.Decoded, pd *pending, cl *class, pc, next uint64, miss bool, hist uint16) Record {
	r := Record{PC: pc, Fetch: pd.fetch, Map: pd.mapc, Issue: pd.issue, Retire: pd.retire,
		Retired: true, Mapped: true, Issued: true, Events: pd.ev, Mispredicted: miss,
		Ready: pd.ready, RetReady: min(pd.issue+max(pd.done-pd.issue, 1)+uint64(c.p.RetireAfter), pd.retire),
		Done: pd.done, History: hist,
		Load: cl.base.Load && !prefetch(d.Op), Taken: (cl.base.Branch || cl.base.Jump || d.Op == alpha.OpBR) && next != pc+4}
	switch {
	case cl.base.Load || cl.base.Store:
		r.Addr = pd.ea
	case cl.base.Jump:
		r.Addr = next
	}
	return r
}

// storeAddr is a store's effective address, from the registers after it
// executed (a store writes no register).
func (c *Core) storeAddr(d *alpha.Decoded) uint64 {
	return uint64(d.Imm) + c.cpu.R[d.Rb&63]
}

func (c *Core) addMAF(e mafEntry) {
	if len(c.maf) < c.p.MAF {
		c.maf = append(c.maf, e)
		return
	}
	// Replace the entry that finished first.
	k := 0
	for i := range c.maf {
		if c.maf[i].done < c.maf[k].done {
			k = i
		}
	}
	c.maf[k] = e
}

// IPCWindowShift sets the window of the IPC series: 1<<20 cycles, about
// 3 ms at 333 MHz.
const IPCWindowShift = 20

// countRetireLate counts a retire in window w beyond the series so far.
func (c *Core) countRetireLate(w int) {
	c.retiredIn = append(c.retiredIn, make([]uint64, w+1-len(c.retiredIn))...)
	c.retiredIn[w]++
}

// RetiredPerWindow returns the instructions retired in each window of
// 1<<IPCWindowShift cycles from cycle 0 to the last retire (divided by
// the window, the IPC over time). The slice is the core's: copy it to
// keep it.
func (c *Core) RetiredPerWindow() []uint64 { return c.retiredIn }
