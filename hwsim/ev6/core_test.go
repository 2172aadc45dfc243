package ev6

import (
	"testing"

	"dcpi/hwsim/alpha"
)

// The microbenchmarks below have answers known from the published
// parameters alone; a model that got the pipeline wrong gets them wrong.

// A chain of dependent adds runs at one a cycle (iadd latency 1, HRM
// Table 2-4), the loop's own instructions hidden beside it.
func TestDependentAddChain(t *testing.T) {
	body := make([]uint32, 16)
	for i := range body {
		body[i] = addqLit(1, 1, 1)
	}
	got, _ := perIteration(t, DefaultParams(), nil, 2000, body...)
	within(t, "cycles per iteration of 16 dependent adds", got, 16, 0.05)
}

// A chain of dependent multiplies runs at one per 7 cycles (imul latency
// 7, HRM Table 2-4).
func TestDependentMultiplyChain(t *testing.T) {
	body := make([]uint32, 8)
	for i := range body {
		body[i] = mulq(1, 1, 1)
	}
	got, _ := perIteration(t, DefaultParams(), nil, 500, body...)
	within(t, "cycles per iteration of 8 dependent mulq", got, 56, 0.05)
}

// Independent adds issue four a cycle: 20 instructions (18 adds on six
// registers, the loop's subq and bne) fill five fetch blocks and four
// Ebox pipes (two clusters of an upper and a lower pipe) in five cycles.
func TestIndependentAddsFourWide(t *testing.T) {
	var body []uint32
	for i := range 18 {
		body = append(body, addqLit(uint32(5+i%6), 1, uint32(5+i%6)))
	}
	got, _ := perIteration(t, DefaultParams(), nil, 2000, body...)
	within(t, "cycles per iteration of 20 independent instructions", got, 5, 0.05)
}

// A loop-carried chain of loads that all miss costs the miss latency per
// iteration: with the list in the Bcache, the HRM's 13 cycles (Table 2-4);
// with the Bcache too small for it, 13 plus the memory's cycles.
func TestLoadChainMissLatency(t *testing.T) {
	const stride = 64 * 17 // a new line every load, sets spread
	const n = 2000
	build := func(m *machine) {
		// A ring of pointers: each line points at the next, stride apart,
		// over 2000 lines (about 2 MB), so no line is reused before the
		// ring wraps.
		for i := range n * 2 {
			a := dataBase + uint64(i%n)*stride
			next := dataBase + uint64((i+1)%n)*stride
			m.writeQuads(t, a, []uint64{next})
		}
	}
	body := []uint32{ldq(4, 4, 0)}
	p := DefaultParams()
	p.L2Bytes = 8 << 20 // holds the ring: every load hits the Bcache after the first pass
	p.DTBEntries = 512  // and the DTB its 266 pages, warmed: the latency alone (TestDTBMiss times misses)
	warmDTB := func(m *machine) {
		build(m)
		for i := range n {
			a := dataBase + uint64(i)*stride
			m.core.dtb.Lookup(a>>m.core.pageShift, m.core.asn(a))
		}
	}
	warm := func(m *machine) {
		warmDTB(m)
		for i := range n { // warm the Bcache (not the D-cache: too small)
			m.core.l2.Access(mustPhys(t, m, dataBase+uint64(i)*stride))
		}
	}
	got, _ := perIteration(t, p, warm, n/2, body...)
	within(t, "cycles per Bcache-hit load", got, float64(p.L2LoadCycles), 0.05)

	p = DefaultParams()
	p.L2Bytes = 64 << 10 // the ring misses the Bcache every time
	p.DTBEntries = 512
	got, m := perIteration(t, p, warmDTB, n/2, body...)
	within(t, "cycles per memory load", got, float64(p.L2LoadCycles+p.MemoryCycles), 0.05)
	if s := m.core.Stats(); s.DCacheMisses == 0 && m.cpu.PMU.Totals[alpha.EvDMiss] < n {
		t.Errorf("D-cache misses counted: %d, want at least %d", m.cpu.PMU.Totals[alpha.EvDMiss], n)
	}
}

func mustPhys(t *testing.T, m *machine, va uint64) uint64 {
	pa, ok := m.cpu.PhysAddr(va)
	if !ok {
		t.Fatalf("%#x not mapped", va)
	}
	return pa
}

// branchLoop runs a loop whose inner branch follows bits (one quadword
// each, low bit = taken) and returns the mispredicts per iteration and
// the cycles per iteration.
func branchLoop(t *testing.T, bits []uint64) (mispredicts, cycles float64) {
	return branchLoopWith(t, DefaultParams(), bits)
}

