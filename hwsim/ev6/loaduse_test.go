package ev6

import "testing"

// Load hit speculation (HRM §2.7.1). The loops below chase a ring of
// pointers whose every load misses the D-cache (ldq r5, 0(r5)) and load
// a hot quadword that always hits (ldq rN, 0(r4)). The expectations are
// worked from the manual's rules, not from the model: the 4-bit counter
// starts at 15 (the model's assumption), goes up 1 on a hit and down 2
// on a miss; while its upper bit is set an integer load opens a 2-cycle
// window LatLoad cycles after its issue, and a miss aborts every
// IQ-issued instruction issued in it; while it is clear the load's
// latency is 5 and there is no window.

const (
	ringBase   = dataBase + 4096 // the hot quadword is at dataBase
	ringStride = 64 * 17         // a new line every load, sets spread
	ringLines  = 1000
	loopTop    = 4 // the loop's first instruction: after setupCode and the counter's two, aligned
)

// ringSetup points r5 at a ring of ringLines lines, puts the ring's and the
// hot line's pages in the DTB (no DTB traps: TestDTBMiss times those) and
// the hot line in the D-cache, and collects stage truth.
func ringSetup(t *testing.T) func(*machine) {
	return func(m *machine) {
		for i := range ringLines {
			a := ringBase + uint64(i)*ringStride
			m.writeQuads(t, a, []uint64{ringBase + uint64((i+1)%ringLines)*ringStride})
			m.core.dtb.Lookup(a>>m.core.pageShift, m.core.asn(a))
		}
		m.core.dtb.Lookup(dataBase>>m.core.pageShift, m.core.asn(dataBase))
		m.core.dcache.Access(mustPhys(t, m, dataBase))
		m.cpu.R[5] = ringBase
		m.core.Stages = NewStageTruth()
	}
}

func ringParams() Params {
	p := DefaultParams()
	p.DTBEntries = 512 // holds the ring's pages
	return p
}

// runRing runs body n times around the ring, calling see with every
// retired instruction's record (its index in body and the iteration).
func runRing(t *testing.T, p Params, n int, see func(r Record, idx, iter int), body ...uint32) *machine {
	t.Helper()
	m := newMachine(t, p, loop(setupCode, n, body...), dataSize)
	ringSetup(t)(m)
	iter := 0
	m.core.SetObserver(func(r Record) {
		if !r.Retired || r.PC < codeBase+4*loopTop {
			return
		}
		idx := int(r.PC-codeBase)/4 - loopTop
		if idx < len(body) && see != nil {
			see(r, idx, iter)
		}
		if idx == len(body)+1 { // the bne
			iter++
		}
	})
	m.run(t)
	return m
}

func specAbortedAt(m *machine, idx int) uint64 {
	if e := m.core.Stages.PCs[codeBase+4*uint64(loopTop+idx)]; e != nil {
		return e.SpecAborted
	}
	return 0
}

// checkAbortTotals checks that the stage truth's aborted issues add up to
// the core's count.
func checkAbortTotals(t *testing.T, m *machine) {
	t.Helper()
	var sum uint64
	for _, e := range m.core.Stages.PCs {
		sum += e.SpecAborted
	}
	if s := m.core.Stats(); sum != s.SpecAborts {
		t.Errorf("stage truth counts %d aborted issues, the core %d", sum, s.SpecAborts)
	}
}

// Every load misses: the counter falls 15, 13, 11, 9, 7 and stays low, so
// only the first four misses open a window, each aborting the next chase
// load, which issues in it for a hit's data — but the first one's closes
// before that load is even fetched (the loop's first taken branch is not
// yet predicted: fetch waits for it), so 3 aborts; from then on the loads
// run at the miss latency with nothing aborted, however long the loop.
func TestLoadUseAlwaysMiss(t *testing.T) {
	body := []uint32{ldq(5, 5, 0)}
	short := runRing(t, ringParams(), 200, nil, body...)
	long := runRing(t, ringParams(), 400, nil, body...)
	if got := specAbortedAt(long, 0); got != 3 {
		t.Errorf("the chase load's issue aborted %d times, want 3 (the misses at counter 13, 11, 9)", got)
	}
	if a, b := short.core.Stats().SpecAborts, long.core.Stats().SpecAborts; a != b || a < 3 {
		t.Errorf("aborted issues: %d in 200 iterations, %d in 400: want the same, at least 3 (none once the counter is low)", a, b)
	}
	if long.core.loadUse != 0 {
		t.Errorf("load-use counter %d after 400 misses, want 0", long.core.loadUse)
	}
	checkAbortTotals(t, long)
}

// Every load hits: the counter stays saturated, the latency is the HRM's
// 3 cycles (16 dependent loads: 48 cycles an iteration), nothing aborts.
func TestLoadUseAlwaysHit(t *testing.T) {
	body := make([]uint32, 16)
	for i := range body {
		body[i] = ldq(4, 4, 0) // the hot quadword points at itself
	}
	setup := func(m *machine) {
		m.writeQuads(t, dataBase, []uint64{dataBase})
		ringSetup(t)(m)
	}
	got, m := perIteration(t, ringParams(), setup, 500, body...)
	within(t, "cycles per iteration of 16 dependent hits", got, 48, 0.01)
	if s := m.core.Stats(); s.SpecAborts != 0 || s.DCacheMisses > 2 {
		t.Errorf("%d aborted issues and %d D-cache misses, want none", s.SpecAborts, s.DCacheMisses)
	}
	if m.core.loadUse != 15 {
		t.Errorf("load-use counter %d, want 15 (saturated)", m.core.loadUse)
	}
}

