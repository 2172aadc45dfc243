package coordinator

import (
	"errors"
	"fmt"
	"time"

	"dcpi/storage"
)

// Retention is the policy that keeps the database from growing without
// bound (docs/epochs.md, "Retention"): epochs that ended less than Full
// ago stay as they are; older sealed ones are merged into one epoch per
// window of MergeTo, windows aligned to wall-clock time as the epoch
// schedule's boundaries are (NextBoundary: a day's window starts at 00:00
// UTC); sealed epochs that ended more than Keep ago are deleted, what they
// held counted as expired. 0 turns a part off: Full 0 merges nothing, Keep
// 0 deletes nothing.
type Retention struct {
	Full, MergeTo, Keep time.Duration
}

// On reports whether the policy does anything.
func (p Retention) On() bool { return p.Full > 0 || p.Keep > 0 }

// ErrRetention is wrapped by CheckRetention's errors.
var ErrRetention = errors.New("retention policy")

// CheckRetention refuses a policy that is negative, contradicts itself,
// or could reach data that is still arriving. An epoch is cut at most
// epochEvery after it opens (the schedule) and sealed a heartbeat or two
// after its cut, so an epoch that ended at least 2 × epochEvery ago is
// long sealed; a policy whose Full or Keep is shorter would at best wait
// on every seal and at worst (a slow node holding a seal back) keep
// finding the newest epochs unsealed. RetentionDue never selects an
// epoch that is not sealed in any case; this refuses the policy that
// would try. Errors name the configuration key and are one line.
func CheckRetention(p Retention, epochEvery time.Duration) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrRetention, fmt.Sprintf(format, args...))
	}
	switch {
	case p.Full < 0:
		return bad("coordinator.retention.full = %v: want 0 (merge nothing) or a positive duration", p.Full)
	case p.MergeTo < 0:
		return bad("coordinator.retention.merge_to = %v: want a positive duration", p.MergeTo)
	case p.Keep < 0:
		return bad("coordinator.retention.keep = %v: want 0 (delete nothing) or a positive duration", p.Keep)
	case p.Full > 0 && p.MergeTo == 0:
		return bad("coordinator.retention.merge_to is 0: full = %v needs the window to merge older epochs into", p.Full)
	case p.Full == 0 && p.MergeTo > 0:
		return bad("coordinator.retention.merge_to = %v needs full, the age from which epochs are merged", p.MergeTo)
	case p.Keep > 0 && p.Full > 0 && p.Keep < p.Full:
		return bad("coordinator.retention.keep = %v is shorter than full = %v: epochs would be deleted before they are merged", p.Keep, p.Full)
	case p.Full > 0 && epochEvery > 0 && p.Full < 2*epochEvery:
		return bad("coordinator.retention.full = %v: want at least twice coordinator.epoch_every (%v), or it would reach epochs not yet sealed", p.Full, 2*epochEvery)
	case p.Keep > 0 && epochEvery > 0 && p.Keep < 2*epochEvery:
		return bad("coordinator.retention.keep = %v: want at least twice coordinator.epoch_every (%v), or it would reach epochs not yet sealed", p.Keep, 2*epochEvery)
	case p.MergeTo > 0 && epochEvery > 0 && p.MergeTo <= epochEvery:
		return bad("coordinator.retention.merge_to = %v: want longer than coordinator.epoch_every (%v), or a window holds one epoch and nothing merges", p.MergeTo, epochEvery)
	}
	return nil
}

// RetentionDue is the retention rule: the one command the leader is to
// propose at now under policy p, given the epochs eps (by number), if one
// is due. An expiry comes first (it is cheaper than merging what it would
// delete): every epoch from the oldest on that is sealed and ended at
// least Keep before now, stopping at the first that is not. Otherwise the
// oldest window of MergeTo that ended at least Full before now and holds
// two or more epochs, every one of them sealed and ended by then, is
// merged; an epoch belongs to the window its Start falls in, so a merged
// epoch (whose Start is its first part's) stays in its window and is not
// merged again. Like ScheduledCutDue it reads only replicated state, so a
// new leader proposes what its predecessor left undone, and the FSM
// applies a stale proposal as nothing.
func RetentionDue(eps []storage.Epoch, p Retention, now time.Time) (Command, bool) {
	if p.Keep > 0 {
		horizon := now.Add(-p.Keep)
		var through uint64
		for _, e := range eps {
			if !endedBy(e, horizon) {
				break
			}
			through = e.Number
		}
		if through != 0 {
			return &ExpireEpochs{Through: through}, true
		}
	}
	if p.Full <= 0 || p.MergeTo <= 0 {
		return nil, false
	}
	cutoff := now.Add(-p.Full)
	for i := 0; i < len(eps); {
		if eps[i].Start.IsZero() {
			i++
			continue
		}
		w := windowStart(eps[i].Start, p.MergeTo)
		j, ok := i, true
		for ; j < len(eps) && !eps[j].Start.IsZero() && windowStart(eps[j].Start, p.MergeTo).Equal(w); j++ {
			ok = ok && endedBy(eps[j], cutoff)
		}
		if j == i { // a Start before its window's: cannot happen, but never loop
			j = i + 1
		}
		if ok && j-i >= 2 && !w.Add(p.MergeTo).After(cutoff) {
			return &MergeEpochs{First: eps[i].Number, Last: eps[j-1].Number}, true
		}
		i = j
	}
	return nil, false
}

// endedBy: e is sealed and ended at or before t.
func endedBy(e storage.Epoch, t time.Time) bool {
	return e.State == storage.EpochSealed && !e.End.IsZero() && !e.End.After(t)
}

// windowStart is the start of the window of length d that holds t,
// aligned as NextBoundary aligns boundaries.
func windowStart(t time.Time, d time.Duration) time.Time {
	return NextBoundary(t, d).Add(-d)
}

// DueRetention is RetentionDue on the FSM's database.
func (f *FSM) DueRetention(p Retention, now time.Time) (Command, bool, error) {
	eps, err := f.epochs()
	if err != nil {
		return nil, false, fmt.Errorf("coordinator: retention: %w", err)
	}
	c, ok := RetentionDue(eps, p, now)
	return c, ok, nil
}
