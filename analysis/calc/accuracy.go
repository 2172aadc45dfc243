package calc

import (
	"fmt"
	"math"
)

// Accuracy is how dcpicalc's frequency estimates compare with measured
// execution counts (the paper's sec. 6.2, Figures 8 and 9): errors of F·P
// against the count, in a histogram of 5%-wide buckets, weighted by CYCLES
// samples for instructions (Figure 8) and by executions for edges
// (Figure 9). The measured counts come from the caller (hwsim's ground
// truth); nothing in the estimator reads them.
type Accuracy struct {
	Insns, Edges ErrorHistogram
}

// ErrorHistogram is a weighted histogram of relative errors e = estimate /
// actual - 1 in the paper's buckets: the bucket labelled -15% holds
// 0.85 <= estimate/actual < 0.90, and the two ends hold everything beyond
// ±45%.
type ErrorHistogram struct {
	// Weight[i] is the weight of bucket i (BucketLabel(i)); Low[i] the part
	// of it whose estimate had low (or no) confidence.
	Weight, Low [NumBuckets]float64
	// Unestimated is the weight of members no frequency was estimated for.
	Unestimated float64
}

// The buckets: -45% (and below) to +45% (and above), 5% apart.
const (
	NumBuckets   = 20
	bucketWidth  = 0.05
	lowestBucket = -0.45
)

// BucketLabel names bucket i as the paper's x-axis does ("<-45%", "-15%",
// "0%", ">45%").
func BucketLabel(i int) string {
	switch {
	case i <= 0:
		return "<-45%"
	case i >= NumBuckets-1:
		return ">=45%"
	}
	return fmt.Sprintf("%+d%%", int(math.Round((lowestBucket+float64(i-1)*bucketWidth)*100)))
}

// bucket returns the bucket of relative error e.
func bucket(e float64) int {
	switch {
	case math.IsNaN(e) || e >= -lowestBucket:
		return NumBuckets - 1
	case e < lowestBucket:
		return 0
	}
	i := int(math.Floor((e-lowestBucket)/bucketWidth+1e-9)) + 1
	return max(0, min(i, NumBuckets-1))
}

// Add counts an estimate of relative error e with weight w and confidence c.
func (h *ErrorHistogram) Add(e, w float64, c Confidence) {
	if w <= 0 {
		return
	}
	i := bucket(e)
	h.Weight[i] += w
	if c <= Low {
		h.Low[i] += w
	}
}

// Total returns the weight of every estimated member.
func (h *ErrorHistogram) Total() float64 {
	var t float64
	for _, w := range h.Weight {
		t += w
	}
	return t
}

// Within returns the share of the estimated weight whose error is less
// than x in magnitude, for x a multiple of 5% (0.05, 0.10, 0.15): the
// paper's "73% within 5%" is Within(0.05) = 0.73.
func (h *ErrorHistogram) Within(x float64) float64 {
	t := h.Total()
	if t == 0 {
		return 0
	}
	var in float64
	for i := 1; i < NumBuckets-1; i++ {
		lo := lowestBucket + float64(i-1)*bucketWidth
		if lo >= -x-1e-9 && lo+bucketWidth <= x+1e-9 {
			in += h.Weight[i]
		}
	}
	return in / t
}

// LowBeyond returns, of the weight whose error is x or more in magnitude,
// the share marked low confidence (the paper: "nearly all samples whose
// estimates are off by more than 15% are marked low confidence"), and that
// weight's share of the total.
func (h *ErrorHistogram) LowBeyond(x float64) (lowShare, share float64) {
	var out, low float64
	for i := range NumBuckets {
		lo := lowestBucket + float64(i-1)*bucketWidth
		if i == 0 || i == NumBuckets-1 || lo+bucketWidth <= -x+1e-9 || lo >= x-1e-9 {
			out += h.Weight[i]
			low += h.Low[i]
		}
	}
	if out == 0 {
		return 0, 0
	}
	return low / out, out / h.Total()
}

// Merge adds o's weights to h's.
func (h *ErrorHistogram) Merge(o *ErrorHistogram) {
	for i := range NumBuckets {
		h.Weight[i] += o.Weight[i]
		h.Low[i] += o.Low[i]
	}
	h.Unestimated += o.Unestimated
}

// relErr is estimate/actual - 1, +Inf for an estimate of something that
// never ran.
func relErr(estimate, actual float64) float64 {
	if actual == 0 {
		if estimate == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return estimate/actual - 1
}

// Measured is what really happened in one procedure, from outside the
// estimator: how often each instruction and each CFG edge executed.
type Measured struct {
	// Executed returns pc's execution count.
	Executed func(pc uint64) uint64
	// Edge returns CFG edge e's execution count, ok false when the
	// measurement cannot tell (such edges are left out of Figure 9).
	Edge func(e int) (n uint64, ok bool)
}

// AddAccuracy adds the errors of x's estimates against m to a: every
// instruction with CYCLES samples (weighted by them), every edge that
// executed (weighted by its count). period is the CYCLES sampling period P
// that turns a frequency into executions.
func (a *Accuracy) AddAccuracy(x *Explanation, m Measured, period float64) {
	for i := range x.Insns {
		in := &x.Insns[i]
		if in.S <= 0 {
			continue
		}
		if !in.Known {
			a.Insns.Unestimated += in.S
			continue
		}
		a.Insns.Add(relErr(in.F*period, float64(m.Executed(in.PC))), in.S, in.Confidence)
	}
	if m.Edge == nil || x.Freq == nil {
		return
	}
	for e := range x.Proc.CFG.Edges {
		n, ok := m.Edge(e)
		if !ok || n == 0 {
			continue
		}
		est := x.Freq.Edge(e)
		if !est.Known() {
			a.Edges.Unestimated += float64(n)
			continue
		}
		a.Edges.Add(relErr(est.F*period, float64(n)), float64(n), est.Confidence)
	}
}
