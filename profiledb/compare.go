package profiledb

import (
	"fmt"

	"dcpi/analysis/report"
)

// OneEvent is the event of a tool that counts one (dcpi diff, stats,
// trend): the only --event, or cycles.
func (s Selection) OneEvent() (uint8, error) {
	switch len(s.Events) {
	case 0:
		return 0, nil // cycles
	case 1:
		return s.Events[0], nil
	}
	return 0, fmt.Errorf("--event: this tool counts one event; give one")
}

// DiffOptions are dcpi diff's options as given (--a, --b, --z, --by,
// --limit); the selection comes apart, as Filters.
type DiffOptions struct {
	A, B  string // the profiles' set SPECs (ParseSetSpec)
	Z     float64
	By    string
	Limit int
}

// Query checks the options and sel's event, naming the flag of a bad
// one, before a database is opened: the diff's query but for its sets,
// which need the database (ParseSetSpec).
func (o DiffOptions) Query(sel Selection) (report.DiffQuery, error) {
	q := report.DiffQuery{Z: o.Z, Limit: o.Limit, ImagePaths: sel.ImagePaths}
	var err error
	switch q.By, err = report.ParseBy(o.By); {
	case err != nil:
		return q, fmt.Errorf("--by %q: want procedure or image", o.By)
	case o.Limit < 0:
		return q, fmt.Errorf("--limit %d: want 0 (all) or more", o.Limit)
	case o.Z <= 0:
		return q, fmt.Errorf("--z %v: want a positive number of standard errors", o.Z)
	case o.A == "" || o.B == "":
		return q, fmt.Errorf("give both profiles: --a SPEC --b SPEC (e.g. --a epoch=1 --b epoch=2)")
	}
	q.Event, err = sel.OneEvent()
	return q, err
}

// StatsOptions are dcpi stats' table options as given (--by, --limit,
// --min-sum); the sets (--set, --by-host, --by-epoch) are SampleSets'.
type StatsOptions struct {
	By     string
	Limit  int
	MinSum uint64
}

// Query checks the options and sel's event, naming the flag of a bad
// one: the stats query but for its sets.
func (o StatsOptions) Query(sel Selection) (report.StatsQuery, error) {
	q := report.StatsQuery{Limit: o.Limit, MinSum: o.MinSum, ImagePaths: sel.ImagePaths}
	var err error
	if q.By, err = report.ParseBy(o.By); err != nil {
		return q, fmt.Errorf("--by %q: want procedure or image", o.By)
	}
	if o.Limit < 0 {
		return q, fmt.Errorf("--limit %d: want 0 (all) or more", o.Limit)
	}
	q.Event, err = sel.OneEvent()
	return q, err
}
