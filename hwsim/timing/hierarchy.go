package timing

import "fmt"

// Hierarchy is the memory system and branch prediction of one CPU: the
// caches, TLBs, miss address file, write buffer, branch history table and
// return stack composed as on the 21164. The caller (the interpreter)
// calls Fetch on entering each new fetch block, Load and Store for each
// memory access, and Branch, Jump, Call and Return for control flow; each
// returns the cycles the pipeline loses and the Events that happened.
//
// Addresses: the I-cache is virtually indexed and tagged with the current
// ASN (SetASN), the D-cache, S-cache and board cache are physically
// addressed, and the TLBs take the virtual page. So Fetch, Load and Store
// take both the virtual address and the physical one. A machine without
// physical addresses may pass va | asn<<56 as the physical address: that
// keeps processes apart in the caches (the index bits are untouched), at
// the price of no sharing of physical pages between them.
//
// The D-cache is kept a subset of the S-cache, and the S-cache a subset of
// the board cache, as on the 21164 (EK-SWRA2 4.1.2): a line leaving an
// outer cache is invalidated in the inner ones. The I-cache, being
// virtual, is kept coherent by IMB (FlushIcache) instead.
//
// A Hierarchy is not safe for concurrent use; like the CPU it models, it
// belongs to one goroutine at a time.
type Hierarchy struct {
	p Params

	icache, dcache, scache *Cache
	bcache                 *Cache // nil without a board cache
	itb, dtb               *TLB
	bp                     *BranchPredictor
	rs                     *ReturnStack
	wb                     *WriteBuffer
	maf                    missFile

	asn       uint8
	pageShift uint
	dshift    uint   // log2(DcacheLine): the miss address file's block
	fetchPage uint64 // page number + 1 the ITB last translated for fetch, 0 none
	fetchASN  uint8  // and under which ASN

	st Stats
}

// NewHierarchy returns the empty caches, TLBs and predictors of one CPU.
func NewHierarchy(p Params) (*Hierarchy, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	h := &Hierarchy{p: p, pageShift: p.PageShift, dshift: log2(p.DcacheLine), maf: newMissFile(p.MAFEntries)}
	var err error
	mk := func(size, line, ways int, repl Replacement, seed uint64) *Cache {
		c, e := NewCache(CacheConfig{Size: size, Line: line, Ways: ways, Replacement: repl, Seed: seed})
		if e != nil && err == nil {
			err = e
		}
		return c
	}
	// Each cache gets its own stream from the one seed.
	h.icache = mk(p.IcacheSize, p.IcacheLine, p.IcacheWays, LRU, p.Seed)
	h.dcache = mk(p.DcacheSize, p.DcacheLine, p.DcacheWays, LRU, p.Seed+1)
	h.scache = mk(p.ScacheSize, p.ScacheLine, p.ScacheWays, p.ScacheReplacement, p.Seed+2)
	if p.BcacheSize != 0 {
		h.bcache = mk(p.BcacheSize, p.BcacheLine, p.BcacheWays, LRU, p.Seed+3)
	}
	if err != nil {
		return nil, err
	}
	if h.itb, err = NewTLB(p.ITBEntries, p.TLBReplacement); err != nil {
		return nil, err
	}
	if h.dtb, err = NewTLB(p.DTBEntries, p.TLBReplacement); err != nil {
		return nil, err
	}
	if h.bp, err = NewBranchPredictor(p.BranchEntries); err != nil {
		return nil, err
	}
	if h.rs, err = NewReturnStack(p.ReturnStackDepth); err != nil {
		return nil, err
	}
	if h.wb, err = NewWriteBuffer(p.WriteBufferEntries, p.WriteBufferBlock, p.WriteBufferRetire); err != nil {
		return nil, err
	}
	return h, nil
}

// Params returns the parameters the hierarchy was made with.
func (h *Hierarchy) Params() Params { return h.p }

// SetASN sets the address-space number of the accesses that follow, as a
// context switch loads it. Use GlobalASN while running kernel code, whose
// pages Linux maps in every address space.
func (h *Hierarchy) SetASN(asn uint8) { h.asn = asn }

