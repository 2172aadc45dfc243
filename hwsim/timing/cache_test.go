package timing

import (
	"math/rand/v2"
	"testing"

	"dcpi/internal/testrand"
)

func mustCache(t testing.TB, cfg CacheConfig) *Cache {
	t.Helper()
	c, err := NewCache(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// cacheOp is one step of a hand-worked sequence.
type cacheOp struct {
	op   byte // 'a' Access, 'p' Probe, 'i' Invalidate, 'f' Fill
	addr uint64
	want bool // hit (a, p), was present (i); ignored for f
}

func runCacheOps(t *testing.T, c *Cache, ops []cacheOp) {
	t.Helper()
	for i, o := range ops {
		var got bool
		switch o.op {
		case 'a':
			got = c.Access(o.addr)
		case 'p':
			got = c.Probe(o.addr)
		case 'i':
			got = c.Invalidate(o.addr)
		case 'f':
			c.Fill(o.addr)
			continue
		}
		if got != o.want {
			t.Fatalf("step %d: %c %#x = %v, want %v", i, o.op, o.addr, got, o.want)
		}
	}
}

func TestCacheDirectMapped(t *testing.T) {
	// The 21164's D-cache: 8 KB, 32-byte lines, one way. Addresses 8 KB
	// apart share a line and evict each other.
	c := mustCache(t, CacheConfig{Size: 8 << 10, Line: 32, Ways: 1})
	runCacheOps(t, c, []cacheOp{
		{'a', 0x0000, false}, // cold
		{'a', 0x0018, true},  // same 32-byte line
		{'a', 0x0020, false}, // next line
		{'a', 0x2000, false}, // 8 KB away: same index, evicts 0x0000
		{'p', 0x0000, false},
		{'a', 0x0000, false}, // conflict miss, evicts 0x2000
		{'a', 0x2010, false}, // and back
		{'a', 0x0020, true},  // untouched by the ping-pong
		{'a', 0x4020, false}, // 16 KB away: evicts 0x0020
		{'p', 0x0020, false},
		{'p', 0x4020, true},
		{'i', 0x4020, true},
		{'i', 0x4020, false},
		{'a', 0x4020, false},
		{'f', 0x6000, false}, // fill evicts 0x2000's line without an access
		{'p', 0x2000, false},
		{'a', 0x6000, true},
	})
	if s := c.Stats(); s.Accesses != 10 || s.Misses != 7 {
		t.Errorf("stats %+v, want 10 accesses, 7 misses", s)
	}
	if c.Sets() != 256 || c.Ways() != 1 || c.LineSize() != 32 {
		t.Errorf("geometry %d sets x %d ways x %d bytes", c.Sets(), c.Ways(), c.LineSize())
	}
}

func TestCacheThreeWayLRU(t *testing.T) {
	// The S-cache's geometry with LRU: 96 KB, 64-byte lines, 3 ways, so
	// 512 sets and addresses 32 KB apart in the same set.
	c := mustCache(t, CacheConfig{Size: 96 << 10, Line: 64, Ways: 3, Replacement: LRU})
	if c.Sets() != 512 {
		t.Fatalf("sets = %d, want 512", c.Sets())
	}
	const A, B, C, D = 0, 32 << 10, 64 << 10, 96 << 10
	runCacheOps(t, c, []cacheOp{
		{'a', A, false}, {'a', B, false}, {'a', C, false}, // LRU order A B C
		{'a', A + 8, true}, // B C A
		{'a', D, false},    // evicts B: C A D
		{'p', B, false},
		{'p', C, true},  // a probe does not change the order
		{'a', C, true},  // A D C
		{'a', B, false}, // evicts A: D C B
		{'p', A, false},
		{'p', D, true},
		{'a', 64, false}, // another set: no effect
		{'i', C, true},   // D _ B: the empty way is filled first
		{'a', A, false},  // D A B
		{'p', D, true},
		{'a', C, false}, // evicts D, the least recent: B A C
		{'p', D, false},
		{'p', B, true},
	})
}

func TestCacheAccessVictim(t *testing.T) {
	c := mustCache(t, CacheConfig{Size: 96 << 10, Line: 64, Ways: 3, Replacement: LRU})
	for _, a := range []uint64{0x40, 0x8040, 0x10040} {
		if hit, _, ev := c.AccessVictim(a); hit || ev {
			t.Fatalf("cold %#x: hit %v evicted %v", a, hit, ev)
		}
	}
	hit, victim, evicted := c.AccessVictim(0x18077)
	if hit || !evicted || victim != 0x40 {
		t.Errorf("4th way: hit %v victim %#x evicted %v; want the LRU line 0x40", hit, victim, evicted)
	}
}

func TestCacheNonPowerOfTwoSets(t *testing.T) {
	// 3 sets of one 64-byte way: blocks map to block mod 3.
	c := mustCache(t, CacheConfig{Size: 3 * 64, Line: 64, Ways: 1})
	if c.Sets() != 3 {
		t.Fatalf("sets = %d", c.Sets())
	}
	runCacheOps(t, c, []cacheOp{
		{'a', 0 * 64, false}, {'a', 1 * 64, false}, {'a', 2 * 64, false},
		{'a', 0, true}, {'a', 64, true}, {'a', 128, true},
		{'a', 3 * 64, false}, // set 0
		{'p', 0, false}, {'p', 64, true}, {'p', 128, true},
		{'a', 5 * 64, false}, // set 2
		{'p', 128, false},
	})
	// 5 sets of 3 ways, LRU.
	c = mustCache(t, CacheConfig{Size: 5 * 3 * 32, Line: 32, Ways: 3})
	const s = 5 * 32 // same set
	runCacheOps(t, c, []cacheOp{
		{'a', 0, false}, {'a', s, false}, {'a', 2 * s, false},
		{'a', 0, true}, {'a', 3 * s, false}, // evicts s
		{'p', s, false}, {'p', 0, true}, {'p', 2 * s, true},
	})
}

func TestCacheRandomReplacement(t *testing.T) {
	// Random replacement is repeatable from its seed, only ever evicts a
	// line of the set that missed, and differs between seeds.
	run := func(seed uint64) []bool {
		c := mustCache(t, CacheConfig{Size: 96 << 10, Line: 64, Ways: 3, Replacement: Random, Seed: seed})
		var hits []bool
		r := rand.New(rand.NewPCG(1, 2))
		c.Access(64) // a line in set 1, which must never be evicted
		for range 5000 {
			// Five blocks competing for the three ways of set 0.
			hits = append(hits, c.Access(uint64(r.IntN(5))*32<<10))
			if !c.Access(64) {
				t.Fatal("a line of another set was evicted")
			}
		}
		return hits
	}
	a, b, other := run(7), run(7), run(8)
	same := true
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 7 ran differently at access %d", i)
		}
		if a[i] != other[i] {
			same = false
		}
	}
	if same {
		t.Error("seeds 7 and 8 gave the same sequence")
	}
}

