package values

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"dcpi/analysis/symbolize"
	"dcpi/node/valuemod"
)

// viewNames are the views by the names dcpi values --view takes.
var viewNames = map[string]View{"latency": Latency, "frequent": Frequent, "semiinv": SemiInvariant}

// ParseView reads a view by its dcpi values --view name: latency,
// frequent or semiinv.
func ParseView(name string) (View, error) {
	v, ok := viewNames[name]
	if !ok {
		return 0, fmt.Errorf("--view %q: want latency, frequent or semiinv", name)
	}
	return v, nil
}

// Options are dcpi values's request: a Query, and what Run needs beyond
// it to answer as the command does, so that the command only fills them
// from its flags and prints the Result.
type Options struct {
	Query
	// PlotFile asks for the accuracy of the latency view against
	// Query.Truth (an AccuracyPlot to be drawn in that file) instead of
	// the report: it needs both, and reads every row (Limit is ignored).
	PlotFile string
	// ReadPeriods reads the hosts' sampling periods for the latency
	// view's CPI column (Query.Periods); an error leaves the column
	// empty, as a profile without CYCLES samples does. Nil: no column.
	ReadPeriods func(context.Context) (map[string]map[uint8]float64, error)
	// Where names the database in the refusal of one that holds no value
	// samples (its directory, or "the cluster").
	Where string
	// Hint says which of the selected hosts and epochs the database
	// lacks, if any: the refusal of an empty selection says so instead.
	Hint func() string
	// Note hears why some loads have no CPI (Report.CPINote); nil: no one.
	Note io.Writer
}

// Result is what Run answers: the report, and with Options.PlotFile its
// accuracy against the truth, which is then what prints.
type Result struct {
	Report *Report
	Plot   *AccuracyPlot // nil without Options.PlotFile
}

// Run builds the report o asks for from src (Build) and, with o.PlotFile,
// its accuracy plot. A selection without value samples is an error that
// says why (the hint) or how to get some.
func Run(ctx context.Context, src Source, sym *symbolize.Symbolizer, o Options) (*Result, error) {
	q, plot := o.Query, o.PlotFile != ""
	if plot {
		if q.Truth == nil || q.View != Latency {
			return nil, fmt.Errorf("--accuracy-plot needs --truth and the latency view")
		}
		q.Limit = 0
	}
	if q.View == Latency && !plot && o.ReadPeriods != nil {
		// DCPI's CPI beside each load needs the hosts' periods;
		// without them (no CYCLES samples) the column stays empty.
		q.Periods, _ = o.ReadPeriods(ctx)
		if q.Values == nil {
			q.Values = src // dcpicalc bounds its estimates with these latencies
		}
	}
	rep, err := Build(ctx, src, sym, q)
	if err != nil {
		return nil, err
	}
	if rep.CPINote != "" && o.Note != nil {
		fmt.Fprintf(o.Note, "note: no CPI for some loads: %s\n", rep.CPINote)
	}
	if rep.Stats.Interrupts == 0 {
		if o.Hint != nil {
			if h := o.Hint(); h != "" {
				return nil, fmt.Errorf("no value samples selected: %s", h)
			}
		}
		return nil, fmt.Errorf("%s holds no value samples: profile with dcpi profile, dcpi node or dcpi demo --values MODULE (%s)", o.Where, strings.Join(valuemod.Names(), ", "))
	}
	res := &Result{Report: rep}
	if plot {
		if res.Plot, err = NewAccuracyPlot(rep, o.PlotFile); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// WriteText prints the plot's summary (WriteAccuracyText) when there is
// one, else the report (WriteText).
func (r *Result) WriteText(w io.Writer) error {
	if r.Plot != nil {
		return r.Plot.WriteText(w)
	}
	return WriteText(w, r.Report)
}

// WriteJSON writes the plot's summary and points when there is one, else
// the report, as one indented JSON object.
func (r *Result) WriteJSON(w io.Writer) error {
	if r.Plot != nil {
		return r.Plot.WriteJSON(w)
	}
	return writeJSON(w, r.Report)
}

// AccuracyPlot is a latency report's accuracy against the truth: a point
// per load with truth, the plot's title naming their images, and the
// file the plot goes to (its summary names it).
type AccuracyPlot struct {
	Points []AccuracyPoint
	Title  string
	// File is where the SVG is written; the text summary names it.
	File string
}

// NewAccuracyPlot is rep's accuracy (Accuracy), to be drawn in file;
// refused when no load of rep has truth: a plot of nothing would pass for
// a perfect one.
func NewAccuracyPlot(rep *Report, file string) (*AccuracyPlot, error) {
	pts := Accuracy(rep)
	if len(pts) == 0 {
		return nil, fmt.Errorf("--accuracy-plot: no load in the selection has ground truth (is --truth from the same run?)")
	}
	var images []string
	for _, p := range pts {
		if !slices.Contains(images, p.Image) {
			images = append(images, p.Image)
		}
	}
	slices.Sort(images)
	return &AccuracyPlot{Points: pts, Title: "Load-latency shares against ground truth: " + strings.Join(images, ", "), File: file}, nil
}

// WriteSVG draws the plot (WriteAccuracySVG).
func (p *AccuracyPlot) WriteSVG(w io.Writer) error { return WriteAccuracySVG(w, p.Points, p.Title) }

// WriteText summarizes the plot, naming p.File (WriteAccuracyText).
func (p *AccuracyPlot) WriteText(w io.Writer) error { return WriteAccuracyText(w, p.Points, p.File) }

// WriteJSON writes {"summary", "points"}: Summarize's counts and every
// point.
func (p *AccuracyPlot) WriteJSON(w io.Writer) error {
	return writeJSON(w, struct {
		Summary AccuracySummary `json:"summary"`
		Points  []AccuracyPoint `json:"points"`
	}{Summarize(p.Points), p.Points})
}

// writeJSON writes v indented, as every dcpi tool's --json does.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
