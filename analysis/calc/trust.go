package calc

import (
	"fmt"
	"sort"
	"strings"
)

// WithholdShare is the share of a procedure's tallied samples at low
// confidence from which its summary withholds the culprit rows: most of
// its cycles would be divided by frequencies that may be off by a factor,
// and a range printed from them would read as a finding.
const WithholdShare = 0.5

// Trust says how far a procedure's summary can be believed (sec. 6.1.5
// rates each estimate; DCPI printed the rating per block only, so a
// summary of mostly low-confidence blocks read as confident).
type Trust struct {
	// LowShare is the share of the tallied samples (Summary.Actual) in
	// blocks whose frequency is low confidence.
	LowShare float64
	// LowReason is the reason of the low-confidence class holding the
	// most samples, with its first block's address ("" when none).
	LowReason string
	// Withheld: LowShare >= WithholdShare, so the summary prints no
	// culprit rows (the numbers stay in the data, for --truth and JSON).
	Withheld bool
	// Measured is the share of the tallied samples whose frequency came
	// from ProfileMe's retire counts rather than the CYCLES heuristic.
	Measured float64
	// Latency is the share whose frequency a measured load latency
	// bounded (Method LoadLatency).
	Latency float64
	// Checks are what measured counts said of heuristic estimates they
	// checked without replacing, one per class (at most a few).
	Checks []string
}

// trust rates the explanation's tallied instructions by their classes'
// estimates.
func trust(p *Procedure, f *Frequencies, insns []InsnExplanation) Trust {
	var t Trust
	if f == nil || p == nil {
		return t
	}
	var actual, low, measured, latency float64
	lowBy := map[int]float64{} // class → low samples
	first := map[int]uint64{}  // class → its first instruction's PC
	seen := map[int]bool{}
	for i := range insns {
		in := &insns[i]
		if !in.Known || in.Block < 0 || in.Block >= len(p.CFG.Blocks) {
			continue
		}
		c := p.Classes.Node[in.Block]
		e := &f.Class[c]
		actual += in.S
		if _, ok := first[c]; !ok {
			first[c] = in.PC
		}
		switch e.Method {
		case ProfileMe:
			measured += in.S
		case LoadLatency:
			latency += in.S
		}
		if e.Confidence <= Low {
			low += in.S
			lowBy[c] += in.S
		}
		if e.Check != "" && e.Method != ProfileMe && e.Method != LoadLatency && !seen[c] && len(t.Checks) < 3 {
			seen[c] = true
			t.Checks = append(t.Checks, fmt.Sprintf("%#x: %s", first[c], e.Check))
		}
	}
	if actual <= 0 {
		return t
	}
	t.LowShare, t.Measured, t.Latency = low/actual, measured/actual, latency/actual
	var classes []int
	for c, s := range lowBy {
		if s > 0 {
			classes = append(classes, c)
		}
	}
	sort.Slice(classes, func(i, j int) bool {
		if lowBy[classes[i]] != lowBy[classes[j]] {
			return lowBy[classes[i]] > lowBy[classes[j]]
		}
		return first[classes[i]] < first[classes[j]]
	})
	if len(classes) > 0 {
		c := classes[0]
		r := f.Class[c].Reason
		if r == "" {
			r = "low confidence (" + f.Class[c].Method.String() + ")"
		}
		t.LowReason = fmt.Sprintf("the block at %#x (%.0f%% of the samples): %s", first[c], 100*lowBy[c]/actual, r)
		if len(classes) > 1 {
			t.LowReason += fmt.Sprintf("; %d more low-confidence classes", len(classes)-1)
		}
	}
	t.Withheld = t.LowShare >= WithholdShare
	return t
}

// freqSource names what a summary's frequencies came from.
func (t *Trust) freqSource() string {
	if t.Measured == 0 && t.Latency == 0 {
		return "frequencies estimated from CYCLES samples (sec. 6.1.3)"
	}
	var parts []string
	if t.Measured > 0 {
		parts = append(parts, fmt.Sprintf("ProfileMe retire counts for %.0f%% of the samples", 100*t.Measured))
	}
	if t.Latency > 0 {
		parts = append(parts, fmt.Sprintf("bounds from measured load latencies (value sampling) for %.0f%% of the samples", 100*t.Latency))
	}
	if rest := 1 - t.Measured - t.Latency; rest > 0.005 {
		parts = append(parts, fmt.Sprintf("the CYCLES heuristic for %.0f%% of the samples", 100*rest))
	}
	return "frequencies: " + strings.Join(parts, ", ")
}

// lines are the summary's lines about its own trust, before the rows.
func (t *Trust) lines() []string {
	out := []string{t.freqSource()}
	for _, c := range t.Checks {
		out = append(out, "check "+c)
	}
	if t.LowShare >= 0.01 {
		out = append(out, fmt.Sprintf("LOW CONFIDENCE for %.0f%% of the samples: %s", 100*t.LowShare, t.LowReason))
	}
	if t.Withheld {
		out = append(out, strings.Join([]string{
			"culprits withheld: their shares would divide most samples by frequencies that may be off by a factor.",
			"More samples (--hosts N, a longer run) or measured counts (dcpi profile --profileme) would decide them."}, " "))
	}
	return out
}
