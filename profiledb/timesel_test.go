package profiledb

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"dcpi/profiledb/timerange"
	"dcpi/storage"
	"dcpi/wire"
)

// timedDB is a local database of two epochs with known times: epoch 1,
// 2026-11-20 08:00 to 09:00 UTC, holds 100 cycles samples; epoch 2, open
// since 09:00, 30.
func timedDB(t *testing.T) *Local {
	t.Helper()
	db, err := storage.Open(t.TempDir(), storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	k := wire.MustParseImageKey("buildid:0101")
	for i, c := range []struct {
		epoch      uint64
		count      uint64
		start, end time.Time
		state      storage.EpochState
	}{
		{1, 100, at(8, 0), at(9, 0), storage.EpochSealed},
		{2, 30, at(9, 0), time.Time{}, storage.EpochOpen},
	} {
		b := &wire.Batch{Version: wire.Version, Host: "h", Seq: uint64(i + 1), Epoch: c.epoch, Entries: []wire.Entry{{Image: k, Offset: 0x10, Count: c.count}}}
		b.Normalize()
		if _, err := db.ApplyBatch(b); err != nil {
			t.Fatal(err)
		}
		if err := db.PutEpoch(storage.Epoch{Number: c.epoch, Start: c.start, End: c.end, State: c.state}); err != nil {
			t.Fatal(err)
		}
	}
	return NewLocal(db)
}

func at(h, m int) time.Time { return time.Date(2026, 11, 20, h, m, 0, 0, time.UTC) }

// TestSelectTime: a range selects the epochs that overlap it, so two
// ranges over the same two epochs read different totals, and the line
// says which epochs and what span each covered; a range overlapping none
// is one line naming the span the epochs cover.
func TestSelectTime(t *testing.T) {
	ctx := context.Background()
	db := timedDB(t)
	now := at(10, 0)
	for _, c := range []struct {
		name   string
		flags  timerange.Flags
		epochs []uint64
		total  uint64
		line   string
	}{
		{"the first hour", timerange.Flags{From: "2026-11-20T08:00:00Z", To: "2026-11-20T09:00:00Z"}, []uint64{1}, 100,
			"time range 2026-11-20 08:00 to 09:00 UTC: epoch 1, 2026-11-20 08:00 to 09:00 UTC"},
		{"the last half hour", timerange.Flags{Since: "30m"}, []uint64{2}, 30,
			"time range 2026-11-20 09:30 to 10:00 UTC: epoch 2, 2026-11-20 09:00 to 10:00 UTC (epoch 2 open)"},
		{"both", timerange.Flags{From: "08:30"}, []uint64{1, 2}, 130,
			"time range 2026-11-20 08:30 to 10:00 UTC: epochs 1-2, 2026-11-20 08:00 to 10:00 UTC (epoch 2 open)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := c.flags.Parse(now, time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			sel := Selection{Time: r}
			var line strings.Builder
			if err := SelectTime(ctx, db, &sel, &line); err != nil {
				t.Fatal(err)
			}
			total, err := db.Totals(ctx, sel.Filter)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(sel.Filter.Epochs, c.epochs) || total != c.total {
				t.Errorf("epochs %v, %d samples; want %v, %d", sel.Filter.Epochs, total, c.epochs, c.total)
			}
			if got := strings.TrimSuffix(line.String(), "\n"); got != c.line {
				t.Errorf("line\n got %s\nwant %s", got, c.line)
			}
		})
	}
	r, _ := timerange.Flags{From: "2026-11-29 02:00", To: "2026-11-29 04:00"}.Parse(now, time.UTC)
	sel := Selection{Time: r}
	err := SelectTime(ctx, db, &sel, &strings.Builder{})
	want := "no epoch overlaps 2026-11-29 02:00 to 04:00 UTC; the epochs span 2026-11-20 08:00 to 10:00 UTC (epochs 1-2)"
	if !errors.Is(err, timerange.ErrNoEpoch) || err.Error() != want || sel.Filter.Epochs != nil {
		t.Errorf("a range past every epoch: %v (epochs %v); want %q", err, sel.Filter.Epochs, want)
	}
	// Without a range, nothing is read and nothing said.
	var line strings.Builder
	if err := SelectTime(ctx, catalog{}, &Selection{}, &line); err != nil || line.Len() != 0 {
		t.Errorf("no range: %v, %q", err, line.String())
	}
}

