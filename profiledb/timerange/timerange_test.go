package timerange

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	// now is 2026-11-20 12:00 UTC; est is five hours behind.
	now = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	est = time.FixedZone("EST", -5*3600)
)

func at(h, m int) time.Time { return time.Date(2026, 11, 20, h, m, 0, 0, time.UTC) }

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "2h", want: 2 * time.Hour},
		{in: "90m", want: 90 * time.Minute},
		{in: " 1h30m ", want: 90 * time.Minute},
		{in: "7d", want: 7 * 24 * time.Hour},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "+2h", want: 2 * time.Hour},
		{in: "1ns", want: 1},
		{in: "-2h", bad: true},
		{in: "0", bad: true},
		{in: "0s", bad: true},
		{in: "0d", bad: true},
		{in: "1d-1h", bad: true},
		{in: "2", bad: true},
		{in: "2 hours", bad: true},
		{in: "d", bad: true},
		{in: "", bad: true},
		{in: "106752d", bad: true},
		{in: "99999999999999999999d", bad: true},
		{in: "106751d24h", bad: true},
	} {
		got, err := ParseDuration(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseDuration(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fl       Flags
		loc      *time.Location
		now      time.Time // default: now
		from, to time.Time
		err      string // a substring of the refusal; it must wrap ErrBadRange
	}{
		{name: "none", fl: Flags{}},
		{name: "since", fl: Flags{Since: "2h"}, from: at(10, 0), to: now},
		{name: "since days", fl: Flags{Since: "1d"}, from: now.Add(-24 * time.Hour), to: now},
		{name: "rfc3339", fl: Flags{From: "2026-11-20T08:00:00Z", To: "2026-11-20T10:00:00+01:00"}, from: at(8, 0), to: at(9, 0)},
		{name: "rfc3339 nanos", fl: Flags{From: "2026-11-20T08:00:00.5Z"}, from: at(8, 0).Add(500 * time.Millisecond), to: now},
		{name: "local in est", fl: Flags{From: "2026-11-20 03:00", To: "2026-11-20 04:30:15"}, loc: est,
			from: at(8, 0), to: at(9, 30).Add(15 * time.Second)},
		{name: "local with T", fl: Flags{From: "2026-11-20T03:00"}, loc: est, from: at(8, 0), to: now},
		{name: "date alone", fl: Flags{From: "2026-11-20"}, from: at(0, 0), to: now},
		// 12:00 UTC is 07:00 EST, still the 20th there: 06:00 is today's.
		{name: "clock today est", fl: Flags{From: "06:00"}, loc: est, from: at(11, 0), to: now},
		{name: "clock with fraction", fl: Flags{From: "09:00:01.5"}, from: at(9, 0).Add(1500 * time.Millisecond), to: now},
		{name: "local with fraction", fl: Flags{From: "2026-11-20 09:00:01.25"}, from: at(9, 0).Add(1250 * time.Millisecond), to: now},
		{name: "since at a fraction of a second", fl: Flags{Since: "1h"}, now: now.Add(-time.Second + 7),
			from: at(11, 0), to: now},
		{name: "from to a fraction of a second", fl: Flags{From: "10:00"}, now: now.Add(-time.Second + 7),
			from: at(10, 0), to: now},
		{name: "to alone", fl: Flags{To: "09:00"}, to: at(9, 0)},
		{name: "from equals to", fl: Flags{From: "09:00", To: "09:00"}, from: at(9, 0), to: at(9, 0)},
		{name: "from after to", fl: Flags{From: "10:00", To: "09:00"}, err: "--from 10:00 is after --to 09:00 (2026-11-20 09:00 UTC)"},
		{name: "from in the future", fl: Flags{From: "13:00"}, err: "--from 13:00 is after now (2026-11-20 12:00 UTC)"},
		{name: "since and from", fl: Flags{Since: "1h", From: "09:00"}, err: "--since: give either --since or --from/--to, not both"},
		{name: "since and to", fl: Flags{Since: "1h", To: "09:00"}, err: "not both"},
		{name: "negative since", fl: Flags{Since: "-2h"}, err: `--since "-2h": want a positive duration`},
		{name: "zero since", fl: Flags{Since: "0s"}, err: `--since "0s": want a positive duration`},
		{name: "bad since", fl: Flags{Since: "yesterday"}, err: `--since "yesterday": want a positive duration`},
		{name: "bad from", fl: Flags{From: "noon"}, err: `--from "noon": want RFC 3339`},
		{name: "bad to", fl: Flags{To: "25:00"}, err: `--to "25:00": want RFC 3339`},
		{name: "bad zone", fl: Flags{From: "2026-11-20T08:00:00+25:00"}, err: `--from "2026-11-20T08:00:00+25:00"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loc := tc.loc
			if loc == nil {
				loc = time.UTC
			}
			n := tc.now
			if n.IsZero() {
				n = now
			}
			r, err := tc.fl.Parse(n, loc)
			if tc.err != "" {
				if err == nil || !errors.Is(err, ErrBadRange) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse: %v; want an ErrBadRange containing %q", err, tc.err)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("Parse: %q is more than one line", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.fl == (Flags{}) {
				if !r.IsZero() {
					t.Fatalf("Parse of no flags = %+v, want the zero Range", r)
				}
				return
			}
			if !r.From.Equal(tc.from) || !r.To.Equal(tc.to) || !r.Now.Equal(n) {
				t.Errorf("Parse = [%v, %v) now %v; want [%v, %v)", r.From, r.To, r.Now, tc.from, tc.to)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	// Epochs 1-3 are consecutive hours from 08:00; 4 is open since 11:00;
	// 5 was never given a start; 6 is an instant at 07:00.
	epochs := []Epoch{
		{Number: 3, Start: at(10, 0), End: at(11, 0)},
		{Number: 1, Start: at(8, 0), End: at(9, 0)},
		{Number: 2, Start: at(9, 0), End: at(10, 0)},
		{Number: 4, Start: at(11, 0)},
		{Number: 5},
		{Number: 6, Start: at(7, 0), End: at(7, 0)},
	}
	rng := func(from, to time.Time) Range { return Range{From: from, To: to, Now: now, Loc: time.UTC} }
	for _, tc := range []struct {
		name string
		r    Range
		eps  []Epoch // default: epochs
		want []uint64
		line string // Cover.String, or the error's text
	}{
		{name: "inside one", r: rng(at(8, 10), at(8, 20)), want: []uint64{1},
			line: "time range 2026-11-20 08:10 to 08:20 UTC: epoch 1, 2026-11-20 08:00 to 09:00 UTC; epoch 5 has no start time and is left out"},
		{name: "across two", r: rng(at(8, 30), at(9, 30)), want: []uint64{1, 2}},
		{name: "ends where 2 starts", r: rng(at(8, 0), at(9, 0)), want: []uint64{1}},
		{name: "starts where 1 ends", r: rng(at(9, 0), at(10, 0)), want: []uint64{2}},
		{name: "instant at a boundary", r: rng(at(9, 0), at(9, 0)), want: []uint64{2}},
		{name: "instant inside", r: rng(at(9, 59), at(9, 59)), want: []uint64{2}},
		{name: "instant epoch inside", r: rng(at(6, 0), at(8, 0)), want: []uint64{6}},
		{name: "instant epoch at the range's end", r: rng(at(6, 0), at(7, 0)), want: nil,
			line: "no epoch overlaps 2026-11-20 06:00 to 07:00 UTC; the epochs span 2026-11-20 07:00 to 12:00 UTC (epochs 1-4, 6)"},
		{name: "open epoch to now", r: rng(at(11, 30), now), want: []uint64{4},
			line: "time range 2026-11-20 11:30 to 12:00 UTC: epoch 4, 2026-11-20 11:00 to 12:00 UTC (epoch 4 open); epoch 5 has no start time and is left out"},
		{name: "after now", r: rng(now, now.Add(time.Hour)), want: nil},
		{name: "up to", r: rng(time.Time{}, at(8, 30)), want: []uint64{1, 6}},
		{name: "all", r: rng(time.Time{}, now), want: []uint64{1, 2, 3, 4, 6}},
		{name: "before all", r: rng(at(2, 0), at(4, 0)),
			line: "no epoch overlaps 2026-11-20 02:00 to 04:00 UTC; the epochs span 2026-11-20 07:00 to 12:00 UTC (epochs 1-4, 6)"},
		{name: "only unplaced", r: rng(at(2, 0), at(4, 0)), eps: []Epoch{{Number: 1}, {Number: 2}},
			line: "no epoch overlaps 2026-11-20 02:00 to 04:00 UTC; no epoch here has a start time (epochs 1-2), so none can be placed in time"},
		{name: "none at all", r: rng(at(2, 0), at(4, 0)), eps: []Epoch{},
			line: "no epoch overlaps 2026-11-20 02:00 to 04:00 UTC; no epochs are recorded here (a dcpi node or dcpi profile database has none)"},
		{name: "in another zone", r: Range{From: at(8, 30), To: at(9, 30), Now: now, Loc: est}, want: []uint64{1, 2},
			line: "time range 2026-11-20 03:30 to 04:30 EST: epochs 1-2, 2026-11-20 03:00 to 05:00 EST; epoch 5 has no start time and is left out"},
		{name: "across days with seconds", r: rng(at(8, 0).Add(-24*time.Hour+time.Second), at(8, 30)),
			eps:  []Epoch{{Number: 7, Start: at(8, 0).Add(-24 * time.Hour), End: at(8, 0).Add(-23 * time.Hour)}},
			want: []uint64{7},
			line: "time range 2026-11-19 08:00:01 to 2026-11-20 08:30:00 UTC: epoch 7, 2026-11-19 08:00 to 09:00 UTC"},
		{name: "sub-second", r: rng(at(9, 0).Add(100*time.Millisecond), at(9, 0).Add(900*time.Millisecond)),
			eps:  []Epoch{{Number: 8, Start: at(9, 0).Add(50 * time.Millisecond), End: at(9, 0).Add(950 * time.Millisecond)}},
			want: []uint64{8},
			line: "time range 2026-11-20 09:00:00.100 to 09:00:00.900 UTC: epoch 8, 2026-11-20 09:00:00.050 to 09:00:00.950 UTC"},
		{name: "a fraction given is shown", r: rng(at(8, 30).Add(500*time.Millisecond), at(9, 30)), want: []uint64{1, 2},
			line: "time range 2026-11-20 08:30:00.500 to 09:30:00.000 UTC: epochs 1-2, 2026-11-20 08:00 to 10:00 UTC; epoch 5 has no start time and is left out"},
		{name: "an epoch's fraction is not", r: rng(at(8, 30), at(9, 30)),
			eps:  []Epoch{{Number: 1, Start: at(8, 0).Add(389 * time.Millisecond), End: at(9, 0).Add(240 * time.Millisecond)}},
			want: []uint64{1},
			line: "time range 2026-11-20 08:30 to 09:30 UTC: epoch 1, 2026-11-20 08:00 to 09:00 UTC"},
		{name: "open epoch started in the future", r: rng(now.Add(time.Hour), now.Add(time.Hour)),
			eps: []Epoch{{Number: 9, Start: now.Add(time.Hour)}}, want: []uint64{9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eps := tc.eps
			if eps == nil {
				eps = epochs
			}
			c, err := Resolve(tc.r, eps)
			if tc.want == nil {
				if !errors.Is(err, ErrNoEpoch) {
					t.Fatalf("Resolve = %v, %v; want ErrNoEpoch", c.Epochs, err)
				}
				if tc.line != "" && err.Error() != tc.line {
					t.Errorf("error\n got %s\nwant %s", err, tc.line)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.Epochs, tc.want) {
				t.Errorf("epochs %v, want %v", c.Epochs, tc.want)
			}
			if tc.line != "" && c.String() != tc.line {
				t.Errorf("line\n got %s\nwant %s", c, tc.line)
			}
		})
	}
}

func TestList(t *testing.T) {
	for in, want := range map[string]string{"": "", "5": "5", "1 2 3": "1-3", "1 2 3 5 7 8 9": "1-3, 5, 7-9", "0 2": "0, 2"} {
		var eps []uint64
		for _, f := range strings.Fields(in) {
			eps = append(eps, uint64(f[0]-'0'))
		}
		if got := List(eps); got != want {
			t.Errorf("List(%v) = %q, want %q", eps, got, want)
		}
	}
}
