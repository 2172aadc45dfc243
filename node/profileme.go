package node

import (
	"fmt"
	"math/rand/v2"
	"unsafe"

	"dcpi/internal/hotlist"

	"dcpi/hwsim/alpha"
	"dcpi/wire"
)

// ProfileMe samples (hwsim's ProfileMe on the 21164 and the 21264): with
// MeConfig.Entries > 0 each CPU's driver keeps a second table beside the
// counter table, keyed (process incarnation, PC, path history), whose
// entries sum the samples' retire/abort counts, event bits, stall cycles
// by cause, Table 1 stage latencies, load latencies, a log2 histogram of
// head-of-queue cycles and, under paired sampling, the pair statistics
// (the wire.Me fields). The history is in the key so that the daemon can
// count (PC, history) pairs for path reconstruction exactly; it costs
// entries only where an instruction is reached by many paths. It
// has its own overflow buffer pair and drains by the same IPI protocol
// (driver_flush.go: BeginFlush/EndFlush, HandOff and Release act on it
// too); no lock, atomic or allocation on the CPU side.
//
// Paired sampling (sec. 4.2): the hardware delivers a pair as two
// consecutive records, first then second. The handler computes each
// record's pair statistics from its partner's (partnerStats) and sums them
// with its own; a record whose partner is missing from the interrupt is
// never summed: it is counted in MePairUnmatched (wire's
// DropMePairUnmatched), a drop.
//
// Conservation: every record the hardware tagged is, on the driver,
// summed in the ProfileMe table, written to a ProfileMe buffer, dropped
// for want of buffer room (MeDropped) or for a missing partner
// (MePairUnmatched), or reported lost by the hardware (MeLost: every
// register copy was full).

// MeConfig configures one CPU's ProfileMe table; zero Entries: off.
type MeConfig struct {
	Entries       int // a multiple of MeAssoc
	BufferEntries int
	// AddrLists is how many instructions' effective-address hot lists
	// (internal/hotlist) a CPU keeps between full drains; 0: none.
	AddrLists int
}

// MeAssoc is the ProfileMe table's associativity.
const MeAssoc = 4

// DefaultMeConfig is what --profileme turns on: a 2K-entry table and two
// 512-entry buffers (an entry is 400 bytes: 1.2 MB per CPU).
// With it, 512 effective-address hot lists (0.2 MB).
func DefaultMeConfig() MeConfig {
	return MeConfig{Entries: 2 << 10, BufferEntries: 512, AddrLists: 512}
}

// memoryBytes is the table and buffer pair's memory.
func (c MeConfig) memoryBytes() int {
	n := int(unsafe.Sizeof(meSlot{})) * (c.Entries + 2*c.BufferEntries)
	if c.AddrLists > 0 {
		n += newValueTable(c.AddrLists).memoryBytes()
	}
	return n
}

func (c MeConfig) validate() error {
	if c.Entries == 0 {
		return nil
	}
	switch {
	case c.Entries < 0 || c.Entries%MeAssoc != 0 || c.Entries > 1<<22:
		return fmt.Errorf("ProfileMe table of %d entries: want a positive multiple of %d up to %d", c.Entries, MeAssoc, 1<<22)
	case c.BufferEntries < 1 || c.BufferEntries > 1<<20:
		return fmt.Errorf("ProfileMe buffers of %d entries: want 1 to %d", c.BufferEntries, 1<<20)
	case c.AddrLists < 0 || c.AddrLists > 1<<16:
		return fmt.Errorf("ProfileMe address lists %d: want 0 to %d", c.AddrLists, 1<<16)
	}
	return nil
}

// MeSample is one aggregated ProfileMe entry as it leaves the driver.
type MeSample struct {
	PID     uint32 // the incarnation
	PC      uint64
	History uint16 // the path-history register of every sample summed
	Counts  wire.MeCounts
	// Addrs, when set, is instead the instruction's effective-address hot
	// list (its Counts are zero: the samples are counted in the others).
	Addrs *hotlist.List
}

// MeRecord is what the handler is given per sample: the hardware's
// record and its process incarnation.
type MeRecord struct {
	alpha.MeRecord
	Incarnation uint32
}

// meSlot is a table or buffer entry (live: Counts[MeSamples] > 0).
type meSlot struct {
	pid  uint32
	hist uint16
	pc   uint64
	c    wire.MeCounts
}

func (s *meSlot) live() bool { return s.c[wire.MeSamples] != 0 }

// meSide is one CPU's ProfileMe state, CPU side except where noted.
type meSide struct {
	slots    []meSlot
	buckets  uint64
	rr       uint64
	out      overflowPair[meSlot]
	flushing bool
	scratch  meSlot
	drained  uint64 // daemon side: samples handed over
	// addrs holds the effective-address hot lists (nil: none), offered
	// on the CPU side outside flushes, read and emptied by DrainMe.
	addrs *valueTable
	coins *rand.PCG
}