// ASN returns the current address-space number.
func (h *Hierarchy) ASN() uint8 { return h.asn }

// level is where an access was satisfied beyond the first-level caches.
type level uint8

const (
	inScache level = iota
	inBcache
	inMemory
)

// outer accesses the S-cache and, on a miss, the board cache, allocating
// in both and keeping inclusion, and returns the level that had pa.
func (h *Hierarchy) outer(pa uint64) (level, Events) {
	h.st.ScacheAccesses++
	hit, victim, evicted := h.scache.AccessVictim(pa)
	if evicted {
		h.evictScache(victim)
	}
	if hit {
		return inScache, 0
	}
	h.st.ScacheMisses++
	if h.bcache == nil {
		return inMemory, EvScacheMiss
	}
	h.st.BcacheAccesses++
	hit, victim, evicted = h.bcache.AccessVictim(pa)
	if evicted {
		// The S-cache lines inside the board-cache victim go too, and with
		// them their D-cache lines. (pa's own lines are in another block.)
		for a := victim; a < victim+uint64(h.p.BcacheLine); a += uint64(h.p.ScacheLine) {
			if h.scache.Invalidate(a) {
				h.evictScache(a)
			}
		}
	}
	if hit {
		return inBcache, EvScacheMiss
	}
	h.st.BcacheMisses++
	return inMemory, EvScacheMiss | EvBcacheMiss
}

// evictScache invalidates the D-cache lines inside an S-cache line that
// has left the S-cache.
func (h *Hierarchy) evictScache(line uint64) {
	for a := line; a < line+uint64(h.p.ScacheLine); a += uint64(h.p.DcacheLine) {
		h.dcache.Invalidate(a)
	}
}

// replay returns the stall of an instruction that takes replay traps until
// a resource frees after wait cycles: it is reissued every
// ReplayTrapCycles, so the stall is wait rounded up to a whole number of
// traps.
func (h *Hierarchy) replay(wait uint64) uint64 {
	r := h.p.ReplayTrapCycles
	return (wait + r - 1) / r * r
}

// Fetch models entering the fetch block (an aligned IcacheLine bytes) at
// virtual address vpc, physical address ppc, at cycle: the ITB when the
// page changes, then the I-cache, filled on a miss from the S-cache, the
// board cache or memory. It returns the cycles fetch stalls. An ITB miss
// costs exactly ITBMissCycles, and a DTB miss of Load and Store exactly
// DTBMissCycles, first: hwsim's ground truth tells the TLB's part of a
// stall from the rest by that.
func (h *Hierarchy) Fetch(vpc, ppc, cycle uint64) (stall uint64, ev Events) {
	h.st.Fetches++
	// Only fetches use the ITB and only a page change looks it up, so the
	// page of the previous fetch is still there: a fetch from it would
	// hit, and the lookup is skipped.
	if page := vpc>>h.pageShift + 1; page != h.fetchPage || h.asn != h.fetchASN {
		h.fetchPage, h.fetchASN = page, h.asn
		if k := tlbKey(page-1, h.asn); !h.itb.fastHit(k) && !h.itb.lookup(k) {
			h.st.ITBMisses++
			stall, ev = h.p.ITBMissCycles, EvITBMiss
		}
	}
	if key := vpc | uint64(h.asn)<<56; h.icache.fastHit(key>>h.icache.shift) || h.icache.Access(key) {
		if stall != 0 {
			h.st.StallCycles += stall
		}
		return stall, ev
	}
	h.st.IcacheMisses++
	ev |= EvIcacheMiss
	if h.p.BranchHistoryInIcache {
		h.bp.ForgetBlock(vpc, h.p.IcacheLine)
	}
	lvl, e := h.outer(ppc)
	ev |= e
	switch lvl {
	case inScache:
		stall += h.p.IcacheMissScache
	case inBcache:
		stall += h.p.IcacheMissBcache
	default:
		stall += h.p.IcacheMissMemory
	}
	h.st.StallCycles += stall
	return stall, ev
}