// A hit and a miss alternate: the counter goes 15 → 13 → 14 → 12 ... down
// by one an iteration. The hot load is issued for 3 cycles while the
// counter's upper bit is set before it (iterations 0-6: 15, 13, 12, 11,
// 10, 9, 8) and for 5 from iteration 7 on (counter 7, then never above
// 1); the misses of iterations 0-7 (counter 15 ... 8 before them) open
// windows, each aborting the next chase load once, except iteration 0's,
// which closes before that load is fetched (as in TestLoadUseAlwaysMiss):
// 7 aborts in all.
func TestLoadUseAlternating(t *testing.T) {
	body := []uint32{ldq(6, 4, 0), ldq(5, 5, 0)}
	var lat []uint64
	m := runRing(t, ringParams(), 300, func(r Record, idx, iter int) {
		if idx == 0 {
			lat = append(lat, r.Done-r.Issue)
		}
	}, body...)
	if len(lat) != 300 {
		t.Fatalf("%d hot loads observed, want 300", len(lat))
	}
	for i, l := range lat {
		want := uint64(3)
		if i >= 7 {
			want = 5
		}
		if l != want {
			t.Errorf("iteration %d: hot load's latency %d, want %d", i, l, want)
			break
		}
	}
	if got := specAbortedAt(m, 1); got != 7 {
		t.Errorf("the chase load's issue aborted %d times, want 7", got)
	}
	checkAbortTotals(t, m)
}

// Two hits and a miss an iteration keep the counter high (+1 +1 -2), so
// every miss opens a window. In it the next chase load, which uses the
// missed data, and an instruction that does not — the third of a chain
// of adds started beside the load, due 3 cycles after it — issue and are
// aborted; the add issues again after the window, 5 cycles after the
// load, and the aborted issues are counted.
func TestLoadUseMissAbortsTheWindow(t *testing.T) {
	body := []uint32{
		ldq(6, 4, 0), ldq(7, 4, 8),
		bis(5, 5, 9), // r9 = the chase pointer, ready with the load's
		ldq(5, 5, 0), // the miss
		addqLit(9, 1, 9), addqLit(9, 1, 9),
		addqLit(9, 1, 9), // independent of the load, due at its issue + 3
	}
	const n = 300
	measure := func(p Params) (gaps map[uint64]int, m *machine) {
		gaps = map[uint64]int{}
		var load uint64
		m = runRing(t, p, n, func(r Record, idx, iter int) {
			switch {
			case iter < 10: // the counter settles
			case idx == 3:
				load = r.Issue
			case idx == 6:
				gaps[r.Issue-load]++
			}
		}, body...)
		return gaps, m
	}
	gaps, m := measure(ringParams())
	t.Logf("third add at the load's issue + cycles: iterations %v", gaps)
	if gaps[5] < (n-10)*9/10 {
		t.Errorf("third add issued at the load's issue + %v (cycles: iterations), want + 5 in nearly all", gaps)
	}
	if got := specAbortedAt(m, 3); got < (n-1)*9/10 {
		t.Errorf("the chase load's issue aborted %d times in %d iterations, want nearly every one", got, n)
	}
	if got := specAbortedAt(m, 6); got < (n-10)*9/10 {
		t.Errorf("the independent add's issue aborted %d times in %d iterations, want nearly every one", got, n)
	}
	if m.core.loadUse < 8 {
		t.Errorf("load-use counter %d, want its upper bit set", m.core.loadUse)
	}
	checkAbortTotals(t, m)

	// Without the window the add issues when its operand is ready.
	p := ringParams()
	p.LoadSpecWindow = 0
	gaps, m = measure(p)
	if gaps[3] < (n-10)*9/10 || m.core.Stats().SpecAborts != 0 {
		t.Errorf("without the window: add at the load's issue + %v, %d aborts; want + 3, none", gaps, m.core.Stats().SpecAborts)
	}
}

// An FP load's window is one cycle and aborts only its users (HRM
// §2.7.1): with the FP loads missing, an addt using the loaded value is
// aborted once per miss; the counter moves for FP loads too (assumption).
func TestLoadUseFPWindowAbortsUsersOnly(t *testing.T) {
	ldt := func(ra, rb uint32, d int16) uint32 { return mem(0x23, ra, rb, d) }
	addt := func(ra, rb, rc uint32) uint32 { return op(0x16, 0x0a0, ra, rb, rc) }
	body := []uint32{
		ldq(6, 4, 0), ldq(7, 4, 8), // two hits: the counter stays high
		ldt(1, 5, 8),  // misses: the ring line's second quadword
		ldq(5, 5, 0),  // the chase
		addt(1, 1, 2), // uses the FP load
		addt(3, 3, 3), // does not
	}
	m := runRing(t, ringParams(), 200, nil, body...)
	if got := specAbortedAt(m, 4); got < 190 {
		t.Errorf("the FP load's user aborted %d times in 200 iterations, want one a miss", got)
	}
	if got := specAbortedAt(m, 5); got != 0 {
		t.Errorf("the independent addt aborted %d times, want 0 (an FP window aborts only users)", got)
	}
	checkAbortTotals(t, m)
}

func TestLoadUseParamsValidate(t *testing.T) {
	for name, f := range map[string]func(*Params){
		"counter bits":   func(p *Params) { p.LoadUseCounterBits = 0 },
		"counter start":  func(p *Params) { p.LoadUseCounterInit = 16 },
		"window":         func(p *Params) { p.LoadSpecWindow = -1 },
		"latency":        func(p *Params) { p.LatLoadNoSpec = 2 },
		"miss decrement": func(p *Params) { p.LoadUseMissDec = -2 },
	} {
		p := DefaultParams()
		f(&p)
		if err := p.Validate(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