func TestNewCacheRejects(t *testing.T) {
	for _, cfg := range []CacheConfig{
		{Size: 8192, Line: 48, Ways: 1},
		{Size: 8192, Line: 32, Ways: 0},
		{Size: 8010, Line: 32, Ways: 1},
		{Size: 0, Line: 32, Ways: 1},
		{Size: 8192, Line: 32, Ways: 1, Replacement: 5},
	} {
		if _, err := NewCache(cfg); err == nil {
			t.Errorf("NewCache(%+v) accepted", cfg)
		}
	}
}

// modelCache is the obviously-correct cache: a slice of ways per set, each
// line with an explicit last-use time.
type modelCache struct {
	sets  [][]modelLine
	line  uint64
	clock uint64
	repl  Replacement
	rng   rng
}

type modelLine struct {
	valid bool
	blk   uint64
	used  uint64
}

func newModelCache(cfg CacheConfig) *modelCache {
	n := cfg.Size / (cfg.Line * cfg.Ways)
	m := &modelCache{line: uint64(cfg.Line), repl: cfg.Replacement, rng: newRNG(cfg.Seed)}
	for range n {
		m.sets = append(m.sets, make([]modelLine, cfg.Ways))
	}
	return m
}

func (m *modelCache) set(addr uint64) []modelLine {
	return m.sets[(addr/m.line)%uint64(len(m.sets))]
}

