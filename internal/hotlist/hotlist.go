// Package hotlist owns the Gibbons-Matias hot list of DCPI value sampling
// (Burrows et al.): a bounded sample of one (PC, value type)'s values that
// estimates every frequent value's count without bias, and the merge that
// keeps it unbiased across CPUs, hosts and epochs. The driver, the daemon,
// the aggregator and the profile database all keep lists in this form and
// merge them with Merge; nothing here knows what the values mean.
//
// The list is Gibbons and Matias's concise sample, which is what the
// paper's description — insert with probability 1/τ, thin by coin tosses
// when over m entries, τ·c unbiased — defines: each occurrence of a value
// is counted with probability 1/τ, whether or not the value is already
// listed, so a value's count c is Binomial(n, 1/τ) and τ·c estimates its n
// without bias. When more than m values are listed, τ rises to τ' and every
// count is replaced by the heads in c tosses of a coin with p = τ/τ', which
// leaves c Binomial(n, 1/τ'); values left at 0 leave the list. Two lists
// merge the same way: the one with the smaller τ is thinned to the larger
// first, and then the counts add (a sum of binomials with one p is
// binomial), never before — adding counts across different τ would weigh
// the smaller-τ list's values too much.
//
// The paper's text lost its digits, so the parameters are chosen here: τ is
// a power of two, starting at 1, and doubles at each raise (τ' = 2τ: each
// toss is one random bit, and a raise halves the list's expected counts);
// m, the entries a list may keep, is M = 16 (the paper saw sixteen
// distinct latencies for one load). A list's memory is then at most M
// entries of 16 bytes plus its header: 272 bytes.
package hotlist

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
)

// M is the number of values a list keeps (Gibbons-Matias's m).
const M = 16

// MaxShift bounds log2 τ: past it no value could ever be counted again.
const MaxShift = 63

// Coins is a source of random bits (math/rand/v2.Source satisfies it).
type Coins interface {
	Uint64() uint64
}

// Entry is one listed value and its count: Count·τ estimates how often it
// occurred.
type Entry struct {
	Value uint64
	Count uint64
}

// List is one (PC, value type)'s hot list. The zero List is empty, τ = 1.
type List struct {
	// Shift is log2 τ: an occurrence is counted with probability 2^-Shift.
	Shift uint8
	// N counts every occurrence offered, counted or not: the samples.
	N uint64
	// Entries are the listed values, sorted by Value, every Count > 0, at
	// most M of them.
	Entries []Entry
}

// Tau is τ.
func (l *List) Tau() uint64 { return 1 << l.Shift }

// Estimate is τ·c for v: an unbiased estimate of v's occurrences.
func (l *List) Estimate(v uint64) uint64 {
	if i, ok := l.find(v); ok {
		return l.Entries[i].Count << l.Shift
	}
	return 0
}

func (l *List) find(v uint64) (int, bool) {
	return slices.BinarySearchFunc(l.Entries, v, func(e Entry, v uint64) int {
		switch {
		case e.Value < v:
			return -1
		case e.Value > v:
			return 1
		}
		return 0
	})
}

// Offer counts one occurrence of v with probability 1/τ. It allocates
// nothing once Entries has capacity M+1.
func (l *List) Offer(v uint64, coins Coins) {
	l.N++
	if l.Shift > 0 && coins.Uint64()&(1<<l.Shift-1) != 0 {
		return
	}
	i, ok := l.find(v)
	if ok {
		l.Entries[i].Count++
		return
	}
	l.Entries = slices.Insert(l.Entries, i, Entry{Value: v, Count: 1})
	l.reduce(coins)
}

// reduce raises τ until at most M values are listed.
func (l *List) reduce(coins Coins) {
	for len(l.Entries) > M && l.Shift < MaxShift {
		l.thin(1, coins)
	}
}

// thin raises Shift by k, keeping each counted occurrence with probability
// 2^-k (k halvings: the product of binomial thinnings is one), and drops
// the values left at 0.
func (l *List) thin(k uint8, coins Coins) {
	for range k {
		out := l.Entries[:0]
		for _, e := range l.Entries {
			if e.Count = halve(e.Count, coins); e.Count > 0 {
				out = append(out, e)
			}
		}
		l.Entries = out
		l.Shift++
	}
}

