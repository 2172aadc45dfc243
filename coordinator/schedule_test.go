package coordinator

import (
	"path/filepath"
	"testing"
	"time"

	"dcpi/storage"
)

func TestNextBoundary(t *testing.T) {
	hour := time.Hour
	for _, c := range []struct {
		start time.Time
		every time.Duration
		want  time.Time
	}{
		{t0, hour, t0.Add(hour)}, // on a boundary: the next one
		{t0.Add(time.Nanosecond), hour, t0.Add(hour)},
		{t0.Add(59 * time.Minute), hour, t0.Add(hour)},
		{t0.Add(10 * time.Minute), 15 * time.Minute, t0.Add(15 * time.Minute)},
		{t0.Add(5 * time.Hour), 24 * time.Hour, time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC)},
		{time.Unix(0, 0).Add(-90 * time.Minute), hour, time.Unix(0, 0).Add(-hour)}, // floor before 1970
		{time.Unix(0, 0).Add(-hour), hour, time.Unix(0, 0)},
		{time.Unix(7, 0), 3 * time.Second, time.Unix(9, 0)},
	} {
		if got := NextBoundary(c.start, c.every); !got.Equal(c.want) {
			t.Errorf("NextBoundary(%v, %v) = %v, want %v", c.start, c.every, got, c.want)
		}
	}
}

func TestScheduledCutDue(t *testing.T) {
	open := func(n uint64, start time.Time) storage.Epoch {
		return storage.Epoch{Number: n, Start: start, State: storage.EpochOpen}
	}
	closing := storage.Epoch{Number: 1, Start: t0.Add(-2 * time.Hour), End: t0.Add(10 * time.Minute), State: storage.EpochClosing}
	for name, c := range map[string]struct {
		eps   []storage.Epoch
		every time.Duration
		now   time.Time
		want  uint64 // 0: none due
	}{
		"no schedule":              {[]storage.Epoch{open(1, t0)}, 0, t0.Add(48 * time.Hour), 0},
		"no epoch":                 {nil, time.Hour, t0, 0},
		"before the boundary":      {[]storage.Epoch{open(1, t0.Add(time.Minute))}, time.Hour, t0.Add(time.Hour - 1), 0},
		"at the boundary":          {[]storage.Epoch{open(1, t0.Add(time.Minute))}, time.Hour, t0.Add(time.Hour), 1},
		"cut already":              {[]storage.Epoch{closing, open(2, t0.Add(10*time.Minute))}, time.Hour, t0.Add(30 * time.Minute), 0},
		"not cut yet":              {[]storage.Epoch{closing, open(2, t0.Add(10*time.Minute))}, time.Hour, t0.Add(time.Hour), 2},
		"three periods down: once": {[]storage.Epoch{open(4, t0)}, time.Hour, t0.Add(3*time.Hour + 30*time.Minute), 4},
		"clock behind the start":   {[]storage.Epoch{open(1, t0)}, time.Hour, t0.Add(-time.Minute), 0},
	} {
		got, due := ScheduledCutDue(c.eps, c.every, c.now)
		switch {
		case c.want == 0 && due:
			t.Errorf("%s: %+v due, want none", name, got)
		case c.want != 0 && (!due || got.Epoch != c.want || !got.At.Equal(c.now)):
			t.Errorf("%s: %+v, %v; want a cut of epoch %d at %v", name, got, due, c.want, c.now)
		}
	}
}

func TestCheckEpochEvery(t *testing.T) {
	seal := 200 * time.Millisecond
	for _, c := range []struct {
		every, seal time.Duration
		ok          bool
	}{
		{0, seal, true}, {time.Second, seal, true}, {time.Hour, seal, true},
		{-time.Second, seal, false}, {999 * time.Millisecond, seal, false},
		{2 * time.Second, 3 * time.Second, false}, {3 * time.Second, 3 * time.Second, true},
	} {
		if err := CheckEpochEvery(c.every, c.seal); (err == nil) != c.ok {
			t.Errorf("CheckEpochEvery(%v, %v) = %v, want ok %v", c.every, c.seal, err, c.ok)
		}
	}
}

// TestScheduledCutModel runs random sequences of cuts by hand, scheduled
// cuts naming the open epoch or a stale one, and restarts against a
// model that cuts only when the named epoch is open, and replays the same
// log into a second state machine, which must end identical: a
// conditional cut decides from the replicated state alone.
func TestScheduledCutModel(t *testing.T) {
	r := testRand(t)
	dir := t.TempDir()
	f, err := OpenFSM(filepath.Join(dir, "a"), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { f.Close() }()
	var log [][]byte
	apply := func(c Command) any {
		b, err := EncodeCommand(c)
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, b)
		return f.ApplyCommand(uint64(len(log)), b)
	}
	apply(&StartEpochs{At: t0})
	open, cuts := uint64(1), 0 // the model: the open epoch
	now := t0
	for i := range 300 {
		now = now.Add(time.Duration(1+r.IntN(90)) * time.Minute)
		switch k := r.IntN(10); {
		case k == 0:
			if got := apply(&CutEpoch{At: now}); got != open+1 {
				t.Fatalf("step %d: hand cut opened %v, want %d", i, got, open+1)
			}
			open++
		case k == 1:
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if f, err = OpenFSM(filepath.Join(dir, "a"), t.Logf); err != nil {
				t.Fatal(err)
			}
		default:
			n := open - uint64(r.IntN(min(int(open), 3))) // the open epoch, or one or two before it
			if r.IntN(8) == 0 {
				n = open + 1 + uint64(r.IntN(3)) // not opened yet
			}
			want := ScheduledCutResult{}
			if n == open {
				open++
				cuts++
				want.Opened = open
			}
			if got := apply(&ScheduledCut{Epoch: n, At: now}); got != want {
				t.Fatalf("step %d: scheduled cut of %d with %d open: %v, want %v", i, n, open, got, want)
			}
		}
		eps, err := f.DB().Epochs()
		if err != nil {
			t.Fatal(err)
		}
		if cur, ok := openEpoch(eps); !ok || cur.Number != open || uint64(len(eps)) != open {
			t.Fatalf("step %d: %d epochs, open %+v; the model has %d open", i, len(eps), cur, open)
		}
	}
	t.Logf("%d scheduled cuts, %d epochs", cuts, open)
	g, err := OpenFSM(filepath.Join(dir, "b"), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for i, b := range log {
		if err, ok := g.ApplyCommand(uint64(i+1), b).(error); ok {
			t.Fatalf("replay of entry %d: %v", i+1, err)
		}
	}
	if a, b := dumpDB(t, f.DB()), dumpDB(t, g.DB()); a != b {
		t.Errorf("the replay differs:\n%s\nwant\n%s", b, a)
	}
}
