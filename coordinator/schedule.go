package coordinator

import (
	"fmt"
	"time"

	"dcpi/storage"
)

// MinEpochEvery is the shortest period of scheduled cuts: every cut makes
// each node flush its driver tables by IPI, publish and acknowledge, and
// the leader seal, which takes a heartbeat or two (200-500 ms); a shorter
// period would cut again before the last cut has sealed.
const MinEpochEvery = time.Second

// CheckEpochEvery refuses a period of scheduled cuts that is negative or,
// unless 0 (no schedule), shorter than MinEpochEvery or than the leader's
// sealing interval, which is how often it looks at the schedule.
func CheckEpochEvery(every, sealInterval time.Duration) error {
	switch {
	case every < 0:
		return fmt.Errorf("epoch period %v: want 0 (cut by hand only) or a positive duration", every)
	case every == 0:
		return nil
	case every < MinEpochEvery:
		return fmt.Errorf("epoch period %v: want at least %v", every, MinEpochEvery)
	case every < sealInterval:
		return fmt.Errorf("epoch period %v: want at least the seal interval, %v", every, sealInterval)
	}
	return nil
}

// NextBoundary is the first multiple of every after start, counting from
// the Unix epoch: the time the schedule cuts an epoch that opened at
// start. Boundaries are fixed in wall-clock time (an hourly schedule cuts
// at :00, a daily one at 00:00 UTC) rather than start+every, so that a
// cut's lateness (the leader sees the boundary at its next look, and the
// cut commits a Raft round trip later) does not accumulate period after
// period, a hand cut does not shift the schedule, and epochs line up with
// the hours and days a time range or a coarser retention tier names.
func NextBoundary(start time.Time, every time.Duration) time.Time {
	p := int64(every)
	ns := start.UnixNano()
	k := ns / p
	if ns%p < 0 {
		k-- // floor, for a time before 1970
	}
	return time.Unix(0, (k+1)*p)
}

// ScheduledCutDue is the scheduling rule: the cut the leader is to
// propose at now for a schedule of period every, if the open epoch among
// eps has reached the boundary after its start. It reads only replicated
// state, the open epoch's number and start, never the leader's memory: a
// new leader finds a cut its predecessor committed (the epoch it opened
// starts after the boundary, so nothing is due) and one it did not (the
// old epoch is still open and past its boundary, so it is due). After an
// outage of several periods one cut is due, not one per period missed:
// the epoch it opens starts at now, and its boundary is the next one.
func ScheduledCutDue(eps []storage.Epoch, every time.Duration, now time.Time) (*ScheduledCut, bool) {
	if every <= 0 {
		return nil, false
	}
	cur, ok := openEpoch(eps)
	if !ok || cur.Start.IsZero() || now.Before(NextBoundary(cur.Start, every)) {
		return nil, false
	}
	return &ScheduledCut{Epoch: cur.Number, At: now}, true
}

// DueScheduledCut is ScheduledCutDue on the FSM's database.
func (f *FSM) DueScheduledCut(every time.Duration, now time.Time) (*ScheduledCut, bool, error) {
	eps, err := f.epochs()
	if err != nil {
		return nil, false, fmt.Errorf("coordinator: epoch schedule: %w", err)
	}
	c, ok := ScheduledCutDue(eps, every, now)
	return c, ok, nil
}

// epochs reads the database's epoch records, for the leader's loops.
func (f *FSM) epochs() ([]storage.Epoch, error) {
	var eps []storage.Epoch
	err := f.View(func(db *storage.DB) error {
		var err error
		eps, err = db.Epochs()
		return err
	})
	return eps, err
}
