package alpha

import (
	"math/rand/v2"
	"testing"
)

// The major interval chooses a pair's first instruction every [min, max]
// fetches, and the second is exactly its PairDistance fetches later, the
// distance uniform over [1, W]; roles alternate first, second.
func TestMeCounterPairDistances(t *testing.T) {
	const lo, hi, w = 100, 300, 16
	p, err := NewProfileMe(lo, hi, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetPaired(w); err != nil {
		t.Fatal(err)
	}
	var firstAt, lastFirst int
	var dist uint32
	seen := map[uint32]int{}
	pairs := 0
	for i := 1; i <= 300000; i++ {
		tagged, role, d := p.Fetch(uint64(i))
		if !tagged {
			continue
		}
		switch role {
		case MeFirst:
			if firstAt != 0 {
				t.Fatalf("fetch %d: a first while the pair from %d waits for its second", i, firstAt)
			}
			if lastFirst != 0 && (i-lastFirst < lo || i-lastFirst > hi) {
				t.Fatalf("fetch %d: first %d fetches after the last first, want [%d, %d]", i, i-lastFirst, lo, hi)
			}
			if d < 1 || d > w {
				t.Fatalf("fetch %d: distance %d outside [1, %d]", i, d, w)
			}
			firstAt, lastFirst, dist = i, i, d
		case MeSecond:
			if firstAt == 0 || d != dist || uint32(i-firstAt) != dist {
				t.Fatalf("fetch %d: second with distance %d, %d fetches after the first at %d (its distance %d)", i, d, i-firstAt, firstAt, dist)
			}
			seen[d]++
			pairs++
			firstAt = 0
		default:
			t.Fatalf("fetch %d: role %v in paired sampling", i, role)
		}
	}
	if len(seen) != w || pairs < 1000 {
		t.Fatalf("%d pairs, distances seen %v: want all of 1 to %d", pairs, seen, w)
	}
	if p.Tags != uint64(2*pairs) && p.Tags != uint64(2*pairs+1) {
		t.Fatalf("%d tags for %d pairs", p.Tags, pairs)
	}
}

// Counting fetch opportunities, four a cycle: with one instruction
// fetched a cycle, three of every four opportunities chosen hold nothing
// and are spent without a tag.
func TestMeCounterFetchSlots(t *testing.T) {
	p, err := NewProfileMe(50, 150, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	p.SetCountSlots(true)
	const n = 400000
	for i := 1; i <= n; i++ {
		p.Fetch(uint64(i))
	}
	chosen := p.Tags + p.Empty
	if want := uint64(4 * n / 100); chosen < want*95/100 || chosen > want*105/100 {
		t.Fatalf("%d opportunities chosen in %d (%d tags, %d empty), want about %d", chosen, 4*n, p.Tags, p.Empty, want)
	}
	if share := float64(p.Empty) / float64(chosen); share < 0.70 || share > 0.80 {
		t.Fatalf("%.2f of the chosen opportunities empty, want about 3/4", share)
	}
	// Four a cycle, every opportunity holds an instruction.
	q, _ := NewProfileMe(50, 150, 4, 2)
	q.SetCountSlots(true)
	for i := range n {
		q.Fetch(uint64(1 + i/4))
	}
	if q.Empty != 0 || q.Tags < n/100*95/100 {
		t.Fatalf("full fetch: %d tags, %d empty", q.Tags, q.Empty)
	}
}

// A pair goes into two consecutive register copies or is lost whole, and
// the interrupt is raised once the copies cannot take another pair; a
// pair abandoned before its second is recorded is lost and counted.
func TestMePairsNeverSplit(t *testing.T) {
	p, err := NewProfileMe(20, 20, 3, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetPaired(4); err != nil {
		t.Fatal(err)
	}
	var pmu PMU
	pmu.update()
	rec := func(pc uint64, role MePairRole) *MeRecord {
		return &MeRecord{PC: pc, Pair: role, PairDistance: 3, Done: pc}
	}
	p.Complete(rec(1, MeFirst), &pmu)
	if p.Buffered() != 1 || p.Due() != 0 {
		t.Fatalf("a first alone: buffered %d, due %d", p.Buffered(), p.Due())
	}
	p.Complete(rec(2, MeSecond), &pmu)
	if p.Due() != 2 {
		t.Fatalf("one pair in three copies: interrupt due %d, want 2 (no room for another pair)", p.Due())
	}
	p.Complete(rec(3, MeFirst), &pmu)
	p.Complete(rec(4, MeSecond), &pmu)
	if p.Lost != 2 || p.LostPairs != 1 || p.Buffered() != 2 {
		t.Fatalf("a pair with one free copy: lost %d (%d pairs), buffered %d", p.Lost, p.LostPairs, p.Buffered())
	}
	got := p.Take(nil, &pmu)
	if len(got) != 2 || got[0].PC != 1 || got[0].Pair != MeFirst || got[1].PC != 2 || got[1].Pair != MeSecond {
		t.Fatalf("delivered %+v", got)
	}
	p.Complete(rec(5, MeFirst), &pmu)
	p.Stop()
	if p.Lost != 3 || p.LostPairs != 2 || p.Buffered() != 0 {
		t.Fatalf("stopped with a first waiting: lost %d (%d pairs), buffered %d", p.Lost, p.LostPairs, p.Buffered())
	}
	if _, err := NewProfileMe(20, 30, 1, 0); err != nil {
		t.Fatal(err)
	}
	one, _ := NewProfileMe(20, 30, 1, 0)
	if one.SetPaired(4) == nil {
		t.Error("a pair window accepted with one register copy")
	}
	if p.SetPaired(20) == nil || p.SetPaired(0) == nil {
		t.Error("a pair window outside [1, min) accepted")
	}
}

// On the 21164 model the path-history register of every record is the
// directions of the conditional branches retired before it, as the
// retired records' successors say; the interrupted instructions (aborted,
// refetched) carry the history at their fetch.
func TestMeHistoryOnThe21164(t *testing.T) {
	// r3 = bits[i]; blbs r3 skips an add; i++; loop 3000 times.
	rng := rand.New(rand.NewPCG(5, 5))
	code := []uint32{
		encMem(0x08, 1, 31, 3000),     // lda r1, 3000
		encMem(0x09, 4, 31, 0x10),     // ldah r4, data>>16 (dataBase)
		encMem(0x29, 3, 4, 0),         // loop: ldq r3, 0(r4)
		encBr(0x3c, 3, 1),             // blbs r3, +1
		encOpLit(0x10, 0x20, 5, 1, 5), // addq r5, 1, r5
		encOpLit(0x10, 0x29, 3, 1, 3), // subq r3, 1, r3 (keeps the data alive)
		encOpLit(0x10, 0x20, 4, 8, 4), // addq r4, 8, r4
		encOpLit(0x10, 0x29, 1, 1, 1), // subq r1, 1, r1
		encBr(0x3d, 1, -7),            // bne r1, loop
	}
	c := loadProgram(EV5, codeBase, append(code, halt), 0)
	c.AS.Map(0x100000, 8*3000, PermR|PermW)
	for i := range 3000 {
		var b [8]byte
		b[0] = byte(rng.IntN(2))
		if err := c.AS.WriteBytes(0x100000+uint64(8*i), b[:]); err != nil {
			t.Fatal(err)
		}
	}
	u, err := NewProfileMe(1, 1, 64, 9)
	if err != nil {
		t.Fatal(err)
	}
	c.Me = u
	var recs []MeRecord
	for {
		c.Run(1 << 30)
		recs = u.Take(recs, &c.PMU)
		if c.Trap.Kind != TrapEvent {
			break
		}
	}
	if c.Trap.Kind != TrapSyscall {
		t.Fatalf("stopped with %v", c.Trap)
	}
	var retired []MeRecord
	for _, r := range recs {
		if r.Retired() {
			retired = append(retired, r)
		}
	}
	// Every instruction is recorded, the final callsys too; only the
	// interrupted ones, aborted while the copies were full, are lost.
	if uint64(len(retired)) != c.Retired || uint64(len(recs))+u.Lost != u.Tags || retired[len(retired)-1].PC != codeBase+4*uint64(len(code)) {
		t.Fatalf("%d retired records of %d instructions (%d lost), the last at %#x", len(retired), c.Retired, u.Lost, retired[len(retired)-1].PC)
	}
	var hist uint16
	branches := 0
	for i, r := range retired[:len(retired)-1] {
		if r.History != hist {
			t.Fatalf("record %d at %#x: history %016b, the retired branches say %016b", i, r.PC, r.History, hist)
		}
		w, _ := c.FetchWord(r.PC)
		if d := Decode(w, EV5); classOf[d.Op].Branch {
			taken := retired[i+1].PC != r.PC+4
			if taken != (r.Events&MeTaken != 0) {
				t.Fatalf("record %d at %#x: taken bit %v, successor %#x", i, r.PC, !taken, retired[i+1].PC)
			}
			hist = hist<<1 | uint16(b2u(taken))
			branches++
		}
	}
	if branches < 6000 || hist == 0 {
		t.Fatalf("%d branches checked", branches)
	}
}
