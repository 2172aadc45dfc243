package regress_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"dcpi/analysis"
	"dcpi/analysis/regress"
	"dcpi/analysis/regress/regresstest"
	"dcpi/storage"
	"dcpi/wire"
)

// storedDB writes epochs into a storage database, one batch per epoch,
// as the coordinator's apply does, with the images' records and each
// epoch's state.
func storedDB(t *testing.T, epochs []regresstest.Epoch) (*storage.DB, []storage.Epoch) {
	t.Helper()
	db, err := storage.Open(t.TempDir(), storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, r := range regresstest.Images() {
		if err := db.PutImage(r); err != nil {
			t.Fatal(err)
		}
	}
	recs, meta := regresstest.Records(epochs)
	for _, e := range meta {
		b := &wire.Batch{Version: wire.Version, Host: "alpha", Seq: e.Number, Epoch: e.Number}
		for _, r := range recs {
			if r.Epoch == e.Number {
				b.Entries = append(b.Entries, wire.Entry{Image: r.Image, Offset: r.Offset, Count: r.Count})
			}
		}
		b.Normalize()
		if _, err := db.ApplyBatch(b); err != nil {
			t.Fatal(err)
		}
		if err := db.PutEpoch(e); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.Epochs()
	if err != nil {
		t.Fatal(err)
	}
	return db, got
}

// brief is a finding as the tests compare it: "image procedure
// direction".
func brief(fs []regress.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, strings.Join(strings.Fields(fmt.Sprintf("%s %s %s", f.Image, f.Procedure, f.Direction)), " "))
	}
	return out
}

func with(epochs []regresstest.Epoch, more ...regresstest.Epoch) []regresstest.Epoch {
	return append(slices.Clone(epochs), more...)
}

// TestEvaluate: against a stored database of known counts, a procedure
// whose share jumps is found (and the shares it took from, and the image
// that holds it); the same shares with noise are not; an open epoch is
// never the one evaluated; a tiny procedure stays under the floor;
// the baseline is the K sealed epochs before the epoch.
func TestEvaluate(t *testing.T) {
	sealed := storage.EpochSealed
	jump := regresstest.Epoch{State: sealed, Steady: 5000, Jumpy: 3000, Tiny: 2, Memcpy: 4000}
	noise := regresstest.Epoch{State: sealed, Steady: 5060, Jumpy: 980, Tiny: 3, Memcpy: 3960}
	tinyJump := regresstest.Epoch{State: sealed, Steady: 5000, Jumpy: 1000, Tiny: 60, Memcpy: 4000}
	openJump := jump
	openJump.State = storage.EpochOpen
	defaults := regress.DefaultOptions()
	for _, c := range []struct {
		name     string
		epochs   []regresstest.Epoch
		q        regress.Query
		epoch    uint64
		baseline []uint64
		want     []string
	}{
		{"a jump is found", with(regresstest.Steady(7), jump), regress.Query{Options: defaults}, 8, []uint64{2, 3, 4, 5, 6, 7},
			[]string{"/bin/app jumpy increase", "/bin/app steady decrease", "/lib/libc decrease", "/lib/libc memcpy decrease", "/bin/app increase"}},
		{"noise at the same share is not", with(regresstest.Steady(7), noise), regress.Query{Options: defaults}, 8, []uint64{2, 3, 4, 5, 6, 7}, nil},
		{"an open epoch is not evaluated: the newest sealed is", with(regresstest.Steady(7), openJump), regress.Query{Options: defaults}, 7,
			[]uint64{1, 2, 3, 4, 5, 6}, nil},
		{"a tiny procedure stays under the floor", with(regresstest.Steady(7), tinyJump), regress.Query{Options: defaults}, 8,
			[]uint64{2, 3, 4, 5, 6, 7}, nil},
		{"above a floor of 1 it is found", with(regresstest.Steady(7), tinyJump),
			regress.Query{Options: regress.Options{Baseline: 6, Top: 20, Z: 3, MinSamples: 1}}, 8, []uint64{2, 3, 4, 5, 6, 7},
			[]string{"/bin/app tiny increase"}},
		{"the baseline is K epochs", with(regresstest.Steady(7), jump), regress.Query{Options: regress.Options{Baseline: 2, Top: 20, Z: 3}}, 8,
			[]uint64{6, 7}, []string{"/bin/app jumpy increase", "/bin/app steady decrease", "/lib/libc decrease",
				"/lib/libc memcpy decrease", "/bin/app increase"}},
		{"bounded by top, largest |z| first", with(regresstest.Steady(7), jump), regress.Query{Options: regress.Options{Baseline: 6, Top: 2, Z: 3}},
			8, []uint64{2, 3, 4, 5, 6, 7}, []string{"/bin/app jumpy increase", "/bin/app steady decrease"}},
		{"an older epoch by number", with(regresstest.Steady(7), jump), regress.Query{Epoch: 4, Options: defaults}, 4, []uint64{1, 2, 3}, nil},
		{"the first sealed epoch has no baseline", regresstest.Steady(1), regress.Query{Options: defaults}, 1, []uint64{}, nil},
		{"a filter narrows both sides", with(regresstest.Steady(7), jump),
			regress.Query{ImagePaths: []string{"/lib/libc"}, Options: defaults}, 8, []uint64{2, 3, 4, 5, 6, 7}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, epochs := storedDB(t, c.epochs)
			ev, err := regress.Evaluate(context.Background(), db, epochs, c.q)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Epoch != c.epoch || !slices.Equal(ev.Baseline, c.baseline) && len(ev.Baseline)+len(c.baseline) > 0 {
				t.Errorf("evaluated epoch %d against %v; want %d against %v", ev.Epoch, ev.Baseline, c.epoch, c.baseline)
			}
			if got := brief(ev.Findings); !slices.Equal(got, c.want) {
				t.Errorf("findings\n got %q\nwant %q", got, c.want)
			}
			if len(ev.Findings) > c.q.Top || ev.Significant < len(ev.Findings) {
				t.Errorf("%d findings of %d significant; top %d", len(ev.Findings), ev.Significant, c.q.Top)
			}
		})
	}
}

