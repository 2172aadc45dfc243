package profiledb

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"dcpi/analysis"
	"dcpi/analysis/symbolize"
	"dcpi/analysis/trend"
	"dcpi/profiledb/timerange"
	"dcpi/storage"
	"dcpi/wire"
)

// trendDB is a local database of three epochs with known times and
// counts: epoch 1, 08:00-09:00 UTC, spin 300 and idle 100 samples; epoch
// 2, 09:00-10:00, none; epoch 3, open since 10:00, spin 60 and idle 30.
func trendDB(t *testing.T) *Local {
	t.Helper()
	db, err := storage.Open(t.TempDir(), storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	k := wire.MustParseImageKey("buildid:0101")
	if err := db.PutImage(&wire.ImageRecord{Version: wire.Version, Key: k, Path: "/bin/p",
		Symbols: []wire.Symbol{{Name: "spin", Addr: 0, Size: 0x100}, {Name: "idle", Addr: 0x100, Size: 0x100}}}); err != nil {
		t.Fatal(err)
	}
	seq := uint64(0)
	for _, c := range []struct {
		epoch      uint64
		spin, idle uint64
		start, end time.Time
		state      storage.EpochState
	}{
		{1, 300, 100, at(8, 0), at(9, 0), storage.EpochSealed},
		{2, 0, 0, at(9, 0), at(10, 0), storage.EpochSealed},
		{3, 60, 30, at(10, 0), time.Time{}, storage.EpochOpen},
	} {
		if c.spin > 0 {
			seq++
			b := &wire.Batch{Version: wire.Version, Host: "h", Seq: seq, Epoch: c.epoch,
				Entries: []wire.Entry{{Image: k, Offset: 0x10, Count: c.spin}, {Image: k, Offset: 0x110, Count: c.idle}}}
			b.Normalize()
			if _, err := db.ApplyBatch(b); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.PutEpoch(storage.Epoch{Number: c.epoch, Start: c.start, End: c.end, State: c.state}); err != nil {
			t.Fatal(err)
		}
	}
	return NewLocal(db)
}

// TestTrendKnownData: dcpi trend's numbers over a database of known
// epochs: samples per epoch as stored, the empty epoch a row of zeros,
// the open epoch running to now, a time range selecting its epochs, and
// the top procedures' shares summing to 100 in each epoch with samples.
func TestTrendKnownData(t *testing.T) {
	ctx := context.Background()
	db := trendDB(t)
	src := symbolize.New(db)
	now := at(10, 30)
	r, err := Trend(ctx, db, src, Selection{}, TrendOptions{Measures: []string{"procedure=spin"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Epochs) != 3 || !r.Epochs[2].Open || !r.Epochs[2].End.Equal(now) {
		t.Fatalf("epochs %+v", r.Epochs)
	}
	spin := r.Series[0]
	for i, want := range []struct {
		samples uint64
		share   float64
		rate    float64
	}{{300, 75, 300.0 / 3600}, {0, 0, 0}, {60, 100 * 60.0 / 90, 60.0 / 1800}} {
		p := spin.Points[i]
		if p.Samples != want.samples || math.Abs(p.Share-want.share) > 1e-9 || math.Abs(float64(p.Rate)-want.rate) > 1e-12 {
			t.Errorf("epoch %d: %+v, want %+v", i+1, p, want)
		}
	}
	if r.Hint != "" {
		t.Errorf("hint %q", r.Hint)
	}

	// The last hour: epochs 2 and 3 alone.
	tr, _ := timerange.Flags{Since: "1h"}.Parse(now, time.UTC)
	sel := Selection{Time: tr}
	if err := SelectTime(ctx, db, &sel, &strings.Builder{}); err != nil {
		t.Fatal(err)
	}
	r, err = Trend(ctx, db, src, sel, TrendOptions{Top: 5}, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Epochs) != 2 || r.Epochs[0].Number != 2 || r.Total.Samples != 90 || len(r.Series) != 2 {
		t.Fatalf("--since 1h: epochs %+v, total %d, %d series", r.Epochs, r.Total.Samples, len(r.Series))
	}
	for i := range r.Epochs {
		var sum float64
		for _, s := range r.Series {
			sum += s.Points[i].Share
		}
		if want := map[int]float64{0: 0, 1: 100}[i]; math.Abs(sum-want) > 1e-9 {
			t.Errorf("epoch %d: shares sum to %g, want %g", r.Epochs[i].Number, sum, want)
		}
	}

	// A procedure without samples is named, with the hot ones.
	r, err = Trend(ctx, db, src, Selection{}, TrendOptions{Measures: []string{"procedure=nope"}}, now)
	if err != nil || !strings.Contains(r.Hint, "no samples for procedure nope; procedures with the most samples in the selection: spin, idle") {
		t.Errorf("procedure nope: %v, hint %q", err, r.Hint)
	}
	// An epoch the database does not record is refused, naming those it does.
	_, err = Trend(ctx, db, src, Selection{Filter: storage.Query{Epochs: []uint64{9}}}, TrendOptions{}, now)
	if err == nil || !errors.Is(err, analysis.ErrQuery) || !strings.HasSuffix(err.Error(), "epoch 9 is not recorded; epochs 1-3 are") {
		t.Errorf("epoch 9: %v", err)
	}
}

// TestTrendOptions: bad options are refused before any database is read,
// one line naming what was wrong.
func TestTrendOptions(t *testing.T) {
	for _, c := range []struct {
		o    TrendOptions
		want string
	}{
		{TrendOptions{Measures: []string{"host=a"}}, `measure "host=a": want procedure=NAME, image=PATH or selection`},
		{TrendOptions{Measures: []string{"procedure="}}, `measure "procedure=": empty procedure`},
		{TrendOptions{Top: -1}, "--top -1: want 1 or more"},
		{TrendOptions{Top: 3, Measures: []string{"image=/bin/p"}}, "--top: give either measures or --top, not both"},
		{TrendOptions{Plot: "pie"}, `--plot "pie": want rate or share`},
	} {
		if err := c.o.Check(Selection{}); err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
	if err := (TrendOptions{Measures: []string{"selection", "image=p"}, Plot: "share"}).Check(Selection{}); err != nil {
		t.Errorf("good options: %v", err)
	}
	if err := (TrendOptions{}).Check(Selection{Events: []uint8{0, 2}}); err == nil || !strings.HasPrefix(err.Error(), "--event: ") {
		t.Errorf("two events: %v", err)
	}
	// A database without epoch records (dcpi node's) has no trend unless
	// the epochs are named.
	db, err := storage.Open(t.TempDir(), storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l := NewLocal(db)
	if _, err := TrendEpochs(context.Background(), l, Selection{}, time.Now()); !errors.Is(err, trend.ErrNoEpochs) {
		t.Errorf("no epochs: %v", err)
	}
	eps, err := TrendEpochs(context.Background(), l, Selection{Filter: storage.Query{Epochs: []uint64{2, 1, 2}}}, time.Now())
	if err != nil || len(eps) != 2 || eps[0] != (trend.Epoch{Number: 1}) {
		t.Errorf("named epochs without records: %+v, %v", eps, err)
	}
}
