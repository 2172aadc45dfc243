// Package timerange is the tools' wall-clock selection: --since, --from
// and --to parsed into a Range, and a Range mapped to the epochs that
// overlap it (Resolve), with the one line that says what was covered or
// why nothing was. Epochs are the finest unit of time the database keeps
// (DCPI sec. 4.3.3: counts are per epoch, not per sample), so a range
// selects whole epochs and the covered span can be wider than the range.
// Everything here is a pure function of its arguments; "now" is given, so
// the caller decides what the clock says. It does not read a database:
// profiledb.SelectTime does, and calls it.
package timerange

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Flags are --since, --from and --to as given.
type Flags struct {
	Since, From, To string
}

// Register adds --since, --from and --to to f, with their help.
func (fl *Flags) Register(f *pflag.FlagSet) {
	f.StringVar(&fl.Since, "since", "", "only epochs overlapping the last `DURATION` (90m, 2h, 7d; not with --from/--to or --epoch/--epochs)")
	f.StringVar(&fl.From, "from", "", "only epochs overlapping the time from `TIME` on: RFC 3339, or local \"2006-01-02 15:04[:05]\", or \"15:04\" today")
	f.StringVar(&fl.To, "to", "", "only epochs overlapping the time before `TIME` (as --from; default now)")
}

// Given reports whether any of the three was given.
func (fl Flags) Given() bool { return fl.Since != "" || fl.From != "" || fl.To != "" }

// Range is a wall-clock range made absolute: the half-open interval
// [From, To), or the instant From when From equals To. A zero From is
// unbounded (--to alone).
type Range struct {
	From, To time.Time
	// Now is when the range was made: the end of an open epoch.
	Now time.Time
	// Loc is the zone the range is printed in (the one local times were
	// read in).
	Loc *time.Location
}

// IsZero reports whether r selects nothing by time (no flag was given).
func (r Range) IsZero() bool { return r.Now.IsZero() }

// ErrBadRange is wrapped by every refusal of Parse.
var ErrBadRange = errors.New("bad time range")

// badf is a refusal of Parse: one line naming the flag.
func badf(format string, args ...any) error {
	return &rangeError{msg: fmt.Sprintf(format, args...)}
}

type rangeError struct{ msg string }

func (e *rangeError) Error() string { return e.msg }
func (e *rangeError) Unwrap() error { return ErrBadRange }

// Parse makes fl absolute at now, reading local times in loc. The zero
// Flags give the zero Range. --since excludes --from and --to; --from
// alone runs to now, --to alone from the first epoch. A range whose start
// is after its end is refused; one whose start equals its end is the
// instant. Each refusal is one line naming the flag.
func (fl Flags) Parse(now time.Time, loc *time.Location) (Range, error) {
	return fl.ParseAs(now, loc, "--")
}

// ParseAs is Parse with the names in its messages prefixed by dash
// instead of "--" (dcpi stats --set's keys since=, from= and to= have
// none).
func (fl Flags) ParseAs(now time.Time, loc *time.Location, dash string) (Range, error) {
	if !fl.Given() {
		return Range{}, nil
	}
	since, from, to := dash+"since", dash+"from", dash+"to"
	// A range that runs to now ends at the next whole second, so that
	// its ends print without now's fraction; a second more of range
	// selects no other epoch but one cut in that second.
	end := now.Truncate(time.Second)
	if end.Before(now) {
		end = end.Add(time.Second)
	}
	r := Range{To: end, Now: now, Loc: loc}
	if fl.Since != "" {
		if fl.From != "" || fl.To != "" {
			return Range{}, badf("%s: give either %s or %s/%s, not both", since, since, from, to)
		}
		d, err := ParseDuration(fl.Since)
		if err != nil {
			return Range{}, badf("%s %q: %v", since, fl.Since, err)
		}
		r.From = end.Add(-d)
		return r, nil
	}
	var err error
	if fl.From != "" {
		if r.From, err = ParseTime(fl.From, now, loc); err != nil {
			return Range{}, badf("%s %q: %v", from, fl.From, err)
		}
	}
	if fl.To != "" {
		if r.To, err = ParseTime(fl.To, now, loc); err != nil {
			return Range{}, badf("%s %q: %v", to, fl.To, err)
		}
	}
	if r.From.After(r.To) {
		// The times as parsed: ParseTime trims the space around them,
		// and the refusal is one line.
		end := to + " " + strings.TrimSpace(fl.To)
		if fl.To == "" {
			end = "now"
		}
		return Range{}, badf("%s %s is after %s (%s)", from, strings.TrimSpace(fl.From), end, clock(r.To, loc, true))
	}
	return r, nil
}

// days is a duration in days, optionally followed by a Go duration (7d,
// 1d12h).
var days = regexp.MustCompile(`^([0-9]+)d(.*)$`)

// ParseDuration parses a positive Go duration ("90m", "2h30m") or a number
// of days with an optional Go duration after it ("7d", "1d12h").
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	const want = "want a positive duration such as 90m, 2h or 7d"
	var d time.Duration
	rest := s
	if m := days.FindStringSubmatch(s); m != nil {
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || n > int64(maxDuration/(24*time.Hour)) {
			return 0, errors.New("too long (at most 106751d)")
		}
		d, rest = time.Duration(n)*24*time.Hour, m[2]
	}
	if rest != "" {
		if d > 0 && (rest[0] == '-' || rest[0] == '+') {
			return 0, errors.New(want)
		}
		e, err := time.ParseDuration(rest)
		if err != nil {
			return 0, errors.New(want)
		}
		if e > 0 && d > maxDuration-e {
			return 0, errors.New("too long (at most 106751d)")
		}
		d += e
	}
	if d <= 0 {
		return 0, errors.New(want)
	}
	return d, nil
}

const maxDuration = time.Duration(1<<63 - 1)

// localLayouts are the local-time forms ParseTime reads, with a date; the
// clock-only forms mean today.
var (
	localLayouts = []string{"2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"}
	clockLayouts = []string{"15:04:05", "15:04"}
)

// ParseTime parses an RFC 3339 time, a local "2006-01-02 15:04[:05]" (or
// with a T, or a date alone: its midnight) in loc, or a clock time
// "15:04[:05]" of now's day in loc.
func ParseTime(s string, now time.Time, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range localLayouts {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	for _, layout := range clockLayouts {
		if c, err := time.Parse(layout, s); err == nil {
			y, m, d := now.In(loc).Date()
			return time.Date(y, m, d, c.Hour(), c.Minute(), c.Second(), c.Nanosecond(), loc), nil
		}
	}
	return time.Time{}, errors.New(`want RFC 3339 (2006-01-02T15:04:05Z07:00), local "2006-01-02 15:04[:05]", or "15:04" (today)`)
}