// halve returns the heads in c tosses of a fair coin: Binomial(c, 1/2).
func halve(c uint64, coins Coins) uint64 {
	var heads uint64
	for ; c >= 64; c -= 64 {
		heads += uint64(bits.OnesCount64(coins.Uint64()))
	}
	if c > 0 {
		heads += uint64(bits.OnesCount64(coins.Uint64() & (1<<c - 1)))
	}
	return heads
}

// Merge returns the merge of a and b, as if one list had been offered
// every occurrence of both: the list with the smaller τ is thinned to the
// other's first, counts then add, and τ rises while more than M values are
// listed. Neither argument is changed.
func Merge(a, b *List, coins Coins) List {
	x, y := a.Clone(), b.Clone()
	if x.Shift < y.Shift {
		x.thin(y.Shift-x.Shift, coins)
	} else if y.Shift < x.Shift {
		y.thin(x.Shift-y.Shift, coins)
	}
	out := List{Shift: x.Shift, N: x.N + y.N, Entries: make([]Entry, 0, len(x.Entries)+len(y.Entries))}
	i, j := 0, 0
	for i < len(x.Entries) || j < len(y.Entries) {
		switch {
		case j == len(y.Entries) || i < len(x.Entries) && x.Entries[i].Value < y.Entries[j].Value:
			out.Entries = append(out.Entries, x.Entries[i])
			i++
		case i == len(x.Entries) || y.Entries[j].Value < x.Entries[i].Value:
			out.Entries = append(out.Entries, y.Entries[j])
			j++
		default:
			out.Entries = append(out.Entries, Entry{Value: x.Entries[i].Value, Count: x.Entries[i].Count + y.Entries[j].Count})
			i, j = i+1, j+1
		}
	}
	out.reduce(coins)
	return out
}

// Clone returns a deep copy of l.
func (l *List) Clone() List {
	return List{Shift: l.Shift, N: l.N, Entries: slices.Clone(l.Entries)}
}

// ErrInvalid is wrapped by every error of Check.
var ErrInvalid = errors.New("invalid hot list")

// Check reports the first broken invariant of l, for decoders.
func (l *List) Check() error {
	if l.Shift > MaxShift {
		return fmt.Errorf("hotlist: τ = 2^%d: %w: at most 2^%d", l.Shift, ErrInvalid, MaxShift)
	}
	if len(l.Entries) > M {
		return fmt.Errorf("hotlist: %d values: %w: at most %d", len(l.Entries), ErrInvalid, M)
	}
	var counted uint64
	for i, e := range l.Entries {
		if e.Count == 0 {
			return fmt.Errorf("hotlist: value %#x: %w: count 0", e.Value, ErrInvalid)
		}
		if i > 0 && l.Entries[i-1].Value >= e.Value {
			return fmt.Errorf("hotlist: value %#x after %#x: %w: not sorted", e.Value, l.Entries[i-1].Value, ErrInvalid)
		}
		if counted += e.Count; counted < e.Count || counted > l.N {
			return fmt.Errorf("hotlist: counts exceed the %d samples: %w", l.N, ErrInvalid)
		}
	}
	return nil
}

// Coin is a deterministic Coins for merges that every replica must repeat
// alike (the profile database applies the same log everywhere): SplitMix64
// from a seed derived from what is merged.
type Coin struct{ state uint64 }

// NewCoin returns a Coin seeded with seed.
func NewCoin(seed uint64) *Coin { return &Coin{state: seed} }

// Uint64 returns the next 64 random bits.
func (c *Coin) Uint64() uint64 {
	c.state += 0x9e3779b97f4a7c15
	z := c.state
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// Seed hashes lists into a seed for a Coin (FNV-1a over their contents),
// so a merge's coin tosses are a function of its inputs.
func Seed(lists ...*List) uint64 {
	h := uint64(14695981039346656037)
	mix := func(v uint64) {
		for range 8 {
			h ^= v & 0xff
			h *= 1099511628211
			v >>= 8
		}
	}
	for _, l := range lists {
		mix(uint64(l.Shift))
		mix(l.N)
		for _, e := range l.Entries {
			mix(e.Value)
			mix(e.Count)
		}
	}
	return h
}
