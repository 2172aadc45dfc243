package timing

import "fmt"

// Replacement is how a set-associative cache chooses the way a miss
// replaces. An empty way is always filled first.
type Replacement uint8

// Replacement policies.
const (
	// LRU replaces the way used least recently.
	LRU Replacement = iota
	// Random replaces a way chosen by a generator seeded from
	// CacheConfig.Seed, so runs repeat.
	Random
)

func (r Replacement) valid() bool { return r <= Random }

func (r Replacement) String() string {
	switch r {
	case LRU:
		return "lru"
	case Random:
		return "random"
	}
	return fmt.Sprintf("Replacement(%d)", uint8(r))
}

// CacheConfig is the geometry of a Cache.
type CacheConfig struct {
	Size, Line, Ways int // bytes, bytes (a power of two), ways per set
	Replacement      Replacement
	Seed             uint64 // for Random
}

// CacheStats counts a cache's accesses (Access, AccessVictim) and the
// misses among them. Probe and Fill are not counted.
type CacheStats struct {
	Accesses, Misses uint64
}

// Cache is a set-associative cache of tags, with no data: it answers hit or
// miss and allocates on a miss. Direct-mapped is one way. The number of
// sets, Size/(Line*Ways), need not be a power of two; when it is not, the
// set is the block number modulo the number of sets (the 21164's 3-way
// S-cache does not need this: each way is a 32 KB bank, so its 512 sets
// are indexed by PA<14:6>).
type Cache struct {
	tags   []uint64 // sets*ways, set-major; block number + 1, 0 when empty
	stamp  []uint64 // LRU only: when each line was last used
	shift  uint     // log2(line)
	sets   uint64
	mask   uint64 // sets-1 when sets is a power of two
	pow2   bool
	direct bool // one way and pow2: the fast path applies
	ways   int
	repl   Replacement
	clock  uint64
	rng    rng
	stats  CacheStats
}

// NewCache returns an empty cache of the given geometry.
func NewCache(cfg CacheConfig) (*Cache, error) {
	switch {
	case cfg.Line < 1 || !isPow2(cfg.Line):
		return nil, fmt.Errorf("%w: cache line %d is not a power of two", ErrInvalidParams, cfg.Line)
	case cfg.Ways < 1:
		return nil, fmt.Errorf("%w: cache ways %d: want at least 1", ErrInvalidParams, cfg.Ways)
	case cfg.Size <= 0 || cfg.Size%(cfg.Line*cfg.Ways) != 0:
		return nil, fmt.Errorf("%w: cache size %d is not a whole number of %d-way sets of %d-byte lines",
			ErrInvalidParams, cfg.Size, cfg.Ways, cfg.Line)
	case !cfg.Replacement.valid():
		return nil, fmt.Errorf("%w: cache replacement %v", ErrInvalidParams, cfg.Replacement)
	}
	sets := cfg.Size / (cfg.Line * cfg.Ways)
	c := &Cache{
		tags:  make([]uint64, sets*cfg.Ways),
		shift: log2(cfg.Line),
		sets:  uint64(sets),
		pow2:  isPow2(sets),
		ways:  cfg.Ways,
		repl:  cfg.Replacement,
		rng:   newRNG(cfg.Seed),
	}
	if c.pow2 {
		c.mask = c.sets - 1
	}
	c.direct = c.pow2 && c.ways == 1
	if cfg.Ways > 1 && cfg.Replacement == LRU {
		c.stamp = make([]uint64, len(c.tags))
	}
	return c, nil
}

// Sets, Ways and LineSize return the cache's geometry.
func (c *Cache) Sets() int     { return int(c.sets) }
func (c *Cache) Ways() int     { return c.ways }
func (c *Cache) LineSize() int { return 1 << c.shift }

// Stats returns the access and miss counts.
func (c *Cache) Stats() CacheStats { return c.stats }

func (c *Cache) set(blk uint64) uint64 {
	if c.pow2 {
		return blk & c.mask
	}
	return blk % c.sets
}

