package paperfigs

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/internal/svgchart"
)

// Figure 3 of the ProfileMe paper (sec. 5.1): per instruction, the
// estimate k·S of how often it retired (and of its D-cache misses),
// divided by the true count, plotted against k, the samples the estimate
// rests on, with the curves y = 1 ± 1/sqrt(k). The count of an event
// among many trials is nearly Poisson, so the estimate's relative
// standard deviation is about 1/sqrt(k) and about two thirds of the
// points should fall between the curves. The true counts are hwsim's
// ground truth of the same run.

// Fig3Point is one instruction's estimate against the truth.
type Fig3Point struct {
	PC       uint64  `json:"pc"`
	Samples  uint64  `json:"samples"` // k
	Estimate float64 `json:"estimate"`
	Actual   uint64  `json:"actual"`
	Ratio    float64 `json:"ratio"` // Estimate / Actual
}

// Inside reports whether the point lies within 1 ± 1/sqrt(k).
func (p Fig3Point) Inside() bool {
	return math.Abs(p.Ratio-1) <= 1/math.Sqrt(float64(p.Samples))
}

// Fig3Series is one panel: the instructions with at least MinSamples
// samples of the quantity, and how many of them lie inside the envelope.
type Fig3Series struct {
	Name   string      `json:"name"`
	Points []Fig3Point `json:"points"`
	Inside int         `json:"inside"`
}

// Fraction is the share of points inside the envelope (0 with none).
func (s *Fig3Series) Fraction() float64 {
	if len(s.Points) == 0 {
		return 0
	}
	return float64(s.Inside) / float64(len(s.Points))
}

// Figure3 is the figure's data.
type Figure3 struct {
	Model      string     `json:"model"`
	Workload   string     `json:"workload"`
	Interval   float64    `json:"interval"` // S
	MinSamples uint64     `json:"min_samples"`
	Samples    int        `json:"samples"` // records of the workload's user code
	Retires    Fig3Series `json:"retires"`
	DMisses    Fig3Series `json:"dmisses"`
}

// Fig3Of computes the figure from a run's samples with interval s (the
// mean fetched instructions per sample), keeping instructions with at
// least minSamples samples of the quantity. Only retired user-mode samples
// of PCs the truth knows count (the truth records no PAL calls and no
// kernel code); an estimate of retires is k·S with k the retired samples,
// of D-misses k·S with k the retired samples whose D-miss bit is set.
func Fig3Of(run *MeRun, s float64, minSamples uint64) (*Figure3, error) {
	if s <= 0 || math.IsNaN(s) || math.IsInf(s, 0) {
		return nil, fmt.Errorf("paperfigs: interval %g: want a positive number of fetched instructions per sample", s)
	}
	minSamples = max(minSamples, 1)
	type pcSum struct{ retired, dmiss uint64 }
	sums := map[uint64]*pcSum{}
	f := &Figure3{Model: run.Model, Workload: run.Workload, Interval: s, MinSamples: minSamples,
		Retires: Fig3Series{Name: "retires"}, DMisses: Fig3Series{Name: "D-cache misses"}}
	for i := range run.Samples {
		r := &run.Samples[i]
		if r.Kernel || !r.Retired() || run.Truth.PCs[r.PC] == nil {
			continue
		}
		f.Samples++
		p := sums[r.PC]
		if p == nil {
			p = &pcSum{}
			sums[r.PC] = p
		}
		p.retired++
		if r.Events&alpha.MeDMiss != 0 {
			p.dmiss++
		}
	}
	add := func(ser *Fig3Series, pc, k, actual uint64) {
		if k < minSamples || actual == 0 {
			return
		}
		pt := Fig3Point{PC: pc, Samples: k, Estimate: float64(k) * s, Actual: actual}
		pt.Ratio = pt.Estimate / float64(actual)
		if pt.Inside() {
			ser.Inside++
		}
		ser.Points = append(ser.Points, pt)
	}
	for pc, p := range sums {
		tr := run.Truth.PCs[pc]
		add(&f.Retires, pc, p.retired, tr.Executed)
		add(&f.DMisses, pc, p.dmiss, tr.Events[alpha.EvDMiss])
	}
	for _, ser := range []*Fig3Series{&f.Retires, &f.DMisses} {
		slices.SortFunc(ser.Points, func(a, b Fig3Point) int { return cmp.Compare(a.PC, b.PC) })
	}
	return f, nil
}

