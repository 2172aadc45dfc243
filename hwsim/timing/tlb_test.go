package timing

import (
	"math/rand/v2"
	"testing"

	"dcpi/internal/testrand"
)

func mustTLB(t testing.TB, n int, repl TLBReplacement) *TLB {
	t.Helper()
	tlb, err := NewTLB(n, repl)
	if err != nil {
		t.Fatal(err)
	}
	return tlb
}

func TestTLBCapacity(t *testing.T) {
	for _, repl := range []TLBReplacement{NotLastUsed, RoundRobin} {
		t.Run(repl.String(), func(t *testing.T) {
			tlb := mustTLB(t, 64, repl)
			for vpn := range uint64(64) {
				if tlb.Lookup(vpn, 1) {
					t.Fatalf("cold page %d hit", vpn)
				}
			}
			for vpn := range uint64(64) {
				if !tlb.Lookup(vpn, 1) {
					t.Fatalf("page %d of 64 missed in a 64-entry TLB", vpn)
				}
			}
			// 65 pages in a cycle: each replaces the page needed longest
			// from now, so every lookup misses.
			for i := range 65 * 4 {
				if vpn := uint64(64 + i%65); tlb.Lookup(vpn%65, 1) {
					t.Fatalf("lookup %d (page %d) hit cycling 65 pages", i, vpn%65)
				}
			}
			if s := tlb.Stats(); s.Lookups != 64*2+65*4 || s.Misses != 64+65*4 {
				t.Errorf("stats %+v", s)
			}
		})
	}
}

func TestTLBNotLastUsed(t *testing.T) {
	// Fill all 64 entries; the pointer is back at entry 0 (page 0). Use
	// page 0, then miss: not-last-used skips entry 0 and evicts page 1;
	// round-robin evicts page 0.
	tests := []struct {
		repl    TLBReplacement
		evicted uint64
	}{{NotLastUsed, 1}, {RoundRobin, 0}}
	for _, tt := range tests {
		tlb := mustTLB(t, 64, tt.repl)
		for vpn := range uint64(64) {
			tlb.Lookup(vpn, 0)
		}
		tlb.Lookup(0, 0)
		tlb.Lookup(100, 0)
		for vpn := range uint64(64) {
			if got, want := tlb.Probe(vpn, 0), vpn != tt.evicted; got != want {
				t.Errorf("%v: page %d present = %v, want %v", tt.repl, vpn, got, want)
			}
		}
	}
	// A one-entry TLB still replaces its only entry.
	tlb := mustTLB(t, 1, NotLastUsed)
	tlb.Lookup(1, 0)
	if tlb.Lookup(2, 0) || tlb.Probe(1, 0) || !tlb.Probe(2, 0) {
		t.Error("one-entry TLB did not replace its entry")
	}
}

func TestTLBASN(t *testing.T) {
	tlb := mustTLB(t, 48, NotLastUsed)
	tlb.Lookup(10, 1)
	tlb.Lookup(10, 2)
	tlb.Lookup(11, GlobalASN)
	if !tlb.Probe(10, 1) || !tlb.Probe(10, 2) || tlb.Probe(10, 3) {
		t.Fatal("ASNs not kept apart")
	}
	if tlb.Lookup(10, 2) != true {
		t.Fatal("hit under ASN 2 missed")
	}
	tlb.FlushASN(1)
	if tlb.Probe(10, 1) || !tlb.Probe(10, 2) || !tlb.Probe(11, GlobalASN) {
		t.Error("FlushASN(1) removed the wrong entries")
	}
	if tlb.Lookup(10, 1) {
		t.Error("flushed page hit")
	}
	if !tlb.FlushPage(10, 2) || tlb.FlushPage(10, 2) || tlb.Probe(10, 2) {
		t.Error("FlushPage")
	}
	if tlb.Lookup(10, 2) {
		t.Error("page flushed by FlushPage hit")
	}
	tlb.Flush()
	for _, k := range []struct {
		vpn uint64
		asn uint8
	}{{10, 1}, {10, 2}, {11, GlobalASN}} {
		if tlb.Probe(k.vpn, k.asn) {
			t.Errorf("page %d asn %d survived Flush", k.vpn, k.asn)
		}
	}
}