func branchLoopWith(t *testing.T, p Params, bits []uint64) (mispredicts, cycles float64) {
	body := []uint32{
		ldq(3, 4, 0),     // 0: the outcome
		addqLit(4, 8, 4), // 1: next quadword
		0,                // 2: blbs r3, 4
		addqLit(5, 1, 5), // 3: the not-taken work
		bis(31, 31, 31),  // 4: the branch's target
	}
	n := len(bits)
	run := func(n int) (*machine, uint64) {
		code := loop(setupCode, n, body...)
		top := len(code) - 3 - len(body)
		code[top+2] = blbs(3, top+2, top+4)
		m := newMachine(t, p, code, dataSize)
		m.writeQuads(t, dataBase, bits)
		return m, m.run(t)
	}
	_, c1 := run(n / 2)
	m, c2 := run(n)
	s := m.core.Stats()
	// The loop's own bne mispredicts once, at its exit.
	return float64(s.Mispredicts-1) / float64(n), float64(c2-c1) / float64(n-n/2)
}

// The tournament predictor learns a repeating pattern (its local history
// holds 10 outcomes, HRM §2.1) and fails on a random one half the time;
// each miss costs at least the 7-cycle abort penalty (Table 2-1).
func TestBranchPredictorPatternVersusRandom(t *testing.T) {
	const n = 8000
	pattern := make([]uint64, n)
	for i := range pattern {
		pattern[i] = uint64(i % 3 / 2) // not taken, not taken, taken
	}
	mpPattern, cyPattern := branchLoop(t, pattern)
	mpRandom, cyRandom := branchLoop(t, randomBits(n, 7))
	t.Logf("pattern: %.3f mispredicts, %.2f cycles per iteration; random: %.3f, %.2f",
		mpPattern, cyPattern, mpRandom, cyRandom)
	if mpPattern > 0.02 {
		t.Errorf("learned pattern mispredicts %.3f per iteration, want < 0.02", mpPattern)
	}
	if mpRandom < 0.4 || mpRandom > 0.6 {
		t.Errorf("random pattern mispredicts %.3f per iteration, want about 0.5", mpRandom)
	}
	// Each extra mispredict costs at least the abort penalty.
	if perMiss := (cyRandom - cyPattern) / (mpRandom - mpPattern); perMiss < 7 {
		t.Errorf("a mispredict costs %.1f cycles, want at least the HRM's 7", perMiss)
	} else {
		t.Logf("a mispredict costs %.1f cycles", perMiss)
	}
}

// The abort penalty is paid once per mispredict: ten more cycles of it
// cost ten more cycles per mispredict, less what the longer wrong path
// gains by starting the next quadwords' D-cache fills early (its loads
// fill the cache and the miss address file).
func TestMispredictPenaltyPerMiss(t *testing.T) {
	bits := randomBits(8000, 11)
	p := DefaultParams()
	mp, base := branchLoopWith(t, p, bits)
	p.MispredictCycles += 10
	mp2, slow := branchLoopWith(t, p, bits)
	if mp != mp2 {
		t.Fatalf("mispredicts changed with the penalty: %.4f, %.4f", mp, mp2)
	}
	within(t, "cycles per mispredict of 10 more penalty cycles", (slow-base)/mp, 9, 0.1)
}

// A store followed by a load of the same quadword is forwarded from the
// store queue: the load waits for the store's data, so a chain through
// memory (add, store, load) costs the add, the store's issue and the load
// latency, and every load is forwarded — except the first of each
// store-wait clearing interval, which issues before the store, takes an
// order trap and, fetched again after the store retired, reads the
// D-cache (TestOrderTrap).
func TestStoreToLoadForwarding(t *testing.T) {
	body := []uint32{
		stq(1, 4, 0),
		ldq(1, 4, 0),
		addqLit(1, 1, 1),
	}
	got, m := perIteration(t, DefaultParams(), nil, 1000, body...)
	within(t, "cycles per store-load-add chain", got, float64(1+DefaultParams().LatForward), 0.05)
	if s := m.core.Stats(); s.Forwarded+s.OrderTraps < 2000 || s.OrderTraps > 1 {
		t.Errorf("%d loads forwarded and %d order traps, want 2000 together and one trap at most", s.Forwarded, s.OrderTraps)
	}
	if m.cpu.R[1] != 2000 {
		t.Errorf("r1 = %d: the interpreter's result changed", m.cpu.R[1])
	}
}

// A result reaches the other cluster a cycle later (HRM Table 2-4).
func TestCrossClusterDelay(t *testing.T) {
	m := newMachine(t, DefaultParams(), []uint32{addqLit(1, 1, 1), callsys}, 0)
	m.run(t)
	same := m.core.readyInt[clusterOf(pU0)][1]
	other := m.core.readyInt[1-clusterOf(pU0)][1]
	if d := int64(other) - int64(same); d != 1 && d != -1 {
		t.Errorf("r1 ready at %d in one cluster and %d in the other, want a cycle apart", same, other)
	}
}