// Load models a load of virtual address va, physical address pa, issuing
// at cycle. It returns stall, the cycles the load's issue is delayed (a
// DTB miss handled in PALcode, replay traps on a full miss address file),
// and latency, the cycles from its issue (cycle + stall) until its value
// can be used. A D-cache miss does not stall by itself: the pipeline goes
// on until an instruction needs the value.
func (h *Hierarchy) Load(va, pa, cycle uint64) (stall, latency uint64, ev Events) {
	h.st.Loads++
	if k := tlbKey(va>>h.pageShift, h.asn); !h.dtb.fastHit(k) && !h.dtb.lookup(k) {
		h.st.DTBMisses++
		stall, ev = h.p.DTBMissCycles, EvDTBMiss
	}
	at := cycle + stall
	blk := pa >> h.dshift
	if h.maf.n > 0 {
		h.maf.advance(at)
		if done, ok := h.maf.find(blk); ok {
			// The block is on its way: wait for the fill.
			h.st.DcacheMisses++
			h.st.LoadsMerged++
			h.st.StallCycles += stall
			return stall, max(done-at, h.p.DcacheLatency), ev | EvDcacheMiss | EvLoadMerged
		}
	}
	if h.dcache.fastHit(pa>>h.dcache.shift) || h.dcache.Access(pa) {
		if stall != 0 {
			h.st.StallCycles += stall
		}
		return stall, h.p.DcacheLatency, ev
	}
	h.st.DcacheMisses++
	ev |= EvDcacheMiss
	if h.maf.full() {
		h.st.MAFFull++
		ev |= EvMAFFull
		r := h.replay(h.maf.earliest() - at)
		stall += r
		at += r
		h.maf.advance(at)
	}
	lvl, e := h.outer(pa)
	ev |= e
	switch lvl {
	case inScache:
		latency = h.p.ScacheLatency
	case inBcache:
		latency = h.p.BcacheLatency
	default:
		latency = h.p.MemoryLatency
	}
	h.maf.add(blk, at+latency)
	h.st.StallCycles += stall
	return stall, latency, ev
}

// Store models a store to virtual address va, physical address pa,
// issuing at cycle, and returns the cycles it stalls: a DTB miss, and
// replay traps while the write buffer is full. The D-cache is
// write-through with no write-allocate: a store that hits updates the
// line's data, which a model of tags need not do, and one that misses
// leaves the D-cache alone. A store that takes a new write-buffer entry
// writes its block into the S-cache (allocating it there, as the
// write-back S-cache does); the write's cost is the buffer's fixed retire
// interval.
func (h *Hierarchy) Store(va, pa, cycle uint64) (stall uint64, ev Events) {
	h.st.Stores++
	if k := tlbKey(va>>h.pageShift, h.asn); !h.dtb.fastHit(k) && !h.dtb.lookup(k) {
		h.st.DTBMisses++
		stall, ev = h.p.DTBMissCycles, EvDTBMiss
	}
	at := cycle + stall
	wait, merged := h.wb.tryStore(pa, at)
	if wait > 0 {
		// Full: the store replays until an entry has been written.
		h.st.WBFull++
		ev |= EvWBFull
		r := h.replay(wait)
		stall += r
		h.wb.insert(pa>>h.wb.shift, at+r)
	}
	if merged {
		h.st.StoresMerged++
		ev |= EvStoreMerged
	} else {
		_, e := h.outer(pa)
		ev |= e
	}
	if stall != 0 {
		h.st.StallCycles += stall
	}
	return stall, ev
}

// Barrier models MB at cycle: it waits until the write buffer has been
// written and every outstanding load fill has completed, and returns the
// cycles that takes.
func (h *Hierarchy) Barrier(cycle uint64) (stall uint64) {
	h.st.Barriers++
	stall = max(h.wb.Drain(cycle), h.maf.drain(cycle))
	h.st.StallCycles += stall
	return stall
}

