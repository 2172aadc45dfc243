package timerange

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Epoch is what Resolve needs of an epoch: its number and wall-clock
// bounds (storage.Epoch's). End is zero while the epoch is open; Start is
// zero for an epoch whose start was never recorded.
type Epoch struct {
	Number     uint64
	Start, End time.Time
}

// Cover is what a range selected: the epochs that overlap it and the
// span they cover, which is the range widened to whole epochs.
type Cover struct {
	Range  Range
	Epochs []uint64 // ascending
	// From and To bound the covered span: the first epoch's start and
	// the last one's end (Range.Now when it is open).
	From, To time.Time
	// Open are the selected epochs still open: the span ends now.
	Open []uint64
	// Unplaced are the epochs without a start time: left out, since
	// nothing says when their samples were taken.
	Unplaced []uint64
}

// ErrNoEpoch is wrapped by Resolve's error when no epoch overlaps the
// range.
var ErrNoEpoch = errors.New("no epoch overlaps the time range")

type noEpochError struct{ msg string }

func (e *noEpochError) Error() string { return e.msg }
func (e *noEpochError) Unwrap() error { return ErrNoEpoch }

// Resolve selects the epochs that overlap r: an epoch is the half-open
// interval [Start, End), an open one ending at r.Now, so a range that
// ends exactly where an epoch starts, or starts where it ends, does not
// select it. An instant (From equal to To) selects the epoch holding it;
// an epoch whose start and end are equal is an instant too. With no
// epoch selected it returns an error wrapping ErrNoEpoch that names the
// span the epochs do cover.
func Resolve(r Range, epochs []Epoch) (Cover, error) {
	c := Cover{Range: r}
	type placedEpoch struct {
		Epoch
		open bool
	}
	var placed []placedEpoch
	for _, e := range epochs {
		if e.Start.IsZero() {
			c.Unplaced = append(c.Unplaced, e.Number)
			continue
		}
		p := placedEpoch{e, e.End.IsZero()}
		if p.open {
			p.End = r.Now
			if p.End.Before(p.Start) {
				p.End = p.Start // a clock behind the cut: the epoch is its start
			}
		}
		placed = append(placed, p)
	}
	slices.SortFunc(placed, func(a, b placedEpoch) int { return cmp.Compare(a.Number, b.Number) })
	slices.Sort(c.Unplaced)
	var all []uint64
	var first, last time.Time
	for i, e := range placed {
		all = append(all, e.Number)
		if i == 0 || e.Start.Before(first) {
			first = e.Start
		}
		if e.End.After(last) {
			last = e.End
		}
		if !overlaps(e.Start, e.End, r.From, r.To) {
			continue
		}
		if len(c.Epochs) == 0 || e.Start.Before(c.From) {
			c.From = e.Start
		}
		if e.End.After(c.To) || len(c.Epochs) == 0 {
			c.To = e.End
		}
		c.Epochs = append(c.Epochs, e.Number)
		if e.open {
			c.Open = append(c.Open, e.Number)
		}
	}
	if len(c.Epochs) > 0 {
		return c, nil
	}
	msg := "no epoch overlaps " + describe(r)
	switch {
	case len(placed) > 0:
		msg += fmt.Sprintf("; the epochs span %s (%s)", span(first, last, r.Loc, false), named(all))
	case len(c.Unplaced) > 0:
		msg += fmt.Sprintf("; no epoch here has a start time (%s), so none can be placed in time", named(c.Unplaced))
	default:
		msg += "; no epochs are recorded here (a dcpi node or dcpi profile database has none)"
	}
	return c, &noEpochError{msg}
}

// overlaps reports whether [a0, a1) and [b0, b1) share an instant; an
// interval whose ends are equal is that one instant.
func overlaps(a0, a1, b0, b1 time.Time) bool {
	switch {
	case a0.Equal(a1) && b0.Equal(b1):
		return a0.Equal(b0)
	case a0.Equal(a1):
		return !a0.Before(b0) && a0.Before(b1)
	case b0.Equal(b1):
		return !b0.Before(a0) && b0.Before(a1)
	}
	return a0.Before(b1) && b0.Before(a1)
}

