package coordinator

import (
	"errors"
	"testing"
	"time"

	"dcpi/storage"
)

// TestCheckRetention: the policies that could touch unsealed data or
// contradict themselves are refused with ErrRetention; sound ones pass.
func TestCheckRetention(t *testing.T) {
	h := time.Hour
	for _, tc := range []struct {
		p     Retention
		every time.Duration
		ok    bool
	}{
		{Retention{}, h, true},
		{Retention{Full: 48 * h, MergeTo: 24 * h, Keep: 720 * h}, h, true},
		{Retention{Keep: 720 * h}, 0, true},
		{Retention{Full: 2 * h, MergeTo: 2 * h}, h, true},
		{Retention{Full: -h, MergeTo: h}, 0, false},
		{Retention{Full: h, MergeTo: -h}, 0, false},
		{Retention{Keep: -h}, 0, false},
		{Retention{Full: 48 * h}, h, false},
		{Retention{MergeTo: 24 * h}, h, false},
		{Retention{Full: 48 * h, MergeTo: 24 * h, Keep: 24 * h}, h, false},
		{Retention{Full: h, MergeTo: 24 * h}, h, false},
		{Retention{Keep: h}, h, false},
		{Retention{Full: 48 * h, MergeTo: h}, h, false},
	} {
		err := CheckRetention(tc.p, tc.every)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrRetention) {
			t.Errorf("CheckRetention(%+v, %v) = %v, want ok %v", tc.p, tc.every, err, tc.ok)
		}
	}
}

// TestRetentionDueNeverSelectsUnsealed: on random epoch histories (hand
// cuts and scheduled ones, some epochs left closing), what the rule
// proposes names only sealed epochs that ended before the policy's age,
// merges only epochs of one window, and applied until nothing is due
// ends with no two sealed epochs of a window older than full.
func TestRetentionDueNeverSelectsUnsealed(t *testing.T) {
	r := testRand(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := Retention{Full: 6 * time.Hour, MergeTo: 4 * time.Hour, Keep: 40 * time.Hour}
	for range 200 {
		var eps []storage.Epoch
		at := t0.Add(time.Duration(r.IntN(60)) * time.Minute)
		for n := uint64(1); n <= uint64(5+r.IntN(60)); n++ {
			end := at.Add(time.Duration(10+r.IntN(110)) * time.Minute)
			st := storage.EpochSealed
			if r.IntN(15) == 0 {
				st = storage.EpochClosing
			}
			eps = append(eps, storage.Epoch{Number: n, Start: at, End: end, State: st})
			at = end
		}
		eps[len(eps)-1].State, eps[len(eps)-1].End = storage.EpochOpen, time.Time{}
		now := at.Add(time.Duration(r.IntN(120)) * time.Minute)
		for step := 0; ; step++ {
			c, due := RetentionDue(eps, p, now)
			if !due {
				break
			}
			if step > 1000 {
				t.Fatal("the rule never settles")
			}
			switch c := c.(type) {
			case *ExpireEpochs:
				var keep []storage.Epoch
				for _, e := range eps {
					if e.Number > c.Through {
						keep = append(keep, e)
					} else if e.State != storage.EpochSealed || e.End.After(now.Add(-p.Keep)) {
						t.Fatalf("expire through %d selects epoch %+v at %v", c.Through, e, now)
					}
				}
				eps = keep
			case *MergeEpochs:
				var out []storage.Epoch
				var merged *storage.Epoch
				for _, e := range eps {
					if e.Number < c.First || e.Number > c.Last {
						out = append(out, e)
						continue
					}
					sameWindow := merged == nil || windowStart(e.Start, p.MergeTo).Equal(windowStart(merged.Start, p.MergeTo))
					if e.State != storage.EpochSealed || e.End.After(now.Add(-p.Full)) || !sameWindow {
						t.Fatalf("merge %d..%d selects epoch %+v at %v", c.First, c.Last, e, now)
					}
					if merged == nil {
						out = append(out, e)
						merged = &out[len(out)-1]
					} else {
						merged.End, merged.MergedThrough = e.End, e.Number
					}
				}
				eps = out
			}
		}
	}
}
