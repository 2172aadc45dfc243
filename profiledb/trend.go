package profiledb

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"dcpi/analysis"
	"dcpi/analysis/trend"
	"dcpi/internal/writefile"
)

// TrendOptions are dcpi trend's options as given: the measures (the
// command's arguments), --top and --plot; the selection comes apart, as
// Filters.
type TrendOptions struct {
	// Measures are trend.ParseMeasure's forms: procedure=NAME,
	// image=PATH, selection. None: the Top procedures.
	Measures []string
	Top      int
	Plot     string // trend.ParsePlot's
}

// Check refuses a measure, --top or --plot no trend has, or more than
// one of sel's events, naming it, so that bad input is reported before a
// database is opened.
func (o TrendOptions) Check(sel Selection) error {
	_, _, err := o.parse()
	if err == nil {
		_, err = sel.OneEvent()
	}
	return err
}

func (o TrendOptions) parse() ([]trend.Measure, trend.Plot, error) {
	var ms []trend.Measure
	for _, s := range o.Measures {
		m, err := trend.ParseMeasure(s)
		if err != nil {
			return nil, "", err
		}
		ms = append(ms, m)
	}
	if o.Top < 0 {
		return nil, "", fmt.Errorf("--top %d: want 1 or more (0: %d)", o.Top, trend.DefaultTop)
	}
	if o.Top > 0 && len(ms) > 0 {
		return nil, "", fmt.Errorf("--top: give either measures or --top, not both")
	}
	p, err := trend.ParsePlot(o.Plot)
	if err != nil {
		return nil, "", fmt.Errorf("--%w", err)
	}
	return ms, p, nil
}

// TrendReport is what dcpi trend prints: the trend, how to chart it, and
// when the selection holds no sample, the words on why.
type TrendReport struct {
	*trend.Trend
	Plot trend.Plot
	Hint string
}

// Trend reads dcpi trend's report over sel (labels and time range
// applied) from src, db's samples through a symbol cache: the epochs sel
// selects (every epoch without --epoch, --epochs or a range), each with
// its times (an open one's end is now), then trend.Run.
func Trend(ctx context.Context, db DB, src analysis.Source, sel Selection, o TrendOptions, now time.Time) (*TrendReport, error) {
	ms, plot, err := o.parse()
	if err != nil {
		return nil, err
	}
	event, err := sel.OneEvent()
	if err != nil {
		return nil, err
	}
	eps, err := TrendEpochs(ctx, db, sel, now)
	if err != nil {
		return nil, err
	}
	q := trend.Query{Filter: sel.Filter, ImagePaths: sel.ImagePaths, Event: event, Epochs: eps, Measures: ms, Top: o.Top}
	t, err := trend.Run(ctx, src, q)
	if err != nil {
		return nil, err
	}
	r := &TrendReport{Trend: t, Plot: plot}
	if t.Total.Samples == 0 {
		r.Hint = SelectionHint(ctx, db, src, sel)
	} else if i := slices.IndexFunc(t.Series, func(s trend.Series) bool { return s.Samples == 0 }); i >= 0 &&
		t.Series[i].Measure.Kind == trend.KindProcedure {
		r.Hint = fmt.Sprintf("no samples for %s; %s", t.Series[i].Measure, ProcedureHint(ctx, src, sel))
	}
	return r, nil
}

// Write prints the table to w, then the hint; with asJSON the JSON to w
// and the hint, which is for people, to errw.
func (r *TrendReport) Write(w, errw io.Writer, asJSON bool) error {
	var err error
	if asJSON {
		err, w = r.WriteJSON(w), errw
	} else {
		err = r.WriteText(w)
	}
	if err == nil && r.Hint != "" {
		_, err = fmt.Fprintln(w, r.Hint)
	}
	return err
}

// WriteChartFile writes the trend's SVG chart (trend.Trend.WriteSVG) to
// the file name.
func (r *TrendReport) WriteChartFile(name string) error {
	return writefile.With(name, func(w io.Writer) error { return r.WriteSVG(w, r.Plot) })
}

// TrendEpochs are the epochs of sel with their wall-clock spans (an open
// one's to now), in order: those its filter names, else every epoch db
// records (trend.SelectEpochs).
func TrendEpochs(ctx context.Context, db DB, sel Selection, now time.Time) ([]trend.Epoch, error) {
	infos, err := db.Epochs(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the epochs: %w", err)
	}
	all := make([]trend.Epoch, len(infos))
	for i, e := range infos {
		all[i] = trend.Epoch{Number: e.Number, Start: e.Start, End: e.End}
		if !e.Start.IsZero() && e.End.IsZero() {
			all[i].End, all[i].Open = now, true
		}
	}
	return trend.SelectEpochs(all, sel.Filter.Epochs)
}