// Short is the epochs and the span they cover, without the range:
// "epochs 41-42, 2026-11-20 07:00 to 10:00 UTC (epoch 42 open)".
func (c Cover) Short() string {
	s := named(c.Epochs) + ", " + span(c.From, c.To, c.Range.Loc, false)
	if len(c.Open) > 0 {
		s += fmt.Sprintf(" (%s open)", named(c.Open))
	}
	return s
}

// String is the one line that says what the range covered: "time range
// 2026-11-20 08:00 to 10:00 UTC: epochs 41-42, 2026-11-20 07:00 to 10:00
// UTC (epoch 42 open)".
func (c Cover) String() string {
	s := fmt.Sprintf("time range %s: %s", describe(c.Range), c.Short())
	switch len(c.Unplaced) {
	case 0:
	case 1:
		s += fmt.Sprintf("; epoch %d has no start time and is left out", c.Unplaced[0])
	default:
		s += fmt.Sprintf("; %s have no start time and are left out", named(c.Unplaced))
	}
	return s
}

// describe is r as the messages name it.
func describe(r Range) string {
	switch {
	case r.From.IsZero():
		return "up to " + clock(r.To, r.Loc, true)
	case r.From.Equal(r.To):
		return clock(r.From, r.Loc, true)
	}
	return span(r.From, r.To, r.Loc, true)
}

// span is "2026-11-20 08:00 to 10:00 UTC", the date repeated only when
// the day changes, seconds shown only when either end has them, and
// fractions of a second when fine (a range as the user gave it) or
// needed to tell the ends apart (the epochs' spans, whose fractions are
// the cut's timing, not the user's).
func span(a, b time.Time, loc *time.Location, fine bool) string {
	loc = orUTC(loc)
	a, b = a.In(loc), b.In(loc)
	layout := precision(a, b, fine)
	to := b.Format(layout)
	if a.Format("2006-01-02") == b.Format("2006-01-02") {
		to = b.Format(strings.TrimPrefix(layout, "2006-01-02 "))
	}
	return a.Format(layout) + " to " + to + " " + b.Format("MST")
}

// clock is one time as the messages write it, with its zone.
func clock(t time.Time, loc *time.Location, zone bool) string {
	t = t.In(orUTC(loc))
	s := t.Format(precision(t, t, true))
	if zone {
		s += " " + t.Format("MST")
	}
	return s
}

// precision is the layout of a span from a to b (see span).
func precision(a, b time.Time, fine bool) string {
	switch {
	case fine && (a.Nanosecond() != 0 || b.Nanosecond() != 0),
		!a.Equal(b) && a.Truncate(time.Second).Equal(b.Truncate(time.Second)):
		return "2006-01-02 15:04:05.000"
	case a.Second() != 0 || b.Second() != 0:
		return "2006-01-02 15:04:05"
	}
	return "2006-01-02 15:04"
}

func orUTC(loc *time.Location) *time.Location {
	if loc == nil {
		return time.UTC
	}
	return loc
}

// named is "epoch 5" or "epochs 1-3, 5".
func named(epochs []uint64) string {
	if len(epochs) == 1 {
		return "epoch " + List(epochs)
	}
	return "epochs " + List(epochs)
}

// List writes epoch numbers as runs: "1-3, 5, 7-9".
func List(epochs []uint64) string {
	var parts []string
	for i := 0; i < len(epochs); {
		j := i
		for j+1 < len(epochs) && epochs[j+1] == epochs[j]+1 {
			j++
		}
		p := strconv.FormatUint(epochs[i], 10)
		if j > i {
			p += "-" + strconv.FormatUint(epochs[j], 10)
		}
		parts = append(parts, p)
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
