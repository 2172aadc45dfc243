package node

import (
	"math"
	"math/bits"
	"slices"
	"testing"
)

func TestSlotPacking(t *testing.T) {
	for _, e := range []Entry{
		{PID: 1, PC: 0x120001234, Event: 0, Count: 1},
		{PID: math.MaxUint32, PC: math.MaxUint64, Event: 255, Count: CountMax},
		{PID: 0, PC: 0, Event: 2, Count: 7},
	} {
		s := slot{pc: e.PC, key: tagOf(e.PID, e.Event) | uint64(e.Count)}
		if got := s.entry(); got != e {
			t.Errorf("%+v packed and unpacked: %+v", e, got)
		}
		if !s.live() {
			t.Errorf("%+v: not live", e)
		}
		if !matches(&s, tagOf(e.PID, e.Event), e.PC) {
			t.Errorf("%+v does not match its own key", e)
		}
		if matches(&s, tagOf(e.PID^1, e.Event), e.PC) || matches(&s, tagOf(e.PID, e.Event^1), e.PC) || matches(&s, tagOf(e.PID, e.Event), e.PC^4) {
			t.Errorf("%+v matches another key", e)
		}
	}
	// An empty slot matches nothing, not even the all-zero key.
	var empty slot
	if empty.live() || matches(&empty, tagOf(0, 0), 0) {
		t.Error("the empty slot is live or matches the zero key")
	}
	if got := DefaultDriverConfig().MemoryBytes(); got != 512<<10 {
		t.Errorf("default driver memory %d bytes, want 512 KB (sec. 5.3)", got)
	}
}

// TestHashSpreadsProfileKeys hashes key sets shaped like profiles into
// 4-way tables of several sizes (as many keys as entries) and counts the
// keys that find their bucket full: conflict misses. It compares them with
// a random-like reference hash (MurmurHash3's finalizer, which hashKey
// does not use because it costs a second multiply and three more shifts). On dense runs of PCs — a loop's instructions, the same code
// in many processes, several events — Fibonacci hashing spreads keys more
// evenly than random placement, so hashKey must do at least as well as
// the reference; on PCs a power-of-two stride apart it does worse, and
// must stay within 2.5 times the reference.
func TestHashSpreadsProfileKeys(t *testing.T) {
	type key struct {
		pid   uint32
		pc    uint64
		event uint8
	}
	reference := func(k key) uint64 { // MurmurHash3's fmix64 of hashKey's input
		x := k.pc>>2 ^ bits.RotateLeft64(uint64(k.pid)<<8|uint64(k.event), 40)
		x ^= x >> 33
		x *= 0xff51afd7ed558ccd
		x ^= x >> 33
		x *= 0xc4ceb9fe1a85ec53
		return x ^ x>>33
	}
	for _, c := range []struct {
		name  string
		dense bool
		shape func(i int) key
	}{
		{"one process, consecutive PCs", true, func(i int) key { return key{pid: 42, pc: 0x120000000 + uint64(i)*4} }},
		{"same 256 PCs in many processes", true, func(i int) key {
			return key{pid: uint32(1000 + i/256), pc: 0x120000000 + uint64(i%256)*4}
		}},
		{"same PCs, two events", true, func(i int) key { return key{pid: 7, pc: 0x120000000 + uint64(i/2)*4, event: uint8(i % 2 * 2)} }},
		{"kernel PCs, idle", true, func(i int) key { return key{pc: 0x60000000000 + uint64(i)*4} }},
		{"one PC, consecutive PIDs", true, func(i int) key { return key{pid: uint32(i), pc: 0x120000100} }},
		{"one PC, PIDs 4096 apart", true, func(i int) key { return key{pid: uint32(i) << 12, pc: 0x120000100} }},
		{"PCs 16 bytes apart", false, func(i int) key { return key{pid: 9, pc: 0x120000000 + uint64(i)*16} }},
		{"PCs 64 bytes apart", false, func(i int) key { return key{pid: 9, pc: 0x120000000 + uint64(i)*64} }},
		{"PCs 256 bytes apart", false, func(i int) key { return key{pid: 9, pc: 0x120000000 + uint64(i)*256} }},
	} {
		for _, buckets := range []uint64{1024, 2730, 4096} {
			conflicts := func(h func(key) uint64) int {
				load := make([]int, buckets)
				over := 0
				for i := range int(buckets) * 4 {
					b := bucketIndex(h(c.shape(i)), buckets)
					if load[b]++; load[b] > 4 {
						over++
					}
				}
				return over
			}
			got := conflicts(func(k key) uint64 { return hashKey(k.pid, k.pc, k.event) })
			ref := conflicts(reference)
			limit := float64(ref)
			if !c.dense {
				limit *= 2.5
			}
			if float64(got) > limit {
				t.Errorf("%s, %d buckets: %d keys find their bucket full; the random-like reference %d", c.name, buckets, got, ref)
			}
			t.Logf("%-32s %5d buckets: %5d conflicts, reference %5d", c.name, buckets, got, ref)
		}
	}
}

