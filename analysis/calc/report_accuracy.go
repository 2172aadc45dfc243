package calc

import (
	"fmt"
	"slices"
	"strings"

	"dcpi/analysis"
	"dcpi/hwsim/alpha"
)

// CulpritTolerance is how far outside a reported range [Lo, Hi] a
// measured share may lie and still count as inside it (two points of the
// procedure's cycles).
const CulpritTolerance = 0.02

// UnexplainedMinShare is the share of the report's CYCLES samples a
// procedure needs for its unexplained stall to count in the maximum: the
// share of a procedure of a few samples is noise.
const UnexplainedMinShare = 0.01

// ReportAccuracy is dcpicalc's report held to hwsim's ground truth (the
// paper's sec. 6.2 and Figure 10's question "were the culprits right?"):
// the truth is read after the estimator ran, never by it.
type ReportAccuracy struct {
	// Procedures are the procedures compared (those with executions in the
	// truth), Samples their CYCLES samples.
	Procedures int
	Samples    float64
	// Skipped are the procedures of the report left out, each with why.
	Skipped []string
	// Freq are Figures 8 and 9: F·P against the truth's executions of
	// each instruction (weighted by CYCLES samples) and of each CFG edge
	// (weighted by its executions).
	Freq Accuracy
	// Causes are every compared procedure's Figure 4 rows held to the
	// truth's stall cycles (CompareCauses), rows with no measured
	// stall and an empty range left out.
	Causes []ProcCauseCheck
	// CulpritScore is the share of the truth's stall cycles (rows of
	// Causes) whose measured share lies inside the reported range, within
	// CulpritTolerance; StallCycles those cycles.
	CulpritScore float64
	StallCycles  float64
	// Unexplained are the procedures' unexplained stall shares (Figure 4's
	// row), in report order; MaxUnexplained the largest among procedures
	// with at least UnexplainedMinShare of the samples, and
	// OverallUnexplained the sample-weighted share over all of them.
	Unexplained        []ProcUnexplained
	MaxUnexplained     ProcUnexplained
	OverallUnexplained float64
	// Misblamed are the rows a printed summary blames (not withheld, a
	// lower bound of at least BlameShare) that the truth gives under a
	// third of that bound: the summary names a cause that is not there.
	Misblamed []ProcCauseCheck
	// Withheld is the share of Samples in procedures whose summary
	// withheld its culprit rows (Trust.Withheld).
	Withheld float64
}

// BlameShare is the least lower bound of a Figure 4 row that reads as
// the summary blaming its cause.
const BlameShare = 0.10

// ProcCauseCheck is one procedure's Figure 4 row against the truth.
type ProcCauseCheck struct {
	Procedure, Image string
	CauseCheck
	// Head is the truth's cycles the share is of: the procedure's
	// instructions with a frequency, at the head of the issue queue.
	Head float64
	// In is whether the measured share lies in the range, within
	// CulpritTolerance.
	In bool
}

// ProcUnexplained is one procedure's unexplained stall.
type ProcUnexplained struct {
	Procedure, Image string
	Share            float64 // of its tallied samples
	Samples          float64 // its CYCLES samples tallied
}

