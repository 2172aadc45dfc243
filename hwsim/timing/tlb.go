package timing

import "fmt"

// TLBReplacement is how a TLB chooses the entry a miss replaces.
type TLBReplacement uint8

// TLB replacement policies.
const (
	// NotLastUsed is a round-robin pointer that skips the entry used by
	// the most recent lookup, so a miss never evicts the translation just
	// used. This is the 21164's scheme as recalled from its hardware
	// reference manual (not verified in a source available here).
	NotLastUsed TLBReplacement = iota
	// RoundRobin replaces entries in turn, whatever was used last.
	RoundRobin
)

func (r TLBReplacement) valid() bool { return r <= RoundRobin }

func (r TLBReplacement) String() string {
	switch r {
	case NotLastUsed:
		return "not-last-used"
	case RoundRobin:
		return "round-robin"
	}
	return fmt.Sprintf("TLBReplacement(%d)", uint8(r))
}

// GlobalASN is the address-space number to look up pages mapped in every
// address space (the Alpha's ASM bit: Linux's kernel pages). Entries made
// with it match only lookups with it, and FlushASN of another ASN keeps
// them. The 21164's ASNs are 7 bits (EK-SWRA2 4.1.1: MAX_ASN = 127), so
// 255 is free.
const GlobalASN uint8 = 0xff

const maxTLBEntries = 1024

// TLBStats counts lookups and the misses among them.
type TLBStats struct {
	Lookups, Misses uint64
}

// TLB is a fully associative translation buffer of page numbers tagged with
// an address-space number, so a context switch need not flush it. It holds
// no translations, only which pages it has: Lookup answers hit or miss and
// inserts on a miss.
//
// Entries are found through a small open-addressed hash index (linear
// probing, at most half full, backward-shift deletion), and the entry used
// last is checked first, so a lookup costs a few nanoseconds where a scan
// of 64 entries costs tens (BenchmarkTLB compares the two).
type TLB struct {
	keys    []uint64 // per entry: key+1, 0 when empty
	index   []uint16 // entry+1, 0 when empty; power-of-two length
	ishift  uint     // 64 - log2(len(index))
	imask   uint64
	last    int    // the entry of the latest hit or insertion, -1 none
	lastKey uint64 // its key+1, 0 none
	next    int    // the replacement pointer
	repl    TLBReplacement
	stats   TLBStats
}

// NewTLB returns an empty TLB of n entries.
func NewTLB(n int, repl TLBReplacement) (*TLB, error) {
	if n < 1 || n > maxTLBEntries {
		return nil, fmt.Errorf("%w: TLB of %d entries: want 1 to %d", ErrInvalidParams, n, maxTLBEntries)
	}
	if !repl.valid() {
		return nil, fmt.Errorf("%w: TLB replacement %v", ErrInvalidParams, repl)
	}
	size := 4
	for size < 2*n {
		size *= 2
	}
	return &TLB{
		keys:   make([]uint64, n),
		index:  make([]uint16, size),
		ishift: 64 - log2(size),
		imask:  uint64(size - 1),
		last:   -1,
		repl:   repl,
	}, nil
}

// Entries returns the TLB's size.
func (t *TLB) Entries() int { return len(t.keys) }

// Stats returns the lookup and miss counts.
func (t *TLB) Stats() TLBStats { return t.stats }

// tlbKey packs a page number and ASN, plus one so that zero means empty.
// Page numbers of 64-bit addresses with pages of 1 KB or more fit in 54
// bits.
func tlbKey(vpn uint64, asn uint8) uint64 { return (vpn<<8 | uint64(asn)) + 1 }

func (t *TLB) home(k uint64) uint64 { return (k * 0x9e3779b97f4a7c15) >> t.ishift }

// Lookup reports whether the page vpn of address space asn is in the TLB,
// inserting it on a miss.
func (t *TLB) Lookup(vpn uint64, asn uint8) bool {
	k := tlbKey(vpn, asn)
	return t.fastHit(k) || t.lookup(k)
}