// Fig3Config is the experiment: a workload on a model with ProfileMe's
// interval [IntervalMin, IntervalMax].
type Fig3Config struct {
	Model      string
	Workload   string
	Args       []string
	Me         hwsim.ProfileMeConfig
	MinSamples uint64
}

// RunFigure3 runs the experiment and computes the figure.
func RunFigure3(c Fig3Config) (*Figure3, error) {
	run, err := RunMe(c.Model, c.Workload, c.Args, c.Me)
	if err != nil {
		return nil, err
	}
	return Fig3Of(run, c.Me.MeanInterval(), c.MinSamples)
}

// WriteFigure3SVG draws the two panels: estimate/actual against samples
// (log scale), the envelope 1 ± 1/sqrt(x), and the share inside.
func WriteFigure3SVG(w io.Writer, f *Figure3) error {
	c := svgchart.New()
	title := fmt.Sprintf("ProfileMe Figure 3: %s on %s, S = %.0f, instructions with >= %d samples",
		f.Workload, f.Model, f.Interval, f.MinSamples)
	for i, ser := range []*Fig3Series{&f.Retires, &f.DMisses} {
		var maxK uint64 = 10
		for _, p := range ser.Points {
			maxK = max(maxK, p.Samples)
		}
		xmax := math.Pow(10, math.Ceil(math.Log10(float64(maxK))))
		pn := c.Panel(i, fmt.Sprintf("%s: %d of %d inside (%.0f%%)", ser.Name, ser.Inside, len(ser.Points), 100*ser.Fraction()),
			"samples (x)", "estimate / actual (y)", svgchart.Axis{Min: 1, Max: xmax, Log: true}, svgchart.Axis{Min: 0, Max: 2})
		var up, down []svgchart.XY
		for x := 1.0; x <= xmax*1.0001; x *= 1.05 {
			up = append(up, svgchart.XY{X: x, Y: math.Min(2, 1+1/math.Sqrt(x))})
			down = append(down, svgchart.XY{X: x, Y: 1 - 1/math.Sqrt(x)})
		}
		pn.Line(up, "#888")
		pn.Line(down, "#888")
		pn.Line([]svgchart.XY{{X: 1, Y: 1}, {X: xmax, Y: 1}}, "#ccc")
		for _, p := range ser.Points {
			col := "#c33"
			if p.Inside() {
				col = "#36c"
			}
			pn.Dot(svgchart.XY{X: float64(p.Samples), Y: math.Min(p.Ratio, 2)}, col)
		}
	}
	return c.Write(w, title, "blue: inside y = 1 ± 1/sqrt(x); red: outside; ratios above 2 drawn at 2")
}

// WriteSVG draws the figure (WriteFigure3SVG).
func (f *Figure3) WriteSVG(w io.Writer) error { return WriteFigure3SVG(w, f) }

// WriteText summarizes the figure for dcpi me figure3: each panel's points inside 1 ± 1/sqrt(k).
func (f *Figure3) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "Figure 3: %s on %s, S = %.0f, %d retired samples of the workload's code; instructions with >= %d samples\n",
		f.Workload, f.Model, f.Interval, f.Samples, f.MinSamples)
	for _, s := range []*Fig3Series{&f.Retires, &f.DMisses} {
		fmt.Fprintf(w, "  %s: %d of %d inside 1 ± 1/sqrt(k) (%.0f%%; about 67%% expected)\n", s.Name, s.Inside, len(s.Points), 100*s.Fraction())
	}
	return nil
}
