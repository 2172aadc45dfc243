package timing

import (
	"math/rand/v2"
	"testing"

	"dcpi/internal/testrand"
)

func newTestHierarchy(t testing.TB, change func(*Params)) *Hierarchy {
	t.Helper()
	p := DefaultParams()
	if change != nil {
		change(&p)
	}
	h, err := NewHierarchy(p)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// loadStep is a load and what it should see; the virtual and physical
// addresses are equal.
type loadStep struct {
	addr, cycle    uint64
	stall, latency uint64
	ev             Events
}

func runLoads(t *testing.T, h *Hierarchy, steps []loadStep) {
	t.Helper()
	for i, s := range steps {
		stall, lat, ev := h.Load(s.addr, s.addr, s.cycle)
		if stall != s.stall || lat != s.latency || ev != s.ev {
			t.Fatalf("step %d: load %#x at %d = stall %d, latency %d, %v; want %d, %d, %v",
				i, s.addr, s.cycle, stall, lat, ev, s.stall, s.latency, s.ev)
		}
	}
}

func TestLoadLevels(t *testing.T) {
	h := newTestHierarchy(t, nil)
	const all = EvDcacheMiss | EvScacheMiss | EvBcacheMiss
	runLoads(t, h, []loadStep{
		// Cold: DTB miss (35 cycles before the load issues), then memory
		// (142); the fill completes at 35+142 = 177.
		{0x20000, 0, 35, 142, EvDTBMiss | all},
		// The same block while the fill is outstanding: merges and waits.
		{0x20008, 40, 0, 137, EvDcacheMiss | EvLoadMerged},
		// After the fill: a D-cache hit.
		{0x20010, 200, 0, 2, 0},
		// 8 KB away: a new page, and the same D-cache line, evicted.
		{0x22000, 300, 35, 142, EvDTBMiss | all},
		// The first block again: out of the D-cache, still in the S-cache.
		{0x20000, 600, 0, 8, EvDcacheMiss},
		{0x20018, 603, 0, 5, EvDcacheMiss | EvLoadMerged},
		{0x20018, 608, 0, 2, 0},
	})
	s := h.Stats()
	if s.Loads != 7 || s.DcacheMisses != 5 || s.LoadsMerged != 2 || s.DTBMisses != 2 ||
		s.ScacheAccesses != 3 || s.ScacheMisses != 2 || s.BcacheMisses != 2 {
		t.Errorf("stats %+v", s)
	}
}

func TestInclusion(t *testing.T) {
	// LRU in the S-cache so that the victim is known.
	h := newTestHierarchy(t, func(p *Params) { p.ScacheReplacement = LRU })
	// Four lines in one S-cache set (32 KB apart). Stores allocate in the
	// S-cache but not the D-cache, so after a0 is loaded, three stores
	// push it out of the S-cache while nothing touches its D-cache line.
	// Inclusion must take it out of the D-cache too.
	const a0, a1, a2, a3 = 0x40000, 0x48000, 0x50000, 0x58000
	h.Load(a0, a0, 0)
	if _, lat, _ := h.Load(a0, a0, 1000); lat != 2 {
		t.Fatalf("a0 not in the D-cache: latency %d", lat)
	}
	for i, a := range []uint64{a1, a2, a3} {
		h.Store(a, a, 2000+uint64(i)*1000)
	}
	stall, lat, ev := h.Load(a0, a0, 5000)
	if stall != 0 || lat != 30 || ev != EvDcacheMiss|EvScacheMiss {
		t.Errorf("a0 after leaving the S-cache: stall %d, latency %d, %v; want a board-cache hit (30)", stall, lat, ev)
	}

	// A board-cache victim leaves the S-cache and D-cache: b0 and b1 are 4
	// MB apart, the same board-cache line; a store to b1 evicts b0.
	const b0, b1 = 0x100000, 0x500000
	h.Load(b0, b0, 10000)
	h.Store(b1, b1, 11000)
	_, lat, ev = h.Load(b0, b0, 12000)
	if lat != 142 || ev != EvDcacheMiss|EvScacheMiss|EvBcacheMiss {
		t.Errorf("b0 after leaving the board cache: latency %d, %v; want memory (142)", lat, ev)
	}
}

func TestMAFFull(t *testing.T) {
	h := newTestHierarchy(t, nil)
	const page = 0x200000
	h.Load(page+0x1fc0, page+0x1fc0, 0) // fills the DTB; done by 177
	// Six misses to different S-cache lines of the page at cycle 1000 fill
	// the miss address file until 1142.
	for k := uint64(1); k <= 6; k++ {
		if stall, lat, _ := h.Load(page+k*64, page+k*64, 1000); stall != 0 || lat != 142 {
			t.Fatalf("miss %d: stall %d latency %d", k, stall, lat)
		}
	}
	// The seventh replays every 5 cycles until an entry frees at 1142:
	// 141 cycles of waiting is 29 traps, 145 cycles.
	stall, lat, ev := h.Load(page+7*64, page+7*64, 1001)
	if stall != 145 || lat != 142 || ev != EvDcacheMiss|EvScacheMiss|EvBcacheMiss|EvMAFFull {
		t.Errorf("7th miss: stall %d, latency %d, %v; want 145, 142, MAF full", stall, lat, ev)
	}
	// A hit does not need the miss address file.
	if stall, lat, _ := h.Load(page+0x1fc0, page+0x1fc0, 1002); stall != 0 || lat != 2 {
		t.Errorf("hit with the MAF full: stall %d latency %d", stall, lat)
	}
	// MB waits for the outstanding fills: the last completes at 1146+142.
	if got := h.Barrier(1200); got != 1288-1200 {
		t.Errorf("Barrier = %d, want %d", got, 1288-1200)
	}
}

func TestStores(t *testing.T) {
	h := newTestHierarchy(t, nil)
	const page = 0x300000
	if stall, ev := h.Store(page, page, 0); stall != 35 || !ev.Has(EvDTBMiss) {
		t.Fatalf("cold store: stall %d, %v", stall, ev)
	}
	// Six blocks at 1000: written at 1004, 1008, ... 1024.
	for k := uint64(1); k <= 6; k++ {
		if stall, ev := h.Store(page+k*32, page+k*32, 1000); stall != 0 || ev.Has(EvWBFull) {
			t.Fatalf("store %d: stall %d, %v", k, stall, ev)
		}
	}
	// The seventh waits 3 cycles for the first entry: one replay trap, 5.
	stall, ev := h.Store(page+7*32, page+7*32, 1001)
	if stall != 5 || !ev.Has(EvWBFull) {
		t.Errorf("7th store: stall %d, %v; want 5 and a full write buffer", stall, ev)
	}
	// A store to a block in the buffer merges, full or not.
	if stall, ev := h.Store(page+3*32+8, page+3*32+8, 1006); stall != 0 || ev != EvStoreMerged {
		t.Errorf("merging store: stall %d, %v", stall, ev)
	}
	// The seventh entry started at 1024, when the sixth was written, and
	// is written at 1028: MB at 1010 waits 18.
	if got := h.Barrier(1010); got != 18 {
		t.Errorf("Barrier = %d, want 18", got)
	}
	// WMB: the next store to the same block takes a new entry.
	h.Store(page+32, page+32, 2000)
	h.WriteBarrier()
	if _, ev := h.Store(page+40, page+40, 2001); ev.Has(EvStoreMerged) {
		t.Error("merged across WMB")
	}
	s := h.Stats()
	if s.Stores != 11 || s.WBFull != 1 || s.StoresMerged != 1 || s.Barriers != 1 || s.DTBMisses != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestFetch(t *testing.T) {
	h := newTestHierarchy(t, nil)
	steps := []struct {
		pc, cycle uint64
		asn       uint8
		op        string // done before the fetch
		stall     uint64
		ev        Events
	}{
		{0x10000, 0, 0, "", 35 + 140, EvITBMiss | EvIcacheMiss | EvScacheMiss | EvBcacheMiss},
		{0x10020, 200, 0, "", 6, EvIcacheMiss}, // same page, same 64-byte S-cache line
		{0x10000, 300, 0, "", 0, 0},
		// Another address space: the ITB and the I-cache are tagged with
		// the ASN; the S-cache is physical.
		{0x10000, 400, 2, "", 35 + 6, EvITBMiss | EvIcacheMiss},
		// Back: the ITB still has ASN 0's page, but ASN 2's line took the
		// direct-mapped I-cache slot.
		{0x10000, 500, 0, "", 6, EvIcacheMiss},
		{0x10020, 600, 0, "imb", 6, EvIcacheMiss},
		{0x10000, 700, 0, "flush", 35 + 6, EvITBMiss | EvIcacheMiss},
		// 8 KB away: a new page and a conflict in the I-cache.
		{0x12000, 800, 0, "", 35 + 140, EvITBMiss | EvIcacheMiss | EvScacheMiss | EvBcacheMiss},
		{0x10000, 900, 0, "", 6, EvIcacheMiss},
	}
	for i, s := range steps {
		switch s.op {
		case "imb":
			h.FlushIcache()
		case "flush":
			h.Flush()
		}
		h.SetASN(s.asn)
		stall, ev := h.Fetch(s.pc, s.pc, s.cycle)
		if stall != s.stall || ev != s.ev {
			t.Fatalf("step %d: fetch %#x = %d, %v; want %d, %v", i, s.pc, stall, ev, s.stall, s.ev)
		}
	}
	if st := h.Stats(); st.Fetches != 9 || st.IcacheMisses != 8 || st.ITBMisses != 4 {
		t.Errorf("stats %+v", st)
	}
}

func TestBranchHistoryInIcache(t *testing.T) {
	for _, inIcache := range []bool{true, false} {
		h := newTestHierarchy(t, func(p *Params) { p.BranchHistoryInIcache = inIcache })
		h.Fetch(0x10000, 0x10000, 0)
		// A forward branch, taken: the first is mispredicted, then it is
		// learnt.
		if pen, ev := h.Branch(0x10010, 0x10100, true); pen != 5 || ev != EvBranchMispredict {
			t.Fatalf("first branch: %d, %v", pen, ev)
		}
		if pen, _ := h.Branch(0x10010, 0x10100, true); pen != 0 {
			t.Fatal("trained branch mispredicted")
		}
		// Refilling the line loses history kept in the I-cache.
		h.FlushIcache()
		h.Fetch(0x10000, 0x10000, 100)
		pen, _ := h.Branch(0x10010, 0x10100, true)
		if want := inIcache; (pen != 0) != want {
			t.Errorf("history in I-cache %v: after a refill the branch mispredicted = %v", inIcache, pen != 0)
		}
	}
}

func TestReturnsAndJumps(t *testing.T) {
	h := newTestHierarchy(t, nil)
	h.Call(0x1004)
	h.Call(0x2008)
	if pen, ev := h.Return(0x2008); pen != 0 || ev != 0 {
		t.Errorf("predicted return: %d, %v", pen, ev)
	}
	if pen, ev := h.Return(0x9999); pen != 5 || ev != EvPCMispredict {
		t.Errorf("wrong return: %d, %v", pen, ev)
	}
	if pen, ev := h.Return(0x1004); pen != 5 || ev != EvPCMispredict {
		t.Errorf("return on an empty stack: %d, %v", pen, ev)
	}
	const pc, target = 0x120001000, 0x120003450
	hint := uint16(target >> 2 & 0x3fff)
	if pen, _ := h.Jump(pc, hint, target); pen != 0 {
		t.Error("jump with the right hint mispredicted")
	}
	if pen, ev := h.Jump(pc, hint+1, target); pen != 5 || ev != EvPCMispredict {
		t.Errorf("jump with a wrong hint: %d, %v", pen, ev)
	}
	if pen, _ := h.Jump(pc, hint, target+0x10000); pen != 5 {
		t.Error("jump to another 64 KB region predicted from the hint alone")
	}
	s := h.Stats()
	if s.Returns != 3 || s.ReturnMispredicts != 2 || s.Jumps != 3 || s.JumpMispredicts != 2 {
		t.Errorf("stats %+v", s)
	}
}

// TestHierarchyDeterministic runs the same random stream of operations on
// two hierarchies with random S-cache replacement and checks they agree at
// every step, and that the Stats agree with the events returned.
func TestHierarchyDeterministic(t *testing.T) {
	seed := testrand.Seed(t)
	mk := func() *Hierarchy {
		return newTestHierarchy(t, func(p *Params) { p.Seed = seed; p.BcacheSize = 256 << 10 })
	}
	a, b := mk(), mk()
	r := rand.New(rand.NewPCG(seed, 99))
	var count [numEvents]uint64
	var stalls uint64
	cycle := uint64(0)
	for step := range 300_000 {
		cycle += uint64(r.IntN(4))
		addr := r.Uint64N(1<<21) &^ 7
		if r.IntN(2) == 0 {
			addr &= 1<<12 - 1 // a hot 4 KB: hits and merges
		}
		var x, y [3]uint64
		var ex, ey Events
		switch k := r.IntN(100); {
		case k < 40:
			x[0], x[1], ex = a.Load(addr, addr, cycle)
			y[0], y[1], ey = b.Load(addr, addr, cycle)
			stalls += x[0]
		case k < 60:
			x[0], ex = a.Store(addr, addr, cycle)
			y[0], ey = b.Store(addr, addr, cycle)
			stalls += x[0]
		case k < 85:
			pc := addr &^ 31 & (1<<16 - 1)
			x[0], ex = a.Fetch(pc, pc, cycle)
			y[0], ey = b.Fetch(pc, pc, cycle)
			stalls += x[0]
		case k < 98:
			pc := addr & (1<<12 - 1) &^ 3
			taken := r.IntN(3) > 0
			x[0], ex = a.Branch(pc, pc-64, taken)
			y[0], ey = b.Branch(pc, pc-64, taken)
			stalls += x[0]
		case k < 99:
			asn := uint8(r.IntN(4))
			a.SetASN(asn)
			b.SetASN(asn)
		default:
			x[0] = a.Barrier(cycle)
			y[0] = b.Barrier(cycle)
			stalls += x[0]
		}
		if x != y || ex != ey {
			t.Fatalf("step %d: %v %v, %v %v", step, x, ex, y, ey)
		}
		for i := range numEvents {
			if ex&(1<<i) != 0 {
				count[i]++
			}
		}
	}
	s := a.Stats()
	checks := []struct {
		name      string
		stat, evs uint64
	}{
		{"IcacheMisses", s.IcacheMisses, count[0]},
		{"ITBMisses", s.ITBMisses, count[1]},
		{"DcacheMisses", s.DcacheMisses, count[2]},
		{"DTBMisses", s.DTBMisses, count[3]},
		{"ScacheMisses", s.ScacheMisses, count[4]},
		{"BcacheMisses", s.BcacheMisses, count[5]},
		{"LoadsMerged", s.LoadsMerged, count[6]},
		{"MAFFull", s.MAFFull, count[7]},
		{"StoresMerged", s.StoresMerged, count[8]},
		{"WBFull", s.WBFull, count[9]},
		{"BranchMispredicts", s.BranchMispredicts, count[10]},
		{"StallCycles", s.StallCycles, stalls},
	}
	for _, c := range checks {
		if c.stat != c.evs {
			t.Errorf("Stats.%s = %d, events say %d", c.name, c.stat, c.evs)
		}
		if c.evs == 0 && c.name != "ITBMisses" {
			t.Errorf("no %s in the random run: the stream does not exercise it", c.name)
		}
	}
}

func TestNoAllocations(t *testing.T) {
	h := newTestHierarchy(t, nil)
	cycle := uint64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		cycle += 3
		a := cycle * 40 & (1<<22 - 1)
		h.Fetch(a&^31, a&^31, cycle)
		h.Load(a, a, cycle)
		h.Store(a+8, a+8, cycle)
		h.Branch(a, a-8, cycle&1 == 0)
		h.Call(a)
		h.Return(a)
		h.Barrier(cycle)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per run", allocs)
	}
}