// WriteBarrier models WMB: stores after it do not merge with stores before
// it. It does not stall.
func (h *Hierarchy) WriteBarrier() { h.wb.Fence() }

// Branch resolves the conditional branch at pc, whose taken target is
// target, and returns MispredictPenalty if the predictor had it wrong.
func (h *Hierarchy) Branch(pc, target uint64, taken bool) (penalty uint64, ev Events) {
	h.st.Branches++
	if h.bp.Resolve(pc, target, taken) {
		h.st.BranchMispredicts++
		h.st.StallCycles += h.p.MispredictPenalty
		return h.p.MispredictPenalty, EvBranchMispredict
	}
	return 0, 0
}

// Jump resolves JMP or JSR at pc that went to target, predicted from the
// instruction's 14-bit hint, which by the Alpha Architecture Handbook's
// convention holds target<15:2> (the rest comes from pc+4). Assumption:
// the 21164 predicts computed jumps this way; gcc fills the hint when it
// knows the target. For JSR, Call the return address as well.
func (h *Hierarchy) Jump(pc uint64, hint uint16, target uint64) (penalty uint64, ev Events) {
	h.st.Jumps++
	predicted := (pc+4)&^0xffff | uint64(hint&0x3fff)<<2
	if predicted != target {
		h.st.JumpMispredicts++
		h.st.StallCycles += h.p.MispredictPenalty
		return h.p.MispredictPenalty, EvPCMispredict
	}
	return 0, 0
}

// Call pushes the return address of JSR or BSR onto the return stack.
func (h *Hierarchy) Call(ret uint64) { h.rs.Push(ret) }

// Return resolves RET (or the return half of JSR_COROUTINE) that went to
// target, predicted by the return stack.
func (h *Hierarchy) Return(target uint64) (penalty uint64, ev Events) {
	h.st.Returns++
	if predicted, ok := h.rs.Pop(); !ok || predicted != target {
		h.st.ReturnMispredicts++
		h.st.StallCycles += h.p.MispredictPenalty
		return h.p.MispredictPenalty, EvPCMispredict
	}
	return 0, 0
}

// FlushIcache empties the I-cache (IMB).
func (h *Hierarchy) FlushIcache() { h.icache.InvalidateAll() }

// FlushASN forgets the translations of address space asn, as when the
// operating system gives the ASN to another process, and empties the
// I-cache, whose lines are tagged with ASNs.
func (h *Hierarchy) FlushASN(asn uint8) {
	h.itb.FlushASN(asn)
	h.dtb.FlushASN(asn)
	h.icache.InvalidateAll()
	h.fetchPage = 0
}

// Flush forgets everything tied to an address space: both TLBs, the
// I-cache and the return stack, for a context switch the ASNs do not
// cover. The physical caches, the write buffer, the outstanding misses and
// the branch history stay, as on the hardware.
func (h *Hierarchy) Flush() {
	h.itb.Flush()
	h.dtb.Flush()
	h.icache.InvalidateAll()
	h.rs.Reset()
	h.fetchPage = 0
}

// Stats returns the counts since the hierarchy was made.
func (h *Hierarchy) Stats() Stats { return h.st }

// String describes the configuration in one line.
func (h *Hierarchy) String() string {
	p := &h.p
	b := "none"
	if p.BcacheSize != 0 {
		b = fmt.Sprintf("%dKB/%dB/%d-way %dc", p.BcacheSize>>10, p.BcacheLine, p.BcacheWays, p.BcacheLatency)
	}
	return fmt.Sprintf("21164 timing at %d MHz: I %dKB, D %dKB %dc, S %dKB/%dB/%d-way %v %dc, B %s, mem %dc, ITB %d, DTB %d",
		p.ClockMHz, p.IcacheSize>>10, p.DcacheSize>>10, p.DcacheLatency,
		p.ScacheSize>>10, p.ScacheLine, p.ScacheWays, p.ScacheReplacement, p.ScacheLatency,
		b, p.MemoryLatency, p.ITBEntries, p.DTBEntries)
}
