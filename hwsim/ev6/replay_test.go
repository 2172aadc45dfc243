package ev6

import "testing"

// A load issued before an older store to its quadword takes an order trap
// when the store issues (HRM §2): it and everything younger are fetched
// again, and its store-wait bit makes it wait for older stores from then
// on, until the table is cleared. Here the store's data comes from a
// multiply, so the load, whose address is ready, would issue first.
func TestOrderTrap(t *testing.T) {
	body := []uint32{
		mulq(1, 1, 1),
		stq(1, 4, 0),
		ldq(3, 4, 0),
		addqLit(3, 1, 3),
	}
	setup := func(m *machine) { m.cpu.R[1], m.core.Stages = 3, NewStageTruth() }
	p := DefaultParams()
	learned, m := perIteration(t, p, setup, 1000, body...)
	s := m.core.Stats()
	if s.OrderTraps == 0 {
		t.Fatalf("no order trap: the load issued ahead of the store and was never caught")
	}
	if limit := s.Cycles/uint64(p.StoreWaitClear) + 1; s.OrderTraps > limit {
		t.Errorf("%d order traps in %d cycles, want at most one per store-wait clearing interval (%d)", s.OrderTraps, s.Cycles, limit)
	}
	replayed := uint64(0)
	for _, e := range m.core.Stages.PCs {
		replayed += e.Replayed
	}
	if replayed != s.OrderTraps+s.DTBMisses {
		t.Errorf("stage truth replays %d, order traps %d and DTB misses %d", replayed, s.OrderTraps, s.DTBMisses)
	}

	// With the table cleared every cycle the bit never holds: every load
	// traps, and is issued again the abort penalty and the cycle to the
	// refetched load's issue after the store (HRM Table 2-1's penalties
	// count as the mispredict's do: a branch issues again, here the load,
	// penalty + 1 cycles after the trap).
	p.StoreWaitClear = 1
	m = newMachine(t, p, loop(setupCode, 200, body...), dataSize)
	setup(m)
	var storeIssue uint64
	var gaps []uint64
	m.core.SetObserver(func(r Record) {
		if !r.Retired {
			return // the wrong path after the loop's last branch
		}
		switch r.PC - codeBase {
		case 4 * uint64(len(setupCode)+2+1): // the stq (after setup, the two counter instructions, mulq)
			storeIssue = r.Issue
		case 4 * uint64(len(setupCode)+2+2):
			gaps = append(gaps, r.Issue-storeIssue)
		}
	})
	trapping := float64(m.run(t))
	if s := m.core.Stats(); s.OrderTraps < 199 {
		t.Errorf("%d order traps in 200 iterations, want one each", s.OrderTraps)
	}
	if len(gaps) != 200 {
		t.Fatalf("%d loads observed, want 200", len(gaps))
	}
	for i, g := range gaps[1:] {
		if g != uint64(p.OrderTrapCycles+1) {
			t.Fatalf("iteration %d: load issued %d cycles after its store, want %d", i+1, g, p.OrderTrapCycles+1)
		}
	}
	if trapping/200 <= learned {
		t.Errorf("trapping every iteration took %.1f cycles an iteration, learned %.1f", trapping/200, learned)
	}
}

// A load to a page the DTB does not hold traps to PALcode, which fills
// the DTB, and the load is fetched again: the abort penalty (HRM Table
// 2-1), the fill, and the refetched load's way to issue.
func TestDTBMiss(t *testing.T) {
	const step = 8192 + 64 // a new page every load, and a new D-cache set
	body := []uint32{
		ldq(5, 4, 0),
		lda(4, 4, step),
	}
	const n = 200 // 400 pages: more than the DTB's 128
	warm := func(p Params) func(m *machine) {
		return func(m *machine) {
			for i := range 2 * n {
				a := dataBase + uint64(i)*step
				m.core.dcache.Access(mustPhys(t, m, a))
				if p.DTBEntries > 2*n {
					m.core.dtb.Lookup(a>>m.core.pageShift, m.core.asn(a))
				}
			}
		}
	}
	p := DefaultParams()
	missing, m := perIteration(t, p, warm(p), n, body...)
	if s := m.core.Stats(); s.DTBMisses < 2*n {
		t.Errorf("%d DTB misses, want one per load (%d)", s.DTBMisses, 2*n)
	}
	p.DTBEntries = 1024
	held, m := perIteration(t, p, warm(p), n, body...)
	if s := m.core.Stats(); s.DTBMisses != 0 {
		t.Errorf("%d DTB misses with every page held", s.DTBMisses)
	}
	within(t, "cycles a DTB miss adds", missing-held, float64(p.DTBMissCycles+1+p.TLBFillCycles), 0.1)
}

// Fetch from a page the ITB does not hold waits for the PALcode fill: the
// abort penalty (HRM Table 2-1) and the fill, once per page.
func TestITBMiss(t *testing.T) {
	const pages, words = 200, 8192 / 4 // a br at the start of each page to the next
	code := func(n int) []uint32 {
		c := make([]uint32, pages*words)
		for i := range c {
			c[i] = bis(31, 31, 31)
		}
		c[0], c[1] = lda(2, 31, int16(n)), br(0x30, 31, words-2) // r2 = n; br to page 1
		for p := 1; p < pages-1; p++ {
			c[p*words] = br(0x30, 31, words-1)
		}
		last := (pages - 1) * words
		c[last] = subqLit(2, 1, 2)
		c[last+1] = bne(2, last+1, words) // back to page 1
		c[last+2] = 0x83                  // callsys
		return c
	}
	cycles := func(p Params, n int) (uint64, Stats) {
		m := newMachine(t, p, code(n), 0)
		c := m.run(t)
		return c, m.core.Stats()
	}
	p := DefaultParams()
	a, _ := cycles(p, 10)
	b, s := cycles(p, 20)
	if s.ITBMisses < 20*(pages-1) {
		t.Errorf("%d ITB misses, want one per page fetched (%d)", s.ITBMisses, 20*(pages-1))
	}
	p.ITBEntries = 1024
	c, _ := cycles(p, 10)
	d, s := cycles(p, 20)
	if s.ITBMisses > pages {
		t.Errorf("%d ITB misses with every page held, want the first lap's only", s.ITBMisses)
	}
	perPage := (float64(b-a) - float64(d-c)) / (10 * (pages - 1))
	within(t, "cycles an ITB miss adds", perPage, float64(p.ITBMissCycles+p.TLBFillCycles), 0.1)
}