// TestEvaluateFigures: a finding carries the diff's figures: the shares,
// the counts (the baseline's pooled) and a z-score that is |z| >= Z.
func TestEvaluateFigures(t *testing.T) {
	jump := regresstest.Epoch{State: storage.EpochSealed, Steady: 5000, Jumpy: 3000, Memcpy: 2000}
	src, epochs := regresstest.Mem(with(regresstest.Steady(2), jump))
	ev, err := regress.Evaluate(context.Background(), src, epochs, regress.Query{Options: regress.DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Samples != 10000 || ev.BaselineSamples != 2*10002 {
		t.Fatalf("totals %d, baseline %d; want 10000, 20004", ev.Samples, ev.BaselineSamples)
	}
	f := ev.Findings[0]
	if f.Procedure != "jumpy" || f.Samples != 3000 || f.BaselineSamples != 2000 || f.SharePct != 30 || f.Z < 3 ||
		fmt.Sprintf("%.2f", f.BaselinePct) != "10.00" {
		t.Errorf("first finding %+v", f)
	}
}

// TestEvaluateRefuses: bad options, an epoch that is not sealed, and a
// database with no sealed epoch are refused with an error callers test.
func TestEvaluateRefuses(t *testing.T) {
	ctx := context.Background()
	open := regresstest.Epoch{State: storage.EpochOpen, Steady: 1}
	closing := regresstest.Epoch{State: storage.EpochClosing, Steady: 1}
	src, epochs := regresstest.Mem(with(regresstest.Steady(2), closing, open))
	ok := regress.DefaultOptions()
	for _, c := range []struct {
		name string
		q    regress.Query
		err  error
	}{
		{"baseline 0", regress.Query{Options: regress.Options{Baseline: 0, Top: 1, Z: 3}}, regress.ErrOption},
		{"top 0", regress.Query{Options: regress.Options{Baseline: 1, Top: 0, Z: 3}}, regress.ErrOption},
		{"negative z", regress.Query{Options: regress.Options{Baseline: 1, Top: 1, Z: -3}}, regress.ErrOption},
		{"zero z", regress.Query{Options: regress.Options{Baseline: 1, Top: 1}}, regress.ErrOption},
		{"the open epoch", regress.Query{Epoch: 4, Options: ok}, regress.ErrNotSealed},
		{"a closing epoch", regress.Query{Epoch: 3, Options: ok}, regress.ErrNotSealed},
		{"no such epoch", regress.Query{Epoch: 9, Options: ok}, regress.ErrNotSealed},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev, err := regress.Evaluate(ctx, src, epochs, c.q)
			// Not sealed is a bad query (the web's 400); a bad option is
			// the caller's own.
			if !errors.Is(err, c.err) || errors.Is(err, analysis.ErrQuery) != (c.err == regress.ErrNotSealed) || ev != nil {
				t.Errorf("got %v, %v; want %v", ev, err, c.err)
			}
		})
	}
	_, onlyOpen := regresstest.Mem([]regresstest.Epoch{open})
	if _, err := regress.Evaluate(ctx, src, onlyOpen, regress.Query{Options: ok}); !errors.Is(err, regress.ErrNoSealed) {
		t.Errorf("no sealed epoch: %v; want ErrNoSealed", err)
	}
}

// TestDue: a watch evaluates each sealed epoch once, in order, never an
// open or closing one, and an epoch sealed ahead of an older one still
// closing waits for it.
func TestDue(t *testing.T) {
	const o, c, s = storage.EpochOpen, storage.EpochClosing, storage.EpochSealed
	list := func(states ...storage.EpochState) []storage.Epoch {
		var out []storage.Epoch
		for i, st := range states {
			out = append(out, storage.Epoch{Number: uint64(i + 1), State: st})
		}
		return out
	}
	for _, c := range []struct {
		name   string
		epochs []storage.Epoch
		last   uint64
		want   []uint64
	}{
		{"nothing sealed", list(o), 0, nil},
		{"first look: the newest sealed only", list(s, s, s, o), 0, []uint64{3}},
		{"each newly sealed, in order", list(s, s, s, s, s, o), 2, []uint64{3, 4, 5}},
		{"nothing new", list(s, s, c, o), 2, nil},
		{"sealed ahead of a closing one waits", list(s, s, c, s, o), 2, nil},
		{"first look stops at a closing one", list(s, c, s, o), 0, []uint64{1}},
		{"then goes on", list(s, s, s, s, o), 1, []uint64{2, 3, 4}},
		{"unsorted input", []storage.Epoch{{Number: 3, State: o}, {Number: 2, State: s}, {Number: 1, State: s}}, 1, []uint64{2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := regress.Due(c.epochs, c.last); !slices.Equal(got, c.want) {
				t.Errorf("Due(after %d) = %v; want %v", c.last, got, c.want)
			}
		})
	}
}