func newMeSide(c MeConfig) *meSide {
	m := &meSide{slots: pinned[meSlot](c.Entries), buckets: uint64(c.Entries / MeAssoc),
		out: newOverflowPair[meSlot](c.BufferEntries)}
	if c.AddrLists > 0 {
		m.addrs, m.coins = newValueTable(c.AddrLists), rand.NewPCG(uint64(c.Entries), 0xea)
	}
	return m
}

// fill sets s to the counts of one record.
func (s *meSlot) fill(r *MeRecord) {
	s.pid, s.pc, s.hist = r.Incarnation, r.PC, r.History
	s.c = wire.MeCounts{}
	c := &s.c
	c[wire.MeSamples] = 1
	switch {
	case r.Retired():
		c[wire.MeRetired] = 1
	case r.Abort == alpha.TrapEvent:
		c[wire.MeAbortIntr] = 1
	case r.Abort == alpha.TrapSquash:
		c[wire.MeAbortSquash] = 1
	default:
		c[wire.MeAbortTrap] = 1
	}
	for i, v := range r.Stages {
		c[wire.MeStage0+i] = uint64(v)
	}
	for i := range alpha.NumMeEvents - 1 {
		if r.Events.Has(i + 1) {
			c[wire.MeTaken+i] = 1
		}
	}
	c[wire.MeHeadCycles] = uint64(r.Head)
	for i, v := range r.Stall {
		c[wire.MeStall0+i] = uint64(v)
	}
	if r.LoadLatency > 0 {
		c[wire.MeLoads], c[wire.MeLoadLatency] = 1, uint64(r.LoadLatency)
	}
	c[wire.MeHist0+wire.MeHistBucket(uint64(r.Head))] = 1
}

// meTimes are the cycles of a record's life the pair statistics use:
// fetched, issued, ready to retire, and finished. On the 21264 the Table 1
// stages place issue and retire-ready; on the 21164, which has no such
// stages (they are zero), an instruction issues when it leaves the head of
// the in-order queue, taken as its fetch cycle, and is in progress until
// it finishes.
func meTimes(r *alpha.MeRecord) (fetched, issued, retReady, finished uint64) {
	fetched, finished = r.Fetched, max(r.Finished, r.Fetched)
	var toIssue, toRetReady uint64
	for i, v := range r.Stages {
		if i < alpha.MeIssueToRetReady {
			toIssue += uint64(v)
		}
		if i <= alpha.MeIssueToRetReady {
			toRetReady += uint64(v)
		}
	}
	if toRetReady == 0 && r.Stages[alpha.MeRetReadyToRetire] == 0 {
		return fetched, fetched, finished, finished
	}
	return fetched, fetched + toIssue, min(fetched+toRetReady, finished), finished
}

// partnerStats adds to c the pair statistics of record r paired with p
// (ProfileMe sec. 5.2.2-5.2.3): its role, whether p retired, whether the
// two were in flight at once and for how many cycles, whether p issued
// while r was in progress and then retired (useful overlap), and r's
// in-progress cycles.
func partnerStats(c *wire.MeCounts, r, p *alpha.MeRecord) {
	if r.Pair == alpha.MeFirst {
		c[wire.MeFirst] = 1
	} else {
		c[wire.MeSecond] = 1
	}
	rf, _, rr, rfin := meTimes(r)
	pf, pi, _, pfin := meTimes(p)
	if p.Retired() {
		c[wire.MePartnerRetired] = 1
	}
	if rf <= pfin && pf <= rfin {
		c[wire.MeOverlap] = 1
		c[wire.MeOverlapCycles] = min(rfin, pfin) - max(rf, pf)
		if p.Retired() && rf <= pi && pi <= rr {
			c[wire.MeUseful] = 1
		}
	}
	c[wire.MeInProgress] = rr - rf
}