func (m *modelCache) lookup(addr uint64) *modelLine {
	for i, l := range m.set(addr) {
		if l.valid && l.blk == addr/m.line {
			return &m.set(addr)[i]
		}
	}
	return nil
}

func (m *modelCache) access(addr uint64) (hit bool, victim uint64, evicted bool) {
	m.clock++
	if l := m.lookup(addr); l != nil {
		l.used = m.clock
		return true, 0, false
	}
	ways := m.set(addr)
	w := -1
	for i := range ways {
		if !ways[i].valid {
			w = i
			break
		}
	}
	if w < 0 {
		if m.repl == Random && len(ways) > 1 {
			w = int(m.rng.next() % uint64(len(ways)))
		} else {
			w = 0
			for i := range ways {
				if ways[i].used < ways[w].used {
					w = i
				}
			}
		}
		victim, evicted = ways[w].blk*m.line, true
	}
	ways[w] = modelLine{valid: true, blk: addr / m.line, used: m.clock}
	return false, victim, evicted
}

func (m *modelCache) invalidate(addr uint64) bool {
	if l := m.lookup(addr); l != nil {
		l.valid = false
		return true
	}
	return false
}

// TestCacheAgainstModel runs random operations on Cache and modelCache
// and compares every answer.
func TestCacheAgainstModel(t *testing.T) {
	seed := testrand.Seed(t)
	configs := []CacheConfig{
		{Size: 8 << 10, Line: 32, Ways: 1},
		{Size: 96 << 10, Line: 64, Ways: 3, Replacement: LRU},
		{Size: 96 << 10, Line: 64, Ways: 3, Replacement: Random, Seed: seed},
		{Size: 4 << 10, Line: 32, Ways: 2},
		{Size: 4 << 10, Line: 16, Ways: 4},
		{Size: 5 * 3 * 64, Line: 64, Ways: 3},
		{Size: 7 * 2 * 32, Line: 32, Ways: 2, Replacement: Random, Seed: seed + 1},
		{Size: 6 * 32, Line: 32, Ways: 1},
	}
	for ci, cfg := range configs {
		r := rand.New(rand.NewPCG(seed, uint64(ci)))
		c := mustCache(t, cfg)
		m := newModelCache(cfg)
		span := uint64(cfg.Size) * 4 // addresses over four cache sizes
		var accesses, misses uint64
		for step := range 200_000 {
			addr := r.Uint64N(span)
			if r.IntN(16) == 0 {
				addr |= r.Uint64() &^ (1<<40 - 1) // far-away tags with the same index
			}
			switch k := r.IntN(20); {
			case k < 16:
				hit, victim, evicted := c.AccessVictim(addr)
				mhit, mvictim, mevicted := m.access(addr)
				accesses++
				if !mhit {
					misses++
				}
				if hit != mhit || evicted != mevicted || victim != mvictim {
					t.Fatalf("config %d %+v step %d: access %#x = (%v, %#x, %v), model (%v, %#x, %v)",
						ci, cfg, step, addr, hit, victim, evicted, mhit, mvictim, mevicted)
				}
			case k < 18:
				if got, want := c.Probe(addr), m.lookup(addr) != nil; got != want {
					t.Fatalf("config %d step %d: probe %#x = %v, model %v", ci, step, addr, got, want)
				}
			default:
				if got, want := c.Invalidate(addr), m.invalidate(addr); got != want {
					t.Fatalf("config %d step %d: invalidate %#x = %v, model %v", ci, step, addr, got, want)
				}
			}
		}
		if s := c.Stats(); s.Accesses != accesses || s.Misses != misses {
			t.Errorf("config %d: stats %+v, model %d accesses %d misses", ci, s, accesses, misses)
		}
	}
}
