package hotlist

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"dcpi/internal/bincodec"
	"dcpi/internal/testrand"
)

// zipfStream draws n values from a skewed distribution over k values, the
// shape of latencies and register values: a few frequent, many rare.
func zipfStream(r *rand.Rand, n, k int) []uint64 {
	z := rand.NewZipf(r, 1.3, 2, uint64(k-1))
	out := make([]uint64, n)
	for i := range out {
		out[i] = z.Uint64()*0x9e37 + 7 // spread, so values are not small indices
	}
	return out
}

func exact(vs []uint64) map[uint64]uint64 {
	m := map[uint64]uint64{}
	for _, v := range vs {
		m[v]++
	}
	return m
}

// TestOfferKeepsInvariants checks that a list stays sorted, bounded and
// consistent however many values it is offered.
func TestOfferKeepsInvariants(t *testing.T) {
	r := testrand.New(t)
	var l List
	vs := zipfStream(r, 50000, 500)
	for _, v := range vs {
		l.Offer(v, r)
		if len(l.Entries) > M {
			t.Fatalf("%d values listed", len(l.Entries))
		}
	}
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
	if l.N != uint64(len(vs)) || l.Shift == 0 {
		t.Fatalf("N %d shift %d after %d distinct-heavy samples", l.N, l.Shift, len(vs))
	}
}

// TestMergeAgainstExactCounts is the randomized check of merging: a stream
// is split among several lists (CPUs, hosts) of different τ, which are
// merged in a random order; over many trials the merged estimate τ·c of
// every frequent value averages to its exact count (unbiased: within 5
// standard errors of the mean), and every single trial's estimate lies
// within its binomial bound (6 standard deviations of Binomial(n, 1/τ)
// scaled by τ). A merge that added counts across different τ, or thinned
// the wrong list, fails the mean.
func TestMergeAgainstExactCounts(t *testing.T) {
	r := testrand.New(t)
	const trials = 300
	vs := zipfStream(r, 20000, 300)
	want := exact(vs)
	top := make([]uint64, 0, len(want))
	for v := range want {
		top = append(top, v)
	}
	slices.SortFunc(top, func(a, b uint64) int { return int(want[b]) - int(want[a]) })
	top = top[:5]

	sum := map[uint64]float64{}
	sumSq := map[uint64]float64{}
	for trial := range trials {
		// Split unevenly, so the parts reach different τ.
		parts := 2 + r.IntN(6)
		lists := make([]List, parts)
		for _, v := range vs {
			p := min(parts-1, int(math.Floor(math.Pow(r.Float64(), 2)*float64(parts))))
			lists[p].Offer(v, r)
		}
		for len(lists) > 1 {
			i := r.IntN(len(lists))
			j := (i + 1 + r.IntN(len(lists)-1)) % len(lists)
			m := Merge(&lists[i], &lists[j], r)
			if err := m.Check(); err != nil {
				t.Fatalf("trial %d: merged list: %v", trial, err)
			}
			lists[i] = m
			lists = slices.Delete(lists, j, j+1)
		}
		got := lists[0]
		if got.N != uint64(len(vs)) {
			t.Fatalf("trial %d: merged N %d, want %d", trial, got.N, len(vs))
		}
		tau := float64(got.Tau())
		for _, v := range top {
			n, est := float64(want[v]), float64(got.Estimate(v))
			sd := tau * math.Sqrt(n/tau*(1-1/tau))
			if math.Abs(est-n) > 6*sd+tau {
				t.Fatalf("trial %d: value %#x: estimate %.0f, exact %.0f, τ %.0f: beyond 6σ = %.0f", trial, v, est, n, tau, 6*sd)
			}
			sum[v] += est
			sumSq[v] += est * est
		}
	}
	for _, v := range top {
		n := float64(want[v])
		mean := sum[v] / trials
		variance := sumSq[v]/trials - mean*mean
		se := math.Sqrt(max(variance, 1) / trials)
		t.Logf("value %#x: exact %.0f, mean estimate %.1f (se %.1f)", v, n, mean, se)
		if math.Abs(mean-n) > 5*se {
			t.Errorf("value %#x: mean estimate %.1f over %d trials, exact %.0f: biased beyond 5 standard errors (%.1f)", v, mean, trials, n, se)
		}
	}
}

// TestMergeThinsTheSmallerTau checks the merge rule on a case small enough
// to reason about: a list at τ = 1 merged with one at τ = 8 is thinned to
// τ = 8 first, so the merged estimate of a value only the first list holds
// averages its exact count rather than eight times it.
func TestMergeThinsTheSmallerTau(t *testing.T) {
	r := testrand.New(t)
	a := List{N: 800, Entries: []Entry{{Value: 1, Count: 800}}}
	b := List{Shift: 3, N: 800, Entries: []Entry{{Value: 2, Count: 100}}}
	var total float64
	const trials = 2000
	for range trials {
		m := Merge(&a, &b, r)
		if m.Shift != 3 {
			t.Fatalf("merged τ = %d, want 8", m.Tau())
		}
		total += float64(m.Estimate(1))
	}
	if mean := total / trials; math.Abs(mean-800) > 10 {
		t.Fatalf("mean estimate of value 1: %.1f, want about 800", mean)
	}
}

func TestCodecRoundTrip(t *testing.T) {
	r := testrand.New(t)
	var l List
	for _, v := range zipfStream(r, 5000, 100) {
		l.Offer(v, r)
	}
	d := bincodec.NewDecoder(l.AppendBinary(nil), 0)
	got := Decode(d)
	d.End()
	if err := d.Err(); err != nil {
		t.Fatal(err)
	}
	if got.Shift != l.Shift || got.N != l.N || !slices.Equal(got.Entries, l.Entries) {
		t.Fatalf("round trip: got %+v, want %+v", got, l)
	}
}

func TestDecodeRejects(t *testing.T) {
	good := (&List{N: 3, Entries: []Entry{{1, 1}, {5, 2}}}).AppendBinary(nil)
	for name, b := range map[string][]byte{
		"empty":     nil,
		"truncated": good[:len(good)-1],
		"repeat":    {0, 3, 2, 1, 1, 0, 1},
		"zero":      {0, 3, 1, 1, 0},
		"over N":    {0, 1, 1, 1, 2},
		"tau":       {64, 0, 0},
	} {
		d := bincodec.NewDecoder(b, 0)
		Decode(d)
		if d.Err() == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add((&List{N: 3, Entries: []Entry{{1, 1}, {5, 2}}}).AppendBinary(nil))
	f.Add((&List{Shift: 4, N: 1000, Entries: []Entry{{0, 10}, {1 << 63, 20}}}).AppendBinary(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := bincodec.NewDecoder(b, 0)
		l := Decode(d)
		if d.Err() != nil {
			return
		}
		if err := l.Check(); err != nil {
			t.Fatalf("decoded an invalid list: %v", err)
		}
		again := l.AppendBinary(nil)
		d2 := bincodec.NewDecoder(again, 0)
		l2 := Decode(d2)
		if d2.Err() != nil || l2.N != l.N || l2.Shift != l.Shift || !slices.Equal(l2.Entries, l.Entries) {
			t.Fatalf("re-encoding does not round-trip: %v", d2.Err())
		}
	})
}