func TestNewTLBRejects(t *testing.T) {
	if _, err := NewTLB(0, NotLastUsed); err == nil {
		t.Error("0 entries accepted")
	}
	if _, err := NewTLB(2000, NotLastUsed); err == nil {
		t.Error("2000 entries accepted")
	}
	if _, err := NewTLB(8, 3); err == nil {
		t.Error("bad policy accepted")
	}
}

// linearTLB is the obvious TLB: an array scanned in order, with the same
// replacement. It is the model for the randomized test and the baseline
// for BenchmarkTLB.
type linearTLB struct {
	keys []uint64
	last int
	next int
	repl TLBReplacement
}

func newLinearTLB(n int, repl TLBReplacement) *linearTLB {
	return &linearTLB{keys: make([]uint64, n), last: -1, repl: repl}
}

func (l *linearTLB) find(k uint64) int {
	for i, e := range l.keys {
		if e == k {
			return i
		}
	}
	return -1
}

func (l *linearTLB) Lookup(vpn uint64, asn uint8) bool {
	k := tlbKey(vpn, asn)
	if i := l.find(k); i >= 0 {
		l.last = i
		return true
	}
	v := l.next
	if l.repl == NotLastUsed && v == l.last && len(l.keys) > 1 {
		v = (v + 1) % len(l.keys)
	}
	l.next = (v + 1) % len(l.keys)
	l.keys[v] = k
	l.last = v
	return false
}

func (l *linearTLB) flushASN(asn uint8) {
	for i, k := range l.keys {
		if k != 0 && uint8(k-1) == asn {
			l.keys[i] = 0
		}
	}
}

func (l *linearTLB) flushPage(vpn uint64, asn uint8) bool {
	if i := l.find(tlbKey(vpn, asn)); i >= 0 {
		l.keys[i] = 0
		return true
	}
	return false
}

// TestTLBAgainstModel runs random lookups and flushes on TLB and on
// linearTLB and compares every answer: the hash index, its deletions and
// the last-used shortcut must not change what hits.
func TestTLBAgainstModel(t *testing.T) {
	seed := testrand.Seed(t)
	for ci, cfg := range []struct {
		n     int
		repl  TLBReplacement
		pages uint64
	}{{64, NotLastUsed, 80}, {48, NotLastUsed, 200}, {64, RoundRobin, 70}, {5, NotLastUsed, 9}, {1, RoundRobin, 3}} {
		r := rand.New(rand.NewPCG(seed, uint64(ci)))
		tlb := mustTLB(t, cfg.n, cfg.repl)
		m := newLinearTLB(cfg.n, cfg.repl)
		for step := range 200_000 {
			vpn := r.Uint64N(cfg.pages)
			if r.IntN(8) == 0 {
				vpn += r.Uint64N(1<<40) << 10 // far pages hashing anywhere
			}
			asn := uint8(r.IntN(3))
			switch k := r.IntN(1000); {
			case k < 2:
				tlb.FlushASN(asn)
				m.flushASN(asn)
			case k < 10:
				if got, want := tlb.FlushPage(vpn, asn), m.flushPage(vpn, asn); got != want {
					t.Fatalf("config %d step %d: FlushPage(%d, %d) = %v, model %v", ci, step, vpn, asn, got, want)
				}
			default:
				if got, want := tlb.Lookup(vpn, asn), m.Lookup(vpn, asn); got != want {
					t.Fatalf("config %d step %d: Lookup(%d, %d) = %v, model %v", ci, step, vpn, asn, got, want)
				}
			}
		}
	}
}
