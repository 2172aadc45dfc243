package week

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"dcpi/coordinator"
	"dcpi/loadgen"
)

var keepAll = flag.Bool("week.keep-all", false, "run TestSimulatedDay with retention off: its size check must fail")

// testRecording is a committed recording: 3 simulated s of a 2-CPU host
// running the default mix, a batch per CPU each 1 s window
// (dcpi loadgen record --seconds 3 --cpus 2 --publish-every 1).
func testRecording(t *testing.T) *loadgen.Recording {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "host.dcpiload"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := loadgen.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestSimulatedDay is the week run made short: a simulated day of hourly
// epochs on two hosts under a policy scaled to it (merge into 2-hour
// windows after 2 hours, delete after 6), held to the week's checks:
// conservation exact with the expired count, one cut per hour, the
// settled size level from hour 12 on (without retention it doubles
// between hours 12 and 24: -week.keep-all shows the check fail), and the
// last-hour query no slower at the end than at the start.
func TestSimulatedDay(t *testing.T) {
	if testing.Short() {
		t.Skip("a simulated day takes about half a minute")
	}
	pol := coordinator.Retention{Full: 2 * time.Hour, MergeTo: 2 * time.Hour, Keep: 6 * time.Hour}
	if *keepAll {
		pol = coordinator.Retention{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{Recording: testRecording(t), Hosts: 2, Hours: 24, Retention: pol, SettleEvery: 4,
		Hour: func(h Hour) {
			t.Logf("hour %2d: epoch %d open, %d epochs (%d merged), %d B (sstables %d, WAL %d, stale %d), settled %d B, last hour %.1f ms (%d epochs), last week %.1f ms (%d epochs), expired %d",
				h.Hour, h.OpenEpoch, h.Epochs, h.Merged, h.DiskBytes, h.TableBytes, h.WALBytes, h.StaleBytes, h.Settled,
				h.LastHour.Millis, h.LastHour.Epochs, h.LastWeek.Millis, h.LastWeek.Epochs, h.Expired)
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s; %v cuts (%v superseded), %v epochs merged away, %v expired, in %v", res.Conservation, res.Cuts, res.Superseded, res.MergedAway, res.ExpiredEpochs, res.Wall)
	if res.Series[len(res.Series)-1].Expired == 0 && !*keepAll {
		t.Error("nothing expired in a day under a 6-hour horizon")
	}
	if res.MergedAway == 0 && !*keepAll {
		t.Error("nothing merged in a day under a 2-hour window")
	}
	if err := res.Check(Limits{LevelFrom: 12, SizeFactor: 1.5, Window: 6, QueryFactor: 3, QuerySlackMillis: 50}); err != nil {
		t.Error(err)
	}
}

// TestCheckLevel holds the size check to series that level off and ones
// that keep growing, as a database without retention does.
func TestCheckLevel(t *testing.T) {
	series := func(sizes ...uint64) []Hour {
		var hs []Hour
		for i, s := range sizes {
			hs = append(hs, Hour{Hour: 4 * (i + 1), Settled: s})
		}
		return hs
	}
	for _, tc := range []struct {
		name  string
		sizes []uint64
		ok    bool
	}{
		{"level", []uint64{10, 20, 30, 31, 29, 33}, true},
		{"growing", []uint64{10, 20, 30, 40, 50, 60}, false},
		{"too few", []uint64{10, 20, 30}, false},
	} {
		err := CheckLevel(series(tc.sizes...), 12, 1.5)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrCheck) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestCheckFlat holds the query check to a flat series, a growing one
// and one whose range covers more epochs as it goes.
func TestCheckFlat(t *testing.T) {
	mk := func(ms func(int) float64, eps func(int) int) []Hour {
		var hs []Hour
		for i := range 13 {
			hs = append(hs, Hour{Hour: i + 1, LastHour: Query{Millis: ms(i), Epochs: eps(i), Samples: 1000}})
		}
		return hs
	}
	flat := func(int) float64 { return 10 }
	grow := func(i int) float64 { return float64((i + 1) * (i + 1)) }
	two := func(int) int { return 2 }
	more := func(i int) int { return i + 1 }
	if err := CheckFlat(mk(flat, two), 4, 3, 5); err != nil {
		t.Errorf("flat: %v", err)
	}
	if err := CheckFlat(mk(grow, two), 4, 3, 5); !errors.Is(err, ErrCheck) {
		t.Errorf("growing: %v", err)
	}
	if err := CheckFlat(mk(flat, more), 4, 3, 5); !errors.Is(err, ErrCheck) {
		t.Errorf("more epochs: %v", err)
	}
}

// TestCheckCuts holds the cut check to epochs a correct schedule leaves
// and ones a doubled or a skipped cut would.
func TestCheckCuts(t *testing.T) {
	h := func(n int) time.Time { return DefaultStart.Add(time.Duration(n) * time.Hour) }
	good := []Epoch{{Number: 1, MergedThrough: 2, Start: h(0), End: h(2)}, {Number: 3, Start: h(2), End: h(3)}, {Number: 4, Start: h(3)}}
	doubled := []Epoch{{Number: 1, Start: h(0), End: h(1)}, {Number: 2, Start: h(1), End: h(1).Add(time.Second)}, {Number: 3, Start: h(1).Add(time.Second)}}
	skipped := []Epoch{{Number: 1, Start: h(0), End: h(2)}, {Number: 2, Start: h(2)}}
	if err := CheckCuts(good, 3); err != nil {
		t.Errorf("good: %v", err)
	}
	if err := CheckCuts(doubled, 2); !errors.Is(err, ErrCheck) {
		t.Errorf("doubled: %v", err)
	}
	if err := CheckCuts(skipped, 2); !errors.Is(err, ErrCheck) {
		t.Errorf("skipped: %v", err)
	}
}