// Wrong-path instructions are fetched and squashed after a mispredict,
// and never retire: the retired count is the program's.
func TestWrongPathAborts(t *testing.T) {
	bits := randomBits(2000, 3)
	_, _ = branchLoop(t, bits) // the predictor's workout
	body := []uint32{ldq(3, 4, 0), addqLit(4, 8, 4), 0, addqLit(5, 1, 5), bis(31, 31, 31)}
	code := loop(setupCode, 2000, body...)
	top := len(code) - 3 - len(body)
	code[top+2] = blbs(3, top+2, top+4)
	m := newMachine(t, DefaultParams(), code, dataSize)
	m.writeQuads(t, dataBase, bits)
	m.core.Stages = NewStageTruth()
	var recs []Record
	m.core.SetObserver(func(r Record) { recs = append(recs, r) })
	m.run(t)
	s := m.core.Stats()
	// The observer sees every instruction in fetch order, each stage no
	// earlier than the one before, retired ones and aborted ones as the
	// stage truth counts them.
	var nRetired, nAborted uint64
	for i, r := range recs {
		if i > 0 && r.Fetch < recs[i-1].Fetch {
			t.Fatalf("record %d fetched at %d before record %d at %d", i, r.Fetch, i-1, recs[i-1].Fetch)
		}
		if r.Retired {
			nRetired++
			if !(r.Fetch < r.Map && r.Map < r.Issue && r.Issue < r.Retire) {
				t.Fatalf("record %d: stages out of order: %+v", i, r)
			}
		} else {
			nAborted++
			if r.Issued && !(r.Mapped && r.Issue <= r.Retire) || r.Fetch >= r.Retire+1 {
				t.Fatalf("aborted record %d inconsistent: %+v", i, r)
			}
		}
	}
	if nRetired != m.cpu.Retired-1 || nAborted != s.WrongPath {
		t.Errorf("observer saw %d retired and %d aborted, want %d and %d", nRetired, nAborted, m.cpu.Retired-1, s.WrongPath)
	}
	if s.WrongPath == 0 || s.WrongPathIssued == 0 {
		t.Fatalf("no wrong-path instructions: %+v", s)
	}
	var retired, aborted uint64
	for _, e := range m.core.Stages.PCs {
		retired += e.Retired
		aborted += e.Aborted
	}
	if retired != m.cpu.Retired-1 { // the final callsys does not commit
		t.Errorf("stage truth retired %d, CPU retired %d", retired, m.cpu.Retired)
	}
	if aborted != s.WrongPath {
		t.Errorf("stage truth aborted %d, core fetched %d on wrong paths", aborted, s.WrongPath)
	}
	t.Logf("%d mispredicts, %d wrong-path instructions fetched, %d issued", s.Mispredicts, s.WrongPath, s.WrongPathIssued)
}

// A counter interrupt is taken at the next instruction to retire (HRM
// §5.2.7: an interrupt's EXC_ADDR is the instruction that would have
// executed next): in a chain of loads that miss to memory the load waits
// at the head of the window for the miss, so CYCLES samples land on the
// load itself, not on the instruction that waits for its result as on
// the in-order 21164.
func TestInterruptAtNextToRetire(t *testing.T) {
	const n = 2000
	const stride = 64 * 17
	p := DefaultParams()
	p.L2Bytes = 64 << 10
	code := loop(setupCode, n, ldq(4, 4, 0), addqLit(4, 0, 5), addqLit(6, 1, 6))
	m := newMachine(t, p, code, dataSize)
	for i := range n {
		m.writeQuads(t, dataBase+uint64(i)*stride, []uint64{dataBase + uint64((i+1)%n)*stride})
	}
	top := uint64(codeBase + 4*(len(code)-6))
	m.cpu.PMU.SetCounter(0, alpha.EvCycles, 997, 0)
	samples := map[uint64]int{}
	total := 0
	for {
		m.cpu.Run(1 << 40)
		if m.cpu.Trap.Kind != alpha.TrapEvent {
			break
		}
		samples[m.cpu.PC]++
		total++
		m.cpu.PMU.SetCounter(0, alpha.EvCycles, 997, m.cpu.Cycle)
		m.core.Restart(m.cpu.Cycle)
	}
	if m.cpu.Trap.Kind != alpha.TrapSyscall {
		t.Fatalf("stopped with %v", m.cpu.Trap)
	}
	if total < 100 || float64(samples[top]) < 0.9*float64(total) {
		t.Errorf("%d of %d samples on the load at %#x, want at least 90%% (all: %v)", samples[top], total, top, samples)
	}
}
