package paperfigs

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"

	"dcpi/analysis/profileme"
	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/internal/svgchart"
	"dcpi/node"
	"dcpi/wire"
)

// Figure 7 of the ProfileMe paper (sec. 6): per instruction, its total
// latency from fetch to ready-to-retire against the issue slots wasted
// while it was in progress, both estimated from paired samples on the
// 21264 core. Out-of-order execution hides some latencies behind useful
// work and not others, so latency ranks the instructions differently from
// wasted slots: a poor proxy for where time goes. The records are summed
// per PC with the driver's own sums (node.MeCountsOf) and estimated with
// dcpi me's estimators (profileme.FiguresWith).

// Fig7Config is the experiment.
type Fig7Config struct {
	Model, Workload string
	Args            []string
	Me              hwsim.ProfileMeConfig
	// IssueWidth is C; MinSamples the paired samples a PC needs to be
	// plotted.
	IssueWidth float64
	MinSamples uint64
}

// DefaultFig7 is what dcpi me figure7 runs: strproc (tokenizing, word
// counts, qsort, KMP, a regex engine: loops of very different
// concurrency) on the 21264 core, one pair per about 256 fetched
// instructions, W = 128.
func DefaultFig7() Fig7Config {
	return Fig7Config{Model: "ev6", Workload: "strproc",
		Me:         hwsim.ProfileMeConfig{IntervalMin: 192, IntervalMax: 320, Copies: 4, Paired: true, PairWindow: 128},
		IssueWidth: 4, MinSamples: 30}
}

// Fig7Point is one instruction.
type Fig7Point struct {
	PC           uint64  `json:"pc"`
	Samples      uint64  `json:"paired_samples"`
	Latency      float64 `json:"latency_cycles"` // L·S/2: fetch to ready-to-retire, over all executions
	Wasted       float64 `json:"wasted_slots"`
	LatencyRank  int     `json:"latency_rank"` // 1: the largest
	WastedRank   int     `json:"wasted_rank"`
	UsefulShares float64 `json:"useful_share"` // useful slots / available slots
}

// Figure7 is the figure's data.
type Figure7 struct {
	Model      string      `json:"model"`
	Workload   string      `json:"workload"`
	Interval   float64     `json:"interval"`
	PairWindow float64     `json:"pair_window"`
	IssueWidth float64     `json:"issue_width"`
	Points     []Fig7Point `json:"points"`
	// Spearman is the rank correlation of latency and wasted slots over
	// the points; Disagree the points whose ranks differ most.
	Spearman float64     `json:"spearman"`
	Disagree []Fig7Point `json:"disagree"`
	// TopLatencyWastedRank is the wasted-slot rank of the instruction
	// with the largest latency.
	TopLatencyWastedRank int `json:"top_latency_wasted_rank"`
	// MinSamples is the paired samples a point needed (Fig7Config's),
	// for the summary; the JSON leaves it out, as it always did.
	MinSamples uint64 `json:"-"`
}

// RunFigure7 runs the experiment.
func RunFigure7(c Fig7Config) (*Figure7, error) {
	if !c.Me.Paired || c.IssueWidth <= 0 {
		return nil, fmt.Errorf("paperfigs: figure 7 needs paired sampling and an issue width")
	}
	run, err := RunMe(c.Model, c.Workload, c.Args, c.Me)
	if err != nil {
		return nil, err
	}
	sums := map[uint64]*wire.MeCounts{}
	s := run.Samples
	for i := 0; i+1 < len(s); i++ {
		a, b := &s[i], &s[i+1]
		if a.Pair != alpha.MeFirst || b.Pair != alpha.MeSecond {
			continue
		}
		for _, r := range [][2]*hwsim.MeSample{{a, b}, {b, a}} {
			if r[0].Kernel || run.Truth.PCs[r[0].PC] == nil {
				continue
			}
			cnt := node.MeCountsOf(&r[0].MeRecord, &r[1].MeRecord)
			if sums[r[0].PC] == nil {
				sums[r[0].PC] = &wire.MeCounts{}
			}
			sums[r[0].PC].Add(&cnt)
		}
		i++
	}
	w := float64(c.Me.PairWindow)
	if w == 0 {
		w = float64(hwsim.DefaultPairWindow(c.Model == "ev6" || c.Model == "ev67"))
	}
	f := &Figure7{Model: c.Model, Workload: c.Workload, Interval: c.Me.MeanInterval(), PairWindow: w, IssueWidth: c.IssueWidth, MinSamples: c.MinSamples}
	p := profileme.Params{Interval: f.Interval, PairWindow: w, IssueWidth: c.IssueWidth}
	for pc, cnt := range sums {
		fig := profileme.FiguresWith(cnt, p)
		if fig.Pairs == nil || fig.Pairs.Samples < c.MinSamples {
			continue
		}
		pt := Fig7Point{PC: pc, Samples: fig.Pairs.Samples, Latency: float64(cnt[wire.MeInProgress]) * f.Interval / 2, Wasted: fig.Pairs.Wasted}
		if fig.Pairs.Latency.Count > 0 {
			pt.UsefulShares = fig.Pairs.Useful.Count / fig.Pairs.Latency.Count
		}
		f.Points = append(f.Points, pt)
	}
	if len(f.Points) < 3 {
		return nil, fmt.Errorf("paperfigs: figure 7: %d instructions with %d paired samples: too few", len(f.Points), c.MinSamples)
	}
	rank(f.Points, func(p Fig7Point) float64 { return p.Latency }, func(p *Fig7Point, r int) { p.LatencyRank = r })
	rank(f.Points, func(p Fig7Point) float64 { return p.Wasted }, func(p *Fig7Point, r int) { p.WastedRank = r })
	n := float64(len(f.Points))
	var d2 float64
	for _, pt := range f.Points {
		d := float64(pt.LatencyRank - pt.WastedRank)
		d2 += d * d
		if pt.LatencyRank == 1 {
			f.TopLatencyWastedRank = pt.WastedRank
		}
	}
	f.Spearman = 1 - 6*d2/(n*(n*n-1))
	slices.SortFunc(f.Points, func(a, b Fig7Point) int { return cmp.Compare(a.PC, b.PC) })
	f.Disagree = slices.Clone(f.Points)
	slices.SortFunc(f.Disagree, func(a, b Fig7Point) int {
		da, db := abs(a.LatencyRank-a.WastedRank), abs(b.LatencyRank-b.WastedRank)
		if da != db {
			return cmp.Compare(db, da)
		}
		return cmp.Compare(a.PC, b.PC)
	})
	f.Disagree = f.Disagree[:min(5, len(f.Disagree))]
	return f, nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// rank gives points ranks by key, 1 the largest (ties by PC).
func rank(pts []Fig7Point, key func(Fig7Point) float64, set func(*Fig7Point, int)) {
	idx := make([]int, len(pts))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if c := cmp.Compare(key(pts[b]), key(pts[a])); c != 0 {
			return c
		}
		return cmp.Compare(pts[a].PC, pts[b].PC)
	})
	for r, i := range idx {
		set(&pts[i], r+1)
	}
}

