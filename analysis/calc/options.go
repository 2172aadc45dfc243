package calc

import (
	"context"
	"fmt"
	"io"

	"dcpi/analysis"
	"dcpi/hwsim/alpha"
)

// Options are dcpi calc's request: a Query whose procedures are chosen
// as the command's flags choose them, and what to answer with the
// report: the listing, its summaries only, or its accuracy against the
// ground truth. Analyze checks them, reads the periods, runs the query
// and compares, so that the command only fills them in and prints.
type Options struct {
	// Query's Procedures, Top and All are as given: names, or Top (given
	// when TopGiven; else Top is the default, used when no name is), or
	// All. Its Periods come from ReadPeriods.
	Query
	TopGiven bool
	// Summary prints only each procedure's summary (Figure 4).
	Summary bool
	// Truth, when set, is the ground truth of the same run (dcpi profile
	// --truth) to hold the report to instead (CompareReport); TruthFile
	// names it in errors, and is what Check knows of it.
	Truth     map[string]*alpha.GroundTruth
	TruthFile string
	// ReadPeriods reads the hosts' sampling periods (Query.Periods);
	// required.
	ReadPeriods func(context.Context) (map[string]map[uint8]float64, error)
	// Hint says why the selection matched nothing, if it did: Analyze
	// adds it to the errors of reading the periods and of the query.
	Hint func() string
}

// Check refuses the choices that are wrong whatever the data: names with
// --top or --all, --top with --all, a --top below 1, and --summary with
// --truth. A command checks first, before it reads a truth file or opens
// a database; Analyze checks again.
func (o Options) Check() error {
	if o.Top < 0 {
		return fmt.Errorf("--top %d: want a number of procedures >= 1", o.Top)
	}
	switch {
	case len(o.Procedures) > 0 && (o.TopGiven || o.All):
		return fmt.Errorf("give procedure names, --top or --all, not several")
	case o.TopGiven && o.All:
		return fmt.Errorf("give --top or --all, not both")
	case o.TopGiven && o.Top == 0:
		return fmt.Errorf("--top 0: want a number of procedures >= 1 (--all: every procedure)")
	}
	if o.TruthFile != "" && o.Summary {
		return fmt.Errorf("--truth prints an accuracy report instead of the listing and summaries: --summary does not apply")
	}
	return nil
}

// CheckEvents refuses a selection of events: dcpicalc reads every event
// (Query.Filter's Events are ignored), and a selection would read as a
// restriction that does not happen.
func CheckEvents(events []uint8) error {
	if len(events) > 0 {
		return fmt.Errorf("--event: dcpi calc reads every event (cycles for the frequencies, the others to bound the stall causes)")
	}
	return nil
}

// Analyze is dcpi calc: it checks o, reads the periods, runs the query
// (Run; Top 1 when neither names nor All choose) and, with o.Truth,
// compares the report with it (CompareReport). The estimator never sees
// the truth: the comparison runs after.
func Analyze(ctx context.Context, src analysis.Source, o Options) (*Output, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	if o.ReadPeriods == nil {
		return nil, fmt.Errorf("analysis: calc: %w: no way to read the sampling periods", analysis.ErrQuery)
	}
	q := o.Query
	var err error
	if q.Periods, err = o.ReadPeriods(ctx); err != nil {
		return nil, o.hinted(err)
	}
	q.Top = 0
	if len(q.Procedures) == 0 && !q.All {
		q.Top = max(o.Top, 1)
	}
	r, err := Run(ctx, src, q)
	if err != nil {
		return nil, o.hinted(err)
	}
	if o.Truth == nil {
		return &Output{Report: r, Summary: o.Summary}, nil
	}
	a, err := CompareReport(r, o.Truth)
	if err != nil {
		return nil, fmt.Errorf("--truth %s: %w", o.TruthFile, err)
	}
	return &Output{Report: r, Accuracy: a}, nil
}

// hinted adds o.Hint's words to err, if it has any.
func (o Options) hinted(err error) error {
	if o.Hint != nil {
		if h := o.Hint(); h != "" {
			return fmt.Errorf("%w; %s", err, h)
		}
	}
	return err
}

// Output is what Analyze answers: the report, printed whole or as its
// summaries, or its accuracy against the truth, printed instead.
type Output struct {
	Report   *Report
	Summary  bool
	Accuracy *ReportAccuracy // nil without Options.Truth
}

// WriteText prints the accuracy report when there is one, else the
// report (its summaries only with Summary).
func (out *Output) WriteText(w io.Writer) error {
	if out.Accuracy != nil {
		return out.Accuracy.WriteText(w)
	}
	return out.Report.WriteText(w, out.Summary)
}

// WriteJSON writes the accuracy report when there is one, else the
// report, as JSON.
func (out *Output) WriteJSON(w io.Writer) error {
	if out.Accuracy != nil {
		return out.Accuracy.WriteJSON(w)
	}
	return out.Report.WriteJSON(w)
}
