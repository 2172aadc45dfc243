package calc

import (
	"math"
	"testing"
)

func TestBuckets(t *testing.T) {
	cases := []struct {
		e     float64
		label string
	}{
		{-0.99, "<-45%"}, {-0.4501, "<-45%"}, {-0.45, "-45%"}, {-0.15, "-15%"}, {-0.1001, "-15%"},
		{-0.10, "-10%"}, {-0.0001, "-5%"}, {0, "+0%"}, {0.0499, "+0%"}, {0.05, "+5%"},
		{0.4499, "+40%"}, {0.45, ">=45%"}, {math.Inf(1), ">=45%"}, {math.NaN(), ">=45%"},
	}
	for _, c := range cases {
		if got := BucketLabel(bucket(c.e)); got != c.label {
			t.Errorf("error %v in bucket %s, want %s", c.e, got, c.label)
		}
	}
}

func TestWithinAndLowBeyond(t *testing.T) {
	var h ErrorHistogram
	h.Add(0.01, 50, High)   // within 5%
	h.Add(-0.04, 20, High)  // within 5%
	h.Add(0.07, 10, Medium) // within 10%
	h.Add(-0.12, 5, Medium) // within 15%
	h.Add(0.30, 10, Low)    // beyond 15%
	h.Add(-0.9, 5, High)    // beyond 15%, confident
	h.Add(0.2, 0, Low)      // no weight: ignored
	if got := h.Total(); got != 100 {
		t.Fatalf("total %v, want 100", got)
	}
	for _, c := range []struct{ x, want float64 }{{0.05, 0.70}, {0.10, 0.80}, {0.15, 0.85}} {
		if got := h.Within(c.x); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Within(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	low, share := h.LowBeyond(0.15)
	if math.Abs(low-10.0/15) > 1e-12 || math.Abs(share-0.15) > 1e-12 {
		t.Errorf("LowBeyond(0.15) = %v, %v; want 2/3, 0.15", low, share)
	}
	var sum ErrorHistogram
	sum.Merge(&h)
	sum.Merge(&h)
	if sum.Total() != 200 || sum.Within(0.05) != h.Within(0.05) {
		t.Errorf("merged total %v within %v", sum.Total(), sum.Within(0.05))
	}
}