// TestSelectionTime: the time flags are checked with the others, before
// any database is open; with --epoch or --epochs they are refused.
func TestSelectionTime(t *testing.T) {
	s, err := Filters{Time: timerange.Flags{Since: "2h"}, Hosts: []string{"h"}}.Selection()
	if err != nil || s.Time.IsZero() || s.Time.To.Sub(s.Time.From) != 2*time.Hour {
		t.Fatalf("--since 2h: %+v, %v", s.Time, err)
	}
	for _, c := range []struct {
		f    Filters
		want string
	}{
		{Filters{Time: timerange.Flags{Since: "-2h"}}, `--since "-2h": want a positive duration`},
		{Filters{Time: timerange.Flags{Since: "2h", From: "09:00"}}, "--since: give either --since or --from/--to, not both"},
		{Filters{Time: timerange.Flags{From: "2026-11-20 10:00", To: "2026-11-20 09:00"}}, "--from 2026-11-20 10:00 is after --to 2026-11-20 09:00"},
		{Filters{Time: timerange.Flags{To: "soon"}}, `--to "soon": want RFC 3339`},
		{Filters{Time: timerange.Flags{Since: "2h"}, Epochs: []string{"1"}}, "--since: give either a time range or --epoch/--epochs, not both"},
		{Filters{Time: timerange.Flags{To: "09:00"}, Ranges: []string{"1-2"}}, "--to: give either"},
	} {
		if _, err := c.f.Selection(); err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v, want one line with %q", c.f, err, c.want)
		}
	}
}

// TestSetSpecTime: dcpi diff's and stats' SPEC take since=, from= and to=
// as the flags, each side its own range; the set's name says what it
// covered.
func TestSetSpecTime(t *testing.T) {
	// A set's range is read and printed in the local zone; fix it.
	local := time.Local
	time.Local = time.UTC
	t.Cleanup(func() { time.Local = local })
	ctx := context.Background()
	db := timedDB(t)
	a, err := ParseSetSpec(ctx, db, storage.Query{}, "from=2026-11-20T08:00:00Z,to=2026-11-20T08:30:00Z")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Filter.Epochs, []uint64{1}) || a.Name != "from=2026-11-20T08:00:00Z,to=2026-11-20T08:30:00Z [epoch 1, 2026-11-20 08:00 to 09:00 UTC]" {
		t.Errorf("set %+v", a)
	}
	// The base's epochs are replaced, as by epoch=.
	b, err := ParseSetSpec(ctx, db, storage.Query{Epochs: []uint64{1}}, "from=2026-11-20T09:00:00Z,to=2026-11-20T10:00:00Z,host=h")
	if err != nil || !slices.Equal(b.Filter.Epochs, []uint64{2}) || !slices.Equal(b.Filter.Hosts, []string{"h"}) {
		t.Errorf("set %+v, %v", b, err)
	}
	for spec, want := range map[string]string{
		"since=-1h":           `since "-1h": want a positive duration`,
		"since=1h,from=09:00": "since: give either since or from/to, not both",
		"since=1h,since=2h":   "since given twice",
		"since=1h,epoch=1":    "give either a time range (since, from, to) or epoch/epochs, not both",
		"from=2026-01-01T00:00:00Z,to=2026-01-02T00:00:00Z": "no epoch overlaps 2026-01-01 00:00 to 2026-01-02 00:00",
		"to=noon": `to "noon": want RFC 3339`,
	} {
		if _, err := ParseSetSpec(ctx, db, storage.Query{}, spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
}