// fastHit counts and reports a lookup of the key used last, which always
// hits; false means only that the caller must call lookup. It is small
// enough to be inlined into the hot paths of Hierarchy.
func (t *TLB) fastHit(k uint64) bool {
	if k == t.lastKey {
		t.stats.Lookups++
		return true
	}
	return false
}

// lookup counts and does a lookup of key k, inserting it on a miss.
func (t *TLB) lookup(k uint64) bool {
	t.stats.Lookups++
	if e := t.find(k); e >= 0 {
		t.last, t.lastKey = e, k
		return true
	}
	t.stats.Misses++
	t.insert(k)
	return false
}

// Probe reports whether the page is in the TLB, changing nothing.
func (t *TLB) Probe(vpn uint64, asn uint8) bool { return t.find(tlbKey(vpn, asn)) >= 0 }

// find returns the entry holding key k, or -1.
func (t *TLB) find(k uint64) int {
	for i := t.home(k); ; i = (i + 1) & t.imask {
		s := t.index[i]
		if s == 0 {
			return -1
		}
		if t.keys[s-1] == k {
			return int(s - 1)
		}
	}
}

func (t *TLB) insert(k uint64) {
	n := len(t.keys)
	v := t.next
	if t.repl == NotLastUsed && v == t.last && n > 1 {
		v = (v + 1) % n
	}
	t.next = (v + 1) % n
	if old := t.keys[v]; old != 0 {
		t.unindex(old)
	}
	t.keys[v] = k
	i := t.home(k)
	for t.index[i] != 0 {
		i = (i + 1) & t.imask
	}
	t.index[i] = uint16(v + 1)
	t.last, t.lastKey = v, k
}

// unindex removes key k, which must be present, from the index, shifting
// later members of its probe run back so that no lookup stops early.
func (t *TLB) unindex(k uint64) {
	i := t.home(k)
	for t.keys[t.index[i]-1] != k {
		i = (i + 1) & t.imask
	}
	for {
		t.index[i] = 0
		j := i
		for {
			j = (j + 1) & t.imask
			s := t.index[j]
			if s == 0 {
				return
			}
			// The entry at j may move back to i unless its home lies
			// cyclically in (i, j].
			h := t.home(t.keys[s-1])
			if i <= j {
				if i < h && h <= j {
					continue
				}
			} else if h > i || h <= j {
				continue
			}
			t.index[i] = s
			i = j
			break
		}
	}
}

// FlushPage removes one page's entry (a TBIS) and reports whether it was
// present.
func (t *TLB) FlushPage(vpn uint64, asn uint8) bool {
	k := tlbKey(vpn, asn)
	e := t.find(k)
	if e < 0 {
		return false
	}
	t.unindex(k)
	t.keys[e] = 0
	if t.lastKey == k {
		t.lastKey = 0
	}
	return true
}

// FlushASN removes every entry of address space asn (a TBIAP), as when an
// ASN is reused for another process.
func (t *TLB) FlushASN(asn uint8) {
	for e, k := range t.keys {
		if k != 0 && uint8(k-1) == asn {
			t.keys[e] = 0
		}
	}
	t.reindex()
}

// Flush empties the TLB (a TBIA).
func (t *TLB) Flush() {
	clear(t.keys)
	clear(t.index)
	t.last, t.lastKey, t.next = -1, 0, 0
}

func (t *TLB) reindex() {
	clear(t.index)
	for e, k := range t.keys {
		if k == 0 {
			continue
		}
		i := t.home(k)
		for t.index[i] != 0 {
			i = (i + 1) & t.imask
		}
		t.index[i] = uint16(e + 1)
	}
	if t.lastKey != 0 && t.find(t.lastKey) < 0 {
		t.lastKey = 0
	}
}
