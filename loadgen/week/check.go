package week

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Limits are what a run's series must stay within.
type Limits struct {
	// LevelFrom is the hour from which retention deletes as fast as
	// ingest adds (the policy's Keep plus a MergeTo window): from there
	// the largest settled size may be at most SizeFactor times the first.
	LevelFrom  int
	SizeFactor float64
	// The "last hour" query's median time over the last Window hours may
	// be at most QueryFactor times, plus QuerySlackMillis, its median over
	// the first Window hours (after the first, which warms the caches);
	// and it must cover the same epochs and samples throughout.
	Window           int
	QueryFactor      float64
	QuerySlackMillis float64
}

// ErrCheck is wrapped by every failed check.
var ErrCheck = errors.New("week: check failed")

// Check holds the run to what continuous operation must keep:
// conservation exact with the expired count, one scheduled cut per
// simulated hour and none more, the database's settled size level once
// retention keeps pace, and the "last hour" query as cheap at the end as
// at the start. It returns every failure, joined.
func (r *Result) Check(l Limits) error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s", ErrCheck, fmt.Sprintf(format, args...)))
	}
	if !r.Balanced {
		fail("conservation: %s", r.Conservation)
	}
	if len(r.Series) != r.Hours {
		fail("%d hours measured of %d", len(r.Series), r.Hours)
		return errors.Join(errs...)
	}
	if err := CheckCuts(r.Epochs, r.Hours); err != nil {
		errs = append(errs, err)
	}
	if err := CheckLevel(r.Series, l.LevelFrom, l.SizeFactor); err != nil {
		errs = append(errs, err)
	}
	if err := CheckFlat(r.Series, l.Window, l.QueryFactor, l.QuerySlackMillis); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// CheckCuts fails unless the epochs left at the end of hours simulated
// hours show one scheduled cut per hour and no other: epoch hours+1 open
// and last, and every closed epoch starting on the hour and lasting one
// hour per number it spans (a merge of N..M lasts M-N+1 hours). A doubled
// cut would leave an epoch shorter than an hour or a number past
// hours+1; a skipped one an epoch of two hours under one number.
func CheckCuts(eps []Epoch, hours int) error {
	if len(eps) == 0 {
		return fmt.Errorf("%w: no epochs", ErrCheck)
	}
	if last := eps[len(eps)-1]; last.Number != uint64(hours+1) || !last.End.IsZero() {
		return fmt.Errorf("%w: epoch %d last (ended %v) after %d hourly cuts, want epoch %d open", ErrCheck, last.Number, last.End, hours, hours+1)
	}
	for _, e := range eps[:len(eps)-1] {
		parts := uint64(1)
		if e.MergedThrough != 0 {
			parts = e.MergedThrough - e.Number + 1
		}
		if !e.Start.Truncate(time.Hour).Equal(e.Start) || e.End.Sub(e.Start) != time.Duration(parts)*time.Hour {
			return fmt.Errorf("%w: epoch %d (%d parts) spans %v..%v, want %d whole hours", ErrCheck, e.Number, parts, e.Start, e.End, parts)
		}
	}
	return nil
}

// CheckLevel fails if a settled size at or after hour from exceeds factor
// times the first settled size there, or if there are fewer than two to
// compare.
func CheckLevel(series []Hour, from int, factor float64) error {
	var first, most uint64
	var n, at int
	for _, h := range series {
		if h.Hour < from || h.Settled == 0 {
			continue
		}
		if n == 0 {
			first = h.Settled
		}
		if h.Settled > most {
			most, at = h.Settled, h.Hour
		}
		n++
	}
	switch {
	case n < 2:
		return fmt.Errorf("%w: %d settled sizes from hour %d: want at least 2", ErrCheck, n, from)
	case float64(most) > factor*float64(first):
		return fmt.Errorf("%w: database not level: %d bytes at hour %d, %.2f times the %d of hour %d (allowed %.2f)",
			ErrCheck, most, at, float64(most)/float64(first), first, from, factor)
	}
	return nil
}

// CheckFlat fails if the "last hour" query covers a different number of
// epochs over the run or samples that grow (an hour's samples vary with
// the recorded window replayed, within a factor of 2), or if its median
// time over the last window hours exceeds factor times its median over
// the first window hours (hour 1, which warms the caches, left out) plus
// slack milliseconds.
func CheckFlat(series []Hour, window int, factor, slack float64) error {
	if window < 1 || len(series) < 2*window+1 {
		return fmt.Errorf("%w: %d hours: want at least %d to compare windows of %d", ErrCheck, len(series), 2*window+1, window)
	}
	ref := series[1].LastHour
	for _, h := range series[1:] {
		q := h.LastHour
		if q.Epochs != ref.Epochs || q.Samples > 2*ref.Samples || 2*q.Samples < ref.Samples {
			return fmt.Errorf("%w: hour %d's last-hour query covered %d epochs and %d samples, hour 2's %d and %d",
				ErrCheck, h.Hour, q.Epochs, q.Samples, ref.Epochs, ref.Samples)
		}
	}
	first, last := medianMillis(series[1:1+window]), medianMillis(series[len(series)-window:])
	if last > factor*first+slack {
		return fmt.Errorf("%w: the last-hour query grew from %.1f ms (median, hours 2-%d) to %.1f ms (last %d hours); allowed %.1f",
			ErrCheck, first, window+1, last, window, factor*first+slack)
	}
	return nil
}

func medianMillis(hs []Hour) float64 {
	ms := make([]float64, len(hs))
	for i, h := range hs {
		ms[i] = h.LastHour.Millis
	}
	slices.Sort(ms)
	return ms[len(ms)/2]
}

// Day sums up one simulated day of a run's series.
type Day struct {
	Day          int     `json:"day"`
	SettledBytes uint64  `json:"settled_bytes"` // at the day's end, if measured then
	Epochs       int     `json:"epochs"`        // at the day's end
	Merged       int     `json:"merged"`
	LastHourMs   float64 `json:"last_hour_ms"` // median over the day's hours
	LastWeekMs   float64 `json:"last_week_ms"`
	WeekEpochs   int     `json:"last_week_epochs"` // at the day's end
	Expired      uint64  `json:"expired"`          // samples, cumulative
	WallSeconds  float64 `json:"wall_s"`           // the day's wall time
}

// Days sums up the series a day at a time (24 hours from the start).
func (r *Result) Days() []Day {
	var out []Day
	for lo := 0; lo < len(r.Series); lo += 24 {
		hs := r.Series[lo:min(lo+24, len(r.Series))]
		end := hs[len(hs)-1]
		d := Day{Day: lo/24 + 1, SettledBytes: end.Settled, Epochs: end.Epochs, Merged: end.Merged,
			LastHourMs: medianMillis(hs), WeekEpochs: end.LastWeek.Epochs, Expired: end.Expired}
		week := make([]float64, len(hs))
		for i, h := range hs {
			week[i] = h.LastWeek.Millis
			d.WallSeconds += float64(h.WallMillis) / 1000
		}
		slices.Sort(week)
		d.LastWeekMs = week[len(week)/2]
		out = append(out, d)
	}
	return out
}