// Access looks addr up, allocating its line on a miss, and reports a hit.
func (c *Cache) Access(addr uint64) bool {
	blk := addr >> c.shift
	if c.fastHit(blk) {
		return true
	}
	c.stats.Accesses++
	hit, _, _ := c.fill(blk, true)
	return hit
}

// fastHit counts and reports a hit of block blk in a direct-mapped cache
// with a power-of-two number of sets. False means only that the caller
// must go the general way (Access, AccessVictim). It is small enough to
// be inlined into the hot paths of Hierarchy.
func (c *Cache) fastHit(blk uint64) bool {
	if c.direct && c.tags[blk&c.mask] == blk+1 {
		c.stats.Accesses++
		return true
	}
	return false
}

// AccessVictim is Access that also returns the address of the line a miss
// evicted, if it evicted one, so a cache that keeps another as its subset
// can invalidate it there.
func (c *Cache) AccessVictim(addr uint64) (hit bool, victim uint64, evicted bool) {
	c.stats.Accesses++
	return c.fill(addr>>c.shift, true)
}

// Fill installs addr's line as if just used, without counting an access,
// and returns the line it evicted, if any.
func (c *Cache) Fill(addr uint64) (victim uint64, evicted bool) {
	_, victim, evicted = c.fill(addr>>c.shift, false)
	return victim, evicted
}

// fill looks block blk up and allocates it on a miss.
func (c *Cache) fill(blk uint64, count bool) (hit bool, victim uint64, evicted bool) {
	base := int(c.set(blk)) * c.ways
	ways := c.tags[base : base+c.ways]
	for w, t := range ways {
		if t == blk+1 {
			c.touch(base + w)
			return true, 0, false
		}
	}
	if count {
		c.stats.Misses++
	}
	w := c.victim(base, ways)
	old := ways[w]
	ways[w] = blk + 1
	c.touch(base + w)
	if old == 0 {
		return false, 0, false
	}
	return false, (old - 1) << c.shift, true
}

// victim chooses the way of the set at base that a miss replaces.
func (c *Cache) victim(base int, ways []uint64) int {
	for w, t := range ways {
		if t == 0 {
			return w
		}
	}
	if len(ways) == 1 {
		return 0
	}
	if c.repl == Random {
		return int(c.rng.next() % uint64(len(ways)))
	}
	lru, oldest := 0, c.stamp[base]
	for w := 1; w < len(ways); w++ {
		if s := c.stamp[base+w]; s < oldest {
			lru, oldest = w, s
		}
	}
	return lru
}

func (c *Cache) touch(i int) {
	if c.stamp != nil {
		c.clock++
		c.stamp[i] = c.clock
	}
}

// Probe reports whether addr's line is present, changing nothing.
func (c *Cache) Probe(addr uint64) bool {
	blk := addr >> c.shift
	base := int(c.set(blk)) * c.ways
	for _, t := range c.tags[base : base+c.ways] {
		if t == blk+1 {
			return true
		}
	}
	return false
}

// Invalidate removes addr's line and reports whether it was present.
func (c *Cache) Invalidate(addr uint64) bool {
	blk := addr >> c.shift
	base := int(c.set(blk)) * c.ways
	ways := c.tags[base : base+c.ways]
	for w, t := range ways {
		if t == blk+1 {
			ways[w] = 0
			return true
		}
	}
	return false
}

// InvalidateAll empties the cache. The counts are kept.
func (c *Cache) InvalidateAll() {
	clear(c.tags)
	clear(c.stamp)
	c.clock = 0
}

// rng is xorshift64*: a small, fast, seeded generator.
type rng struct{ s uint64 }

func newRNG(seed uint64) rng {
	// splitmix64 of the seed, so that nearby seeds diverge and zero is
	// never the state.
	z := seed + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	if z == 0 {
		z = 1
	}
	return rng{z}
}

func (r *rng) next() uint64 {
	r.s ^= r.s >> 12
	r.s ^= r.s << 25
	r.s ^= r.s >> 27
	return r.s * 0x2545f4914f6cdd1d
}