func TestBucketIndexRange(t *testing.T) {
	for _, n := range []uint64{1, 3, 2730, 4096, 1<<32 - 1} {
		for _, h := range []uint64{0, 1, 1 << 32, math.MaxUint64, hashKey(1, 0x120000000, 0)} {
			if i := bucketIndex(h, n); i >= n {
				t.Errorf("bucketIndex(%#x, %d) = %d", h, n, i)
			}
		}
	}
}

// oneBucket returns a driver whose table is a single bucket, so that the
// replacement policy can be watched entry by entry.
func oneBucket(t *testing.T, assoc int, p Policy) *Driver {
	t.Helper()
	cfg := DefaultDriverConfig()
	cfg.TableEntries, cfg.Assoc, cfg.Policy, cfg.BufferEntries = assoc, assoc, p, 64
	d, err := NewDriver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// bucketPCs returns the PCs of the one-bucket table, in slot order (0 for
// an empty slot), and the PCs of the entries evicted so far.
func bucketPCs(d *Driver) (table, evicted []uint64) {
	for _, s := range d.tab.slots {
		if !s.live() {
			s.pc = 0
		}
		table = append(table, s.pc)
	}
	for _, s := range d.out.cur[:d.out.n] {
		evicted = append(evicted, s.pc)
	}
	return table, evicted
}

func TestReplacementPolicies(t *testing.T) {
	eq := slices.Equal[[]uint64]
	// Round-robin (sec. 4.2.1): empty slots first, then a mod-4 counter
	// that advances on each eviction; a hit changes nothing. 8 is evicted
	// by 24 and comes back by evicting 12.
	d := oneBucket(t, 4, RoundRobin)
	for _, pc := range []uint64{4, 8, 12, 16, 8, 20, 24, 8, 28} {
		d.Sample(1, pc, 0)
	}
	table, evicted := bucketPCs(d)
	if want := []uint64{20, 24, 8, 28}; !eq(table, want) {
		t.Errorf("round-robin table %v, want %v", table, want)
	}
	if want := []uint64{4, 8, 12, 16}; !eq(evicted, want) {
		t.Errorf("round-robin evicted %v, want %v", evicted, want)
	}

	// Swap-to-front with insert-at-front (sec. 5.4): a hit swaps with the
	// first entry, a miss goes first and pushes the last out.
	d = oneBucket(t, 4, SwapToFront)
	for _, pc := range []uint64{4, 8, 12, 16} {
		d.Sample(1, pc, 0)
	}
	if table, _ := bucketPCs(d); !eq(table, []uint64{16, 12, 8, 4}) {
		t.Errorf("after four misses: %v, want [16 12 8 4]", table)
	}
	d.Sample(1, 8, 0) // hit at position 2: swap with position 0
	if table, _ := bucketPCs(d); !eq(table, []uint64{8, 12, 16, 4}) {
		t.Errorf("after a hit on 8: %v, want [8 12 16 4]", table)
	}
	d.Sample(1, 20, 0) // miss: insert first, evict the last (4)
	table, evicted = bucketPCs(d)
	if !eq(table, []uint64{20, 8, 12, 16}) || !eq(evicted, []uint64{4}) {
		t.Errorf("after a miss on 20: %v evicted %v, want [20 8 12 16] evicted [4]", table, evicted)
	}
}