// SampleMe (CPU side) counts the ProfileMe records one interrupt
// delivered and the records the hardware lost since the last one. It
// returns the modelled cost and whether a ProfileMe buffer completed.
func (d *Driver) SampleMe(recs []MeRecord, lost uint64) (cost uint64, bufferFull bool) {
	m := d.me
	if m == nil {
		return 0, false
	}
	ss, c := &d.stats, &d.cost
	ss.MeLost += lost
	for i := range recs {
		cost += c.stackWalk // reading one set of profile registers
		r := &recs[i]
		var partner *MeRecord
		switch r.Pair {
		case alpha.MeFirst:
			if i+1 < len(recs) && recs[i+1].Pair == alpha.MeSecond {
				partner = &recs[i+1]
			}
		case alpha.MeSecond:
			if i > 0 && recs[i-1].Pair == alpha.MeFirst {
				partner = &recs[i-1]
			}
		}
		if r.Pair != alpha.MeSingle && partner == nil {
			ss.MePairUnmatched++
			continue
		}
		sc := &m.scratch
		sc.fill(r)
		if partner != nil {
			partnerStats(&sc.c, &r.MeRecord, &partner.MeRecord)
		}
		ss.MeSamples++
		if r.Addr != 0 && m.addrs != nil {
			// The effective address (or jump target) into the
			// instruction's hot list; none while the daemon reads them.
			if l := m.addrs.list(valueKey{inc: r.Incarnation, pc: r.PC}); l != nil && !m.flushing {
				l.Offer(r.Addr, m.coins)
			} else {
				ss.MeAddrsNotKept++
			}
		}
		if m.flushing {
			ok, full := m.out.push(sc)
			if !ok {
				ss.MeDropped++
			}
			bufferFull = bufferFull || full
			continue
		}
		full := d.countMe(m, sc)
		bufferFull = bufferFull || full
	}
	ss.CyclesMe += cost
	return cost, bufferFull
}

// countMe adds sc to its (pid, pc) entry.
func (d *Driver) countMe(m *meSide, sc *meSlot) bool {
	h := (uint64(sc.pid)<<32 ^ sc.pc>>2 ^ uint64(sc.hist)<<47) * hashMul
	i := bucketIndex(h, m.buckets) * MeAssoc
	b := m.slots[i : i+MeAssoc : i+MeAssoc]
	for j := range b {
		if e := &b[j]; e.live() && e.pid == sc.pid && e.pc == sc.pc && e.hist == sc.hist {
			e.c.Add(&sc.c)
			return false
		}
	}
	for j := range b {
		if !b[j].live() {
			b[j] = *sc
			return false
		}
	}
	if !m.out.room() {
		d.stats.MeDropped++
		return false
	}
	v := &b[m.rr]
	if m.rr++; m.rr == MeAssoc {
		m.rr = 0
	}
	_, full := m.out.push(v)
	*v = *sc
	return full
}

func meSampleOf(s *meSlot) MeSample {
	return MeSample{PID: s.pid, PC: s.pc, History: s.hist, Counts: s.c}
}

// DrainMe (daemon side) appends and clears the ProfileMe table; only
// between BeginFlush and EndFlush, like DrainTable.
func (d *Driver) DrainMe(dst []MeSample) []MeSample {
	m := d.me
	if m == nil {
		return dst
	}
	if !m.flushing {
		panic("node: DrainMe outside BeginFlush/EndFlush")
	}
	for i := range m.slots {
		if s := &m.slots[i]; s.live() {
			dst = append(dst, meSampleOf(s))
			m.drained += s.c[wire.MeSamples]
			*s = meSlot{}
		}
	}
	if t := m.addrs; t != nil && t.n > 0 {
		for i, k := range t.keys {
			if k != (valueKey{}) && t.lists[i].N > 0 {
				l := t.lists[i].Clone()
				dst = append(dst, MeSample{PID: k.inc, PC: k.pc, Addrs: &l})
			}
		}
		t.reset()
	}
	return dst
}

// TakeFullMe (daemon side) appends the oldest published ProfileMe buffer.
func (d *Driver) TakeFullMe(dst []MeSample) ([]MeSample, bool) {
	m := d.me
	if m == nil {
		return dst, false
	}
	buf, ok := m.out.takeFull()
	for i := range buf {
		dst = append(dst, meSampleOf(&buf[i]))
		m.drained += buf[i].c[wire.MeSamples]
	}
	return dst, ok
}

// PendingMe (CPU side, or with the CPU stopped) counts the samples in the
// ProfileMe table and buffers not handed over.
func (d *Driver) PendingMe() uint64 {
	m := d.me
	if m == nil {
		return 0
	}
	var n uint64
	for i := range m.slots {
		n += m.slots[i].c[wire.MeSamples]
	}
	m.out.pending(func(ss []meSlot) {
		for i := range ss {
			n += ss[i].c[wire.MeSamples]
		}
	})
	return n
}

// MeDelivered (daemon side) is the samples DrainMe and TakeFullMe handed
// over: Stats().MeSamples == MeDelivered() + PendingMe() + Stats().MeDropped.
func (d *Driver) MeDelivered() uint64 {
	if d.me == nil {
		return 0
	}
	return d.me.drained
}

// MeCountsOf is what one ProfileMe record adds to its entry, with the
// pair statistics from its partner's record (nil for a single sample):
// the sums the driver keeps, for tools that aggregate records themselves
// (analysis/profileme/paperfigs's figures) with the estimators' own inputs.
func MeCountsOf(r, partner *alpha.MeRecord) wire.MeCounts {
	var s meSlot
	s.fill(&MeRecord{MeRecord: *r})
	if partner != nil {
		partnerStats(&s.c, r, partner)
	}
	return s.c
}
