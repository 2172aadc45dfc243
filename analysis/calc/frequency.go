package calc

import "fmt"

// Confidence is how far a frequency estimate is to be trusted (sec. 6.1.5).
type Confidence uint8

// Confidences, worst first.
const (
	NoEstimate Confidence = iota // no frequency could be estimated
	Low
	Medium
	High
)

var confidenceNames = [...]string{"none", "low", "medium", "high"}

func (c Confidence) String() string {
	if int(c) < len(confidenceNames) {
		return confidenceNames[c]
	}
	return fmt.Sprintf("confidence(%d)", uint8(c))
}

// Method is how a class's frequency was estimated.
type Method uint8

// Methods.
const (
	NotEstimated Method = iota
	// Ratios: the average of a cluster of small S_i/M_i ratios of the
	// class's issue points (sec. 6.1.3).
	Ratios
	// FewSamples: used when the class has too few samples for ratios
	// (sec. 6.1.3): the paper's ΣS_i/ΣM_i over the class's instructions
	// lowered to the F that the issue points not stalled at it support
	// (see EstimateFrequencies).
	FewSamples
	// Propagated: from the flow constraints of the CFG (sec. 6.1.4).
	Propagated
	// NoSamples: the class holds instructions but none was sampled; its
	// frequency is taken as 0.
	NoSamples
	// ProfileMe: measured, not estimated: the class's ProfileMe retire
	// samples times the sampling interval S (the ProfileMe paper, sec.
	// 5.1: E[kS] = N), over its instructions.
	ProfileMe
	// SampleBound: the least frequency the class's CYCLES samples allow
	// (see EstimateFrequencies): samples never sit on code estimated not
	// to run.
	SampleBound
	// LoadLatency: the heuristic's F lowered to the bound the measured
	// latency of a load its class waits for allows (value sampling; see
	// EstimateFrequencies).
	LoadLatency
)

var methodNames = [...]string{"none", "ratios", "few-samples", "propagated", "no-samples", "profileme", "sample-bound", "load-latency"}

func (m Method) String() string {
	if int(m) < len(methodNames) {
		return methodNames[m]
	}
	return fmt.Sprintf("method(%d)", uint8(m))
}

// Ratio is one issue point's ratio S/M (Figure 7's last column). For an
// issue point that depends on an earlier instruction j of its block, S
// and M are summed over the instructions after j up to it (sec. 6.1.3's
// dependence-spanning ratio) and From is the first of them; otherwise
// From == PC.
type Ratio struct {
	PC, From uint64
	S, M     float64
	// Used marks the ratios averaged into the estimate (Figure 7's stars).
	Used bool
}

// Value returns S/M.
func (r Ratio) Value() float64 { return r.S / r.M }

// ClassEstimate is the frequency estimate of one frequency equivalence
// class: every block and edge in it executes F times per P cycles.
type ClassEstimate struct {
	F          float64
	Method     Method
	Confidence Confidence
	// IssuePoints counts the class's issue points (M > 0).
	IssuePoints int
	// Ratios are the issue points' ratios in address order (empty unless
	// Method is Ratios or FewSamples).
	Ratios []Ratio
	// Caveat says why Confidence is low where the rules of sec. 6.1.5
	// alone would rate the estimate higher ("" if they did not).
	Caveat string
	// Reason says, when Confidence is Low, what the estimate rests on
	// ("frequency rests on 1 of 2 issue points; ..."), for the listing
	// and the summary: a low estimate is never shown without it.
	Reason string
	// Check is what measured counts said of a heuristic estimate they
	// did not replace ("ProfileMe agrees: ..."), "" when there were none.
	Check string
	// MeSamples are the ProfileMe retire samples over the class's
	// instructions (0 without ProfileMe).
	MeSamples float64
}

// Known reports whether the class has an estimate.
func (c *ClassEstimate) Known() bool { return c.Method != NotEstimated }

// Frequencies are the estimates of every class of a Procedure.
type Frequencies struct {
	// Class is indexed by class number (Procedure.Classes).
	Class []ClassEstimate
	p     *Procedure
}

// Block returns the estimate of block (node) b, Entry and Exit included.
func (f *Frequencies) Block(b int) *ClassEstimate { return &f.Class[f.p.Classes.Node[b]] }

// Edge returns the estimate of CFG edge e.
func (f *Frequencies) Edge(e int) *ClassEstimate { return &f.Class[f.p.Classes.Edge[e]] }
