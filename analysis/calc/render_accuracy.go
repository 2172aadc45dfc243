package calc

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// The paper's figures (sec. 6.2 and 6.3), printed beside ours.
const (
	paperWithin5, paperWithin10, paperWithin15 = 0.73, 0.87, 0.92
	paperEdgeWithin10                          = 0.58
	paperMaxUnexplained, paperAllUnexplained   = 0.10, 0.086
)

// worstCauses is how many culprit misses the text report lists.
const worstCauses = 10

// WriteText prints a's accuracy report: Figures 8 and 9 as
// tables, their shares beside the paper's, the culprit score with the
// worst misses, and the unexplained stall.
func (a *ReportAccuracy) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "dcpicalc against the ground truth: %s, %s CYCLES samples\n", plural(a.Procedures, "procedure"), num(a.Samples))
	for _, s := range a.Skipped {
		fmt.Fprintf(bw, "  skipped %s\n", s)
	}
	in, ed := &a.Freq.Insns, &a.Freq.Edges
	fmt.Fprintf(bw, "\nError of F·P against executions (Figure 8: instructions, weighted by CYCLES samples; Figure 9: CFG edges, weighted by executions)\n")
	fmt.Fprintf(bw, "  %-7s %12s %10s %12s\n", "error", "insn samples", "low conf.", "edge execs")
	for i := range NumBuckets {
		fmt.Fprintf(bw, "  %-7s %11.1f%% %9.1f%% %11.1f%%\n", BucketLabel(i), pct(in.Weight[i], in.Total()), pct(in.Low[i], in.Total()), pct(ed.Weight[i], ed.Total()))
	}
	fmt.Fprintf(bw, "  instructions within 5/10/15%%: %.1f%% / %.1f%% / %.1f%% of samples (paper: %.0f%% / %.0f%% / %.0f%%)\n",
		100*in.Within(0.05), 100*in.Within(0.10), 100*in.Within(0.15), 100*paperWithin5, 100*paperWithin10, 100*paperWithin15)
	low, beyond := in.LowBeyond(0.15)
	fmt.Fprintf(bw, "  beyond 15%%: %.1f%% of samples, %.1f%% of them low confidence (paper: nearly all)\n", 100*beyond, 100*low)
	if in.Unestimated > 0 {
		fmt.Fprintf(bw, "  without an estimate: %s samples (not in the histogram)\n", num(in.Unestimated))
	}
	fmt.Fprintf(bw, "  edges within 10%%: %.1f%% of executions (paper: %.0f%%)\n", 100*ed.Within(0.10), 100*paperEdgeWithin10)
	if ed.Unestimated > 0 {
		fmt.Fprintf(bw, "  edges without an estimate: %s executions (not in the histogram)\n", num(ed.Unestimated))
	}
	fmt.Fprintf(bw, "\nCulprits: %.1f%% of the truth's stall cycles lie in the reported range of their row (within %.0f points)\n",
		100*a.CulpritScore, 100*CulpritTolerance)
	if worst := a.WorstCauses(worstCauses); len(worst) > 0 {
		fmt.Fprintf(bw, "  worst misses:\n  %-28s %-20s %9s %17s\n", "procedure", "row", "truth", "reported")
		for _, c := range worst {
			fmt.Fprintf(bw, "  %-28s %-20s %8.1f%% %7.1f%% to %5.1f%%\n", c.Procedure, c.Row, 100*c.Measured, 100*c.Reported.Lo, 100*c.Reported.Hi)
		}
	}
	fmt.Fprintf(bw, "  summaries that withheld their culprits (low confidence): %.1f%% of the samples\n", 100*a.Withheld)
	fmt.Fprintf(bw, "  rows blamed (lower bound >= %.0f%%) that the truth gives under a third of it: %d\n", 100*BlameShare, len(a.Misblamed))
	for _, c := range a.Misblamed {
		fmt.Fprintf(bw, "  %-28s %-20s %8.1f%% %7.1f%% to %5.1f%%\n", c.Procedure, c.Row, 100*c.Measured, 100*c.Reported.Lo, 100*c.Reported.Hi)
	}
	fmt.Fprintf(bw, "\nUnexplained stall: at most %.1f%% of a procedure (%s), %.1f%% overall (paper: under %.0f%% of any procedure, %.1f%% overall)\n",
		100*a.MaxUnexplained.Share, orDash(a.MaxUnexplained.Procedure), 100*a.OverallUnexplained, 100*paperMaxUnexplained, 100*paperAllUnexplained)
	return bw.Flush()
}