// CompareReport holds r's estimates to truth (hwsim's ground truth by image
// path, as hwsim.ReadGroundTruth returns it). Procedures of images the
// truth does not hold, or without an executed instruction in it, are
// skipped; when that leaves none, the error says why (a truth file of
// another program, run or build).
func CompareReport(r *Report, truth map[string]*alpha.GroundTruth) (*ReportAccuracy, error) {
	a := &ReportAccuracy{}
	var unexplained, tallied float64
	missingImages := map[string]bool{}
	for i := range r.Procedures {
		p := &r.Procedures[i]
		x := p.Explanation
		g := truth[p.Image]
		if g == nil {
			missingImages[p.Image] = true
			a.Skipped = append(a.Skipped, fmt.Sprintf("%s in %s: the truth has no image %s", p.Procedure, p.Image, p.Image))
			continue
		}
		ran := false
		var head float64
		var stall [alpha.NumStallCauses]float64
		for _, in := range x.Insns {
			t := g.PCs[in.PC]
			if t == nil {
				continue
			}
			ran = ran || t.Executed > 0
			if !in.Known {
				continue
			}
			head += float64(t.HeadCycles)
			for c, n := range t.Stall {
				stall[c] += float64(n)
			}
		}
		if !ran {
			a.Skipped = append(a.Skipped, fmt.Sprintf("%s in %s: no instruction of it executed in the truth", p.Procedure, p.Image))
			continue
		}
		a.Procedures++
		a.Samples += p.Samples[alpha.EvCycles.String()]
		a.Freq.AddAccuracy(x, MeasuredFrom(x.Proc.CFG, TruthTransfers(g)), p.Periods[alpha.EvCycles.String()])
		if x.Summary.Trust.Withheld {
			a.Withheld += p.Samples[alpha.EvCycles.String()]
		}
		for _, c := range CompareCauses(&x.Summary, stall, head) {
			if c.Cycles == 0 && c.Reported.Hi == 0 {
				continue
			}
			if !x.Summary.Trust.Withheld && c.Reported.Lo >= BlameShare && c.Measured < c.Reported.Lo/3 {
				a.Misblamed = append(a.Misblamed, ProcCauseCheck{Procedure: p.Procedure, Image: p.Image, CauseCheck: c, Head: head})
			}
			in := c.In(CulpritTolerance)
			a.Causes = append(a.Causes, ProcCauseCheck{Procedure: p.Procedure, Image: p.Image, CauseCheck: c, Head: head, In: in})
			a.StallCycles += c.Cycles
			if in {
				a.CulpritScore += c.Cycles
			}
		}
		u := ProcUnexplained{Procedure: p.Procedure, Image: p.Image, Share: x.Summary.UnexplainedStall.Hi, Samples: x.Summary.Actual}
		a.Unexplained = append(a.Unexplained, u)
		unexplained += u.Share * u.Samples
		tallied += u.Samples
	}
	if a.Procedures == 0 {
		if len(missingImages) > 0 {
			var have []string
			for im := range truth {
				have = append(have, im)
			}
			slices.Sort(have)
			return nil, fmt.Errorf("analysis: calc: %w: the truth holds no image analyzed (%s); it holds %s: another program's run?",
				analysis.ErrQuery, strings.Join(slices.Sorted(mapKeys(missingImages)), ", "), orNoneList(capNames(have, 8)))
		}
		return nil, fmt.Errorf("analysis: calc: %w: no instruction of the %d selected procedures executed in the truth: another run's or another build's truth?", analysis.ErrQuery, len(r.Procedures))
	}
	if a.StallCycles > 0 {
		a.CulpritScore /= a.StallCycles
	}
	if a.Samples > 0 {
		a.Withheld /= a.Samples
	}
	if tallied > 0 {
		a.OverallUnexplained = unexplained / tallied
	}
	for _, u := range a.Unexplained {
		if u.Samples >= UnexplainedMinShare*tallied && u.Share > a.MaxUnexplained.Share {
			a.MaxUnexplained = u
		}
	}
	return a, nil
}

// WorstCauses returns the n rows whose measured share lies furthest
// outside the reported range, in stall cycles missed (the distance times
// the cycles the share is of), worst first.
func (a *ReportAccuracy) WorstCauses(n int) []ProcCauseCheck {
	var out []ProcCauseCheck
	for _, c := range a.Causes {
		if !c.In {
			out = append(out, c)
		}
	}
	missed := func(c ProcCauseCheck) float64 { return c.Miss() * c.Head }
	slices.SortStableFunc(out, func(x, y ProcCauseCheck) int {
		mx, my := missed(x), missed(y)
		switch {
		case mx > my:
			return -1
		case mx < my:
			return 1
		}
		return 0
	})
	return out[:min(n, len(out))]
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