// WriteFigure7SVG draws latency against wasted slots, one dot an
// instruction, the most disagreeing ones labelled.
func WriteFigure7SVG(w io.Writer, f *Figure7) error {
	c := svgchart.New()
	var maxX, minY, maxY float64
	for _, p := range f.Points {
		maxX, minY, maxY = math.Max(maxX, p.Latency), math.Min(minY, p.Wasted), math.Max(maxY, p.Wasted)
	}
	pn := c.Panel(0, fmt.Sprintf("Spearman rank correlation %.2f over %d instructions", f.Spearman, len(f.Points)),
		"latency, fetch to ready-to-retire (cycles, all executions)", "wasted issue slots", svgchart.Axis{Min: 0, Max: maxX * 1.05},
		svgchart.Axis{Min: math.Min(0, minY*1.05), Max: maxY * 1.05})
	for _, p := range f.Points {
		pn.Dot(svgchart.XY{X: p.Latency, Y: p.Wasted}, "#36c")
	}
	for _, p := range f.Disagree {
		pn.Dot(svgchart.XY{X: p.Latency, Y: p.Wasted}, "#c33")
		pn.Label(svgchart.XY{X: p.Latency, Y: p.Wasted}, fmt.Sprintf("%#x (ranks %d/%d)", p.PC, p.LatencyRank, p.WastedRank), "#c33")
	}
	title := fmt.Sprintf("ProfileMe Figure 7: %s on %s, paired sampling (S = %.0f, W = %.0f, C = %.0f)", f.Workload, f.Model, f.Interval, f.PairWindow, f.IssueWidth)
	return c.Write(w, title, "wasted = L·C·S/2 - U·W·S per instruction (sec. 5.2.3); red: the instructions whose latency and wasted-slot ranks differ most")
}

// WriteSVG draws the figure (WriteFigure7SVG).
func (f *Figure7) WriteSVG(w io.Writer) error { return WriteFigure7SVG(w, f) }

// WriteText summarizes the figure for dcpi me figure7: the points, the rank
// correlation of latency and wasted slots, and the instructions they
// disagree on most.
func (f *Figure7) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "Figure 7: %s on %s, S = %.0f, W = %.0f, C = %.0f: %d instructions with >= %d paired samples\n",
		f.Workload, f.Model, f.Interval, f.PairWindow, f.IssueWidth, len(f.Points), f.MinSamples)
	fmt.Fprintf(w, "Spearman rank correlation of latency and wasted slots: %.2f; the largest latency ranks %d by wasted slots\n",
		f.Spearman, f.TopLatencyWastedRank)
	fmt.Fprintln(w, "most disagreeing (pc, latency cycles, rank; wasted slots, rank; useful/available):")
	for _, p := range f.Disagree {
		fmt.Fprintf(w, "  %#x  %.3g  #%d;  %.3g  #%d;  %.2f\n", p.PC, p.Latency, p.LatencyRank, p.Wasted, p.WastedRank, p.UsefulShares)
	}
	return nil
}