func pct(x, total float64) float64 {
	if total == 0 {
		return 0
	}
	return 100 * x / total
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// HistogramJSON is an error histogram (Figure 8 or 9) as --json writes
// it: the buckets' labels, weights and low-confidence parts, and the shares
// derived from them.
type HistogramJSON struct {
	Buckets     []string  `json:"buckets"`
	Weight      []float64 `json:"weight"`
	Low         []float64 `json:"low"`
	Unestimated float64   `json:"unestimated"`
	Within5     float64   `json:"within_5"`
	Within10    float64   `json:"within_10"`
	Within15    float64   `json:"within_15"`
	LowBeyond15 float64   `json:"low_beyond_15"`
	Beyond15    float64   `json:"beyond_15"`
}

func histogramView(h *ErrorHistogram) HistogramJSON {
	v := HistogramJSON{Weight: h.Weight[:], Low: h.Low[:], Unestimated: h.Unestimated,
		Within5: h.Within(0.05), Within10: h.Within(0.10), Within15: h.Within(0.15)}
	v.LowBeyond15, v.Beyond15 = h.LowBeyond(0.15)
	for i := range NumBuckets {
		v.Buckets = append(v.Buckets, BucketLabel(i))
	}
	return v
}

type causeJSON struct {
	Procedure string  `json:"procedure"`
	Image     string  `json:"image"`
	Row       string  `json:"row"`
	Truth     float64 `json:"truth"`
	Cycles    float64 `json:"cycles"`
	Lo        float64 `json:"lo"`
	Hi        float64 `json:"hi"`
	In        bool    `json:"in"`
}

type unexplainedJSON struct {
	Procedure string  `json:"procedure"`
	Image     string  `json:"image"`
	Share     float64 `json:"share"`
	Samples   float64 `json:"samples"`
}

// ReportAccuracyJSON is the accuracy report as --json writes it; histograms
// weigh CYCLES samples (insns) and edge executions (edges), shares are
// fractions.
type ReportAccuracyJSON struct {
	Procedures         int               `json:"procedures"`
	Samples            float64           `json:"samples"`
	Skipped            []string          `json:"skipped"`
	Insns              HistogramJSON     `json:"insns"`
	Edges              HistogramJSON     `json:"edges"`
	CulpritScore       float64           `json:"culprit_score"`
	CulpritTolerance   float64           `json:"culprit_tolerance"`
	StallCycles        float64           `json:"stall_cycles"`
	Causes             []causeJSON       `json:"causes"`
	Unexplained        []unexplainedJSON `json:"unexplained"`
	MaxUnexplained     unexplainedJSON   `json:"max_unexplained"`
	OverallUnexplained float64           `json:"overall_unexplained"`
	Misblamed          []causeJSON       `json:"misblamed"`
	Withheld           float64           `json:"withheld"`
}

// JSON returns a's JSON form.
func (a *ReportAccuracy) JSON() ReportAccuracyJSON {
	v := ReportAccuracyJSON{Procedures: a.Procedures, Samples: a.Samples, Skipped: a.Skipped,
		Insns: histogramView(&a.Freq.Insns), Edges: histogramView(&a.Freq.Edges), CulpritScore: a.CulpritScore,
		CulpritTolerance: CulpritTolerance, StallCycles: a.StallCycles, OverallUnexplained: a.OverallUnexplained,
		Causes: []causeJSON{}, Unexplained: []unexplainedJSON{}}
	if v.Skipped == nil {
		v.Skipped = []string{}
	}
	for _, c := range a.Causes {
		v.Causes = append(v.Causes, causeJSON{c.Procedure, c.Image, c.Row, c.Measured, c.Cycles, c.Reported.Lo, c.Reported.Hi, c.In})
	}
	for _, u := range a.Unexplained {
		v.Unexplained = append(v.Unexplained, unexplainedJSON(u))
	}
	v.Misblamed, v.Withheld = []causeJSON{}, a.Withheld
	for _, c := range a.Misblamed {
		v.Misblamed = append(v.Misblamed, causeJSON{c.Procedure, c.Image, c.Row, c.Measured, c.Cycles, c.Reported.Lo, c.Reported.Hi, c.In})
	}
	v.MaxUnexplained = unexplainedJSON(a.MaxUnexplained)
	return v
}

// WriteJSON writes a as JSON (ReportAccuracyJSON).
func (a *ReportAccuracy) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(a.JSON())
}
