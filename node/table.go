package node

import (
	"fmt"
	"math/bits"
	"unsafe"
)

// The aggregation table of DCPI's driver (sec. 4.2.1): an array of buckets
// of Assoc entries each, counting how often each (PID, PC, EVENT) triple
// has been sampled since it entered the table. A miss replaces one entry of
// the bucket, and the replaced entry goes to the overflow buffer (see
// overflow.go), so the daemon sees one entry per run of samples instead of
// one per sample.
//
// An entry is 16 bytes, as in DCPI: the PC in one word, and the PID, the
// event and the count packed into the other. Four entries make one 64-byte
// line of the 21164's caches, so a lookup touches one line (sec. 4.2.2).

// Entry is one aggregated sample count as it leaves the driver: Count
// samples of Event at PC in process PID. PID is whatever process key the
// caller hands Sample; node's daemon passes hwsim's process incarnation,
// which, unlike a PID, is never reused (see imagemap.go).
type Entry struct {
	PID   uint32
	PC    uint64
	Event uint8
	Count uint32
}

// slot is an Entry as the table and the overflow buffers store it: 16
// bytes. key holds PID in bits 63-32, the event in bits 31-24 and the count
// in bits 23-0. A count of zero marks an empty slot.
type slot struct {
	pc  uint64
	key uint64
}

const (
	countBits = 24
	countMask = 1<<countBits - 1
	// CountMax is the largest count an entry holds. A hit on an entry whose
	// count is CountMax sends the entry, with that count, to the overflow
	// buffer and restarts it at 1, so no count is ever lost to overflow of
	// the field.
	CountMax = countMask
)

// tagOf is the key of (pid, event) with a zero count.
func tagOf(pid uint32, event uint8) uint64 {
	return uint64(pid)<<32 | uint64(event)<<countBits
}

// matches reports whether s holds (tag's PID and event, pc) with a count
// in [1, CountMax]: key^tag is then the count, and an empty slot's 0 wraps
// around in the subtraction, so one compare tests both.
func matches(s *slot, tag, pc uint64) bool { return s.pc == pc && (s.key^tag)-1 < CountMax }

func (s slot) live() bool { return s.key&countMask != 0 }

func (s slot) count() uint32 { return uint32(s.key & countMask) }

func (s slot) entry() Entry {
	return Entry{PID: uint32(s.key >> 32), PC: s.pc, Event: uint8(s.key >> countBits), Count: uint32(s.key & countMask)}
}

// Policy is the table's replacement policy.
type Policy uint8

const (
	// RoundRobin is DCPI's: a hit only counts; a miss replaces the entry a
	// per-table mod-Assoc counter points at, and advances the counter
	// (sec. 4.2.1). An empty entry of the bucket is used first.
	RoundRobin Policy = iota
	// SwapToFront is the policy sec. 5.4 proposes: a hit swaps the entry
	// with the bucket's first, and a miss inserts the new entry at the
	// front, moving the others down one place and evicting the last.
	SwapToFront
	numPolicies
)

func (p Policy) String() string {
	switch p {
	case RoundRobin:
		return "round-robin"
	case SwapToFront:
		return "swap-to-front"
	}
	return fmt.Sprintf("Policy(%d)", uint8(p))
}

// ParsePolicy accepts "round-robin" (or "rr") and "swap-to-front" (or "stf").
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "round-robin", "roundrobin", "rr":
		return RoundRobin, nil
	case "swap-to-front", "swaptofront", "stf":
		return SwapToFront, nil
	}
	return 0, fmt.Errorf("unknown replacement policy %q (want round-robin or swap-to-front)", s)
}

// hashMul is 2^64 divided by the golden ratio, the multiplier of Knuth's
// Fibonacci hashing.
const hashMul = 0x9E3779B97F4A7C15

