package profiledb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"dcpi/analysis"
	"dcpi/analysis/report"
	"dcpi/analysis/symbolize"
	"dcpi/storage"
)

// ErrMismatch is DiffDatabases' refusal of two profiles whose samples do
// not mean the same thing: different CPU models or different events.
var ErrMismatch = errors.New("the profiles cannot be compared")

// DiffDatabases compares two profile databases, OLD and NEW (dcpi diff
// OLD NEW, as perf diff compares perf.data.old and perf.data): sel's
// filters select from each, o gives the table's options (its A and B are
// ignored). Two profiles dcpi profile recorded
// with different models or events are refused (ErrMismatch), in one line.
//
// Which two databases: DiffDirs of args, ab and db; ok is false (and
// nothing done) when the command compares two sets of one database.
func DiffDatabases(ctx context.Context, args []string, ab, db string, sel Selection, o DiffOptions) (t *report.DiffTable, ok bool, err error) {
	dirs, ok, err := DiffDirs(args, ab, db)
	if !ok || err != nil {
		return nil, false, err
	}
	if _, err := os.Stat(dirs[0]); len(args) == 0 && errors.Is(err, fs.ErrNotExist) {
		return nil, true, fmt.Errorf("no %s to compare %s with: the next dcpi profile keeps %s as %s (or give two: dcpi diff OLD NEW)", dirs[0], db, db, dirs[0])
	}
	t, err = diffDatabases(ctx, dirs[0], dirs[1], sel, o)
	return t, true, err
}

func diffDatabases(ctx context.Context, oldDir, newDir string, sel Selection, o DiffOptions) (*report.DiffTable, error) {
	o.A, o.B = oldDir, newDir
	q, err := o.Query(sel)
	if err != nil {
		return nil, err
	}
	oldDB, err := OpenDir(oldDir)
	if err != nil {
		return nil, err
	}
	defer oldDB.Close()
	newDB, err := OpenDir(newDir)
	if err != nil {
		return nil, err
	}
	defer newDB.Close()
	if err := checkComparable(oldDir, newDir, oldDB, newDB); err != nil {
		return nil, err
	}
	q.A = analysis.SampleSet{Name: oldDir, Filter: sel.Filter}
	q.B = analysis.SampleSet{Name: newDir, Filter: sel.Filter}
	return report.DiffOf(ctx, symbolize.New(NewLocal(oldDB)), symbolize.New(NewLocal(newDB)), q)
}

// checkComparable refuses two databases whose run records (when both have
// one) name different models or events.
func checkComparable(oldDir, newDir string, oldDB, newDB *storage.DB) error {
	a, okA, errA := oldDB.RunInfo()
	b, okB, errB := newDB.RunInfo()
	if err := errors.Join(errA, errB); err != nil || !okA || !okB {
		return err
	}
	what := func(r storage.RunInfo) string { return r.Model + " profile of " + strings.Join(r.Events, ",") }
	if a.Model != b.Model || !slices.Equal(a.Events, b.Events) {
		return fmt.Errorf("%w: %s is an %s, %s an %s; compare profiles of one model and the same events", ErrMismatch, oldDir, what(a), newDir, what(b))
	}
	return nil
}

// DiffDirs says which two databases dcpi diff compares from its
// arguments: OLD and NEW as given, or, with no arguments and no sets
// (ab: the --a and --b given, concatenated), db.old and db (what a second
// dcpi profile leaves); ok is false when the sets are within one
// database (--a, --b).
func DiffDirs(args []string, ab, db string) (dirs [2]string, ok bool, err error) {
	switch {
	case len(args) == 2 && ab != "":
		return dirs, false, errors.New("give two databases (OLD NEW) or two sets of one (--a SPEC --b SPEC), not both")
	case len(args) == 2:
		return [2]string{args[0], args[1]}, true, nil
	case len(args) == 1:
		return dirs, false, fmt.Errorf("give two databases: dcpi diff OLD NEW (or none: %s.old and %s)", db, db)
	case ab == "":
		return [2]string{db + ".old", db}, true, nil
	}
	return dirs, false, nil
}
