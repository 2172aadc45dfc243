package profiledb

import (
	"context"
	"fmt"
	"io"

	"dcpi/analysis"
	"dcpi/analysis/report"
	"dcpi/wire"
)

// NoStacksNote follows a call-stack report that selected no stacks: the
// usual cause is nodes that ran without stacks on.
const NoStacksNote = "no call stacks selected (do the nodes record stacks?)"

// StackQuery is the stack query of the selection: its stacks of the first
// event given, else of cycles (dcpi stacks and dcpi prof --by-caller
// count one event).
func (s Selection) StackQuery() report.StackQuery {
	q := report.StackQuery{Filter: s.Filter, ImagePaths: s.ImagePaths}
	if len(s.Events) > 0 {
		q.Event = s.Events[0]
	}
	return q
}

// ProfOptions are dcpi prof's table shape as given (the flags --by,
// --limit and --by-caller); the selection comes apart, as Filters.
type ProfOptions struct {
	By       string // "procedure" (or "proc"), "image", or a label to group by (GroupLabel)
	Limit    int    // keep the top Limit rows and sum the rest; 0: all
	ByCaller bool   // each procedure's callers, from the sampled call stacks
}

// Check refuses a By or Limit no table has, naming the flag, so that a
// bad flag is reported before a database is opened.
func (o ProfOptions) Check() error {
	_, err := o.query(Selection{})
	return err
}

// query is the flat table's request over sel.
func (o ProfOptions) query(sel Selection) (report.ProfQuery, error) {
	q := report.ProfQuery{Filter: sel.Filter, Events: sel.Events, ImagePaths: sel.ImagePaths, Limit: o.Limit}
	var err error
	if o.Limit < 0 {
		return q, fmt.Errorf("--limit %d: want 0 (all) or more", o.Limit)
	}
	if q.By, err = report.ParseBy(o.By); err == nil {
		return q, nil
	}
	switch {
	case !wire.ValidLabelName(o.By):
		return q, fmt.Errorf("--by %q: want procedure, image, or a label to group by (service, host, ...)", o.By)
	case o.ByCaller:
		return q, fmt.Errorf("--by-caller: not with --by %s (a label groups the flat profile)", o.By)
	}
	return q, nil
}

// GroupLabel is the label --by groups by: "" for procedure or image.
func (o ProfOptions) GroupLabel() string {
	if _, err := report.ParseBy(o.By); err == nil {
		return ""
	}
	return o.By
}

// ProfReport is what dcpi prof prints: the flat table (report.Prof) with,
// when it is empty, the words on why; or with ProfOptions.ByCaller the
// by-caller table (report.Callers).
type ProfReport struct {
	Table   *report.ProfTable   // nil with ByCaller or a GroupLabel
	Groups  *report.GroupTable  // with a GroupLabel: the samples per value
	Callers *report.CallerTable // nil without ByCaller
	// Hint says why an empty flat table is empty (SelectionHint): a
	// --host or --epoch the database lacks, or the images and events it
	// holds; "" when the table has rows or nothing is known.
	Hint string
}

// Prof reads dcpi prof's report over sel (labels applied) from src, db's
// samples through a symbol cache, or db itself; db answers the hint.
func Prof(ctx context.Context, db DB, src analysis.Source, sel Selection, o ProfOptions) (*ProfReport, error) {
	q, err := o.query(sel)
	if err != nil {
		return nil, err
	}
	if o.ByCaller {
		t, err := report.Callers(ctx, src, report.CallersQuery{StackQuery: sel.StackQuery(), Limit: o.Limit})
		if err != nil {
			return nil, err
		}
		return &ProfReport{Callers: t}, nil
	}
	if label := o.GroupLabel(); label != "" {
		g, err := groupBy(ctx, db, src, sel, label)
		if err != nil {
			return nil, err
		}
		g.Limit(o.Limit)
		r := &ProfReport{Groups: g}
		if len(g.Rows) == 0 {
			r.Hint = SelectionHint(ctx, db, src, sel)
		}
		return r, nil
	}
	t, err := report.Prof(ctx, src, q)
	if err != nil {
		return nil, err
	}
	r := &ProfReport{Table: t}
	if len(t.Rows) == 0 {
		r.Hint = SelectionHint(ctx, db, src, sel)
	}
	return r, nil
}

// WriteText prints the table, then the hint or, for a by-caller table of
// no stacks, NoStacksNote.
func (r *ProfReport) WriteText(w io.Writer) error {
	if r.Callers != nil {
		if err := r.Callers.WriteText(w); err != nil {
			return err
		}
		if r.Callers.Total == 0 {
			_, err := fmt.Fprintln(w, NoStacksNote)
			return err
		}
		return nil
	}
	if r.Groups != nil {
		if err := r.Groups.WriteText(w); err != nil {
			return err
		}
	} else if err := r.Table.WriteText(w); err != nil {
		return err
	}
	if r.Hint != "" {
		_, err := fmt.Fprintln(w, r.Hint)
		return err
	}
	return nil
}

// WriteJSON writes the table's JSON alone (the hint is for people: the
// command prints it on standard error).
func (r *ProfReport) WriteJSON(w io.Writer) error {
	if r.Callers != nil {
		return r.Callers.WriteJSON(w)
	}
	if r.Groups != nil {
		return r.Groups.WriteJSON(w)
	}
	return r.Table.WriteJSON(w)
}