// hashKey mixes a sample's key into 64 bits whose high half picks the
// bucket. Alpha instructions are 4-byte aligned, so PC>>2 drops two bits
// that never vary; the PID and event, rotated to bits 40 and up (rotated,
// not shifted, so no bit of a 32-bit PID is lost), are XORed in above the
// bits in which one image's PCs differ. One multiply by the golden-ratio
// constant then carries every input bit into the high half of the product
// (Fibonacci hashing): consecutive PCs of a loop, the same PC in two
// processes, and the same PC under two events land in unrelated buckets.
// Cost: two shifts, a rotate, two XORs and a multiply.
//
// On dense runs of PCs, which is what profiles are made of, Fibonacci
// hashing spreads keys more evenly than random placement would (a 4-way
// table as full as it has entries sees a quarter to a sixth of a random
// hash's bucket overflows); PCs a large power of two apart (64 bytes or
// more) it spreads up to about 2.3 times worse than random
// (TestHashSpreadsProfileKeys).
func hashKey(pid uint32, pc uint64, event uint8) uint64 {
	k := pc>>2 ^ bits.RotateLeft64(uint64(pid)<<8|uint64(event), 40)
	return k * hashMul
}

// bucketIndex maps a hash to one of n buckets by multiplying its high 32
// bits by n and keeping the high 32 bits of that (Lemire's fast range
// reduction): no division, and n need not be a power of two, so 6-way
// tables of any size work.
func bucketIndex(h uint64, n uint64) uint64 { return (h >> 32) * n >> 32 }

// table is one CPU's aggregation table: the slots, bucket after bucket,
// and the round-robin victim counter.
type table struct {
	slots   []slot
	assoc   uint64
	buckets uint64
	rr      uint64 // next round-robin victim, in [0, assoc)
}

func newTable(entries, assoc int) table {
	return table{
		slots:   pinned[slot](entries),
		assoc:   uint64(assoc),
		buckets: uint64(entries / assoc),
	}
}

// pinned allocates slots and writes every page, as DCPI's driver did with
// non-pageable kernel memory (sec. 5.3): otherwise the handler's first
// touch of each page takes the host's page fault, a microsecond that no
// real handler paid.
func pinned[T any](entries int) []T {
	s := make([]T, entries)
	var zero T
	perPage := max(1, 4096/int(unsafe.Sizeof(zero)))
	for i := 0; i < len(s); i += perPage {
		touch(&s[i])
	}
	return s
}

// touch writes *p (its own value back) through a pointer the compiler
// cannot prove unused.
//
//go:noinline
func touch[T any](p *T) { v := *p; *p = v }

// bucket returns the bucket of (pid, pc, event).
func (t *table) bucket(pid uint32, pc uint64, event uint8) []slot {
	i := bucketIndex(hashKey(pid, pc, event), t.buckets) * t.assoc
	return t.slots[i : i+t.assoc : i+t.assoc]
}

// drain appends every live entry to dst, clears the table, and returns
// the samples the entries held.
func (t *table) drain(dst []Entry) ([]Entry, uint64) {
	var n uint64
	for i := range t.slots {
		if s := t.slots[i]; s.live() {
			dst = append(dst, s.entry())
			n += uint64(s.count())
			t.slots[i] = slot{}
		}
	}
	return dst, n
}

// contents counts the live entries and the samples they hold.
func (t *table) contents() (entries int, samples uint64) {
	for _, s := range t.slots {
		if s.live() {
			entries++
			samples += uint64(s.count())
		}
	}
	return entries, samples
}

// The replacement policies' miss paths. Each puts the new entry s into
// bucket b and returns the entry it pushed out (a zero slot if it used an
// empty one), and the number of entries it moved, for the cost model.

// insertRoundRobin uses the bucket's first empty slot if there is one
// (after a flush most are), else the slot the round-robin counter names.
func (t *table) insertRoundRobin(b []slot, s slot) (victim slot, pos int) {
	for j := range b {
		if !b[j].live() {
			b[j] = s
			return slot{}, j
		}
	}
	v := t.rr
	if t.rr++; t.rr == t.assoc {
		t.rr = 0
	}
	victim, b[v] = b[v], s
	return victim, int(v)
}

// insertFront moves the bucket's entries down one place, up to its first
// empty slot or its last entry, which it evicts, and puts s first. Under
// swap-to-front the live entries of a bucket are always a prefix of it, so
// the first empty slot ends them.
func insertFront(b []slot, s slot) (victim slot, moved int) {
	e := len(b) - 1
	for j := range b {
		if !b[j].live() {
			e = j
			break
		}
	}
	victim = b[e]
	copy(b[1:e+1], b[:e])
	b[0] = s
	return victim, e
}
