package coordinator

import (
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"dcpi/storage"
)

// fakeClock is the replicas' Config.Now in the schedule tests: time moves
// only when the test sets it, and every read is counted, so a test waits
// for the leader to have looked at the schedule rather than for time to
// pass. One clock for every replica: their clocks agree.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	reads  int
	onRead chan struct{} // closed at the first read after arm
}

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{now: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	if c.onRead != nil {
		close(c.onRead)
		c.onRead = nil
	}
	return c.now
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// setAndArm sets the time and returns a channel closed at the next read.
func (c *fakeClock) setAndArm(t time.Time) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	c.onRead = make(chan struct{})
	return c.onRead
}

func (c *fakeClock) readCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// looked waits until the clock has been read n more times: with no nodes
// and no requests, only a leader's loop reads it, once a SealInterval to
// evaluate the schedule (and once per seal it proposes).
func (c *fakeClock) looked(t testing.TB, n int) {
	t.Helper()
	from := c.readCount()
	waitFor(t, "the leader to look at the schedule", 20*time.Second, func() bool { return c.readCount() >= from+n })
}

// scheduledCluster is a cluster of n replicas cutting every hour by clk.
func scheduledCluster(t *testing.T, n int, clk *fakeClock) *cluster {
	return newTunedCluster(t, n, func(c *Config) { c.EpochEvery, c.Now = time.Hour, clk.Now })
}

// epochsOf waits for every running replica to hold the leader's applied
// log and returns the leader's epochs.
func (c *cluster) epochsOf() []storage.Epoch {
	c.t.Helper()
	c.converged()
	eps, err := c.reps[c.leader()].DB().Epochs()
	if err != nil {
		c.t.Fatal(err)
	}
	return eps
}

// waitEpochs waits until the leader holds n epochs.
func (c *cluster) waitEpochs(n int) {
	c.t.Helper()
	waitFor(c.t, "epochs", 20*time.Second, func() bool {
		for _, r := range c.reps {
			if r != nil && r.IsLeader() {
				eps, err := r.DB().Epochs()
				return err == nil && len(eps) >= n
			}
		}
		return false
	})
}

// checkCuts requires epochs 1..n, all but the last closing at or after
// the boundary after their start, the last open.
func checkCuts(t *testing.T, eps []storage.Epoch, n int) {
	t.Helper()
	if len(eps) != n {
		t.Fatalf("%d epochs, want %d: %+v", len(eps), n, eps)
	}
	for i, e := range eps {
		if i == n-1 {
			if e.State != storage.EpochOpen {
				t.Errorf("epoch %d is %v, want open", e.Number, e.State)
			}
			continue
		}
		if e.State == storage.EpochOpen || e.End.Before(NextBoundary(e.Start, time.Hour)) {
			t.Errorf("epoch %d %v from %v to %v: cut before its boundary", e.Number, e.State, e.Start, e.End)
		}
	}
}

// TestScheduleCutsOncePerPeriod: with the clock short of the boundary
// nothing is cut; past it, exactly one cut, however often the leader
// looks; and after the whole group was down for three and a half periods,
// one cut, not one per boundary missed, after which the schedule is on
// the hour again.
func TestScheduleCutsOncePerPeriod(t *testing.T) {
	clk := newFakeClock(t0.Add(10 * time.Minute))
	c := scheduledCluster(t, 3, clk)
	c.waitEpochs(1)
	clk.looked(t, 10)
	checkCuts(t, c.epochsOf(), 1)

	clk.set(t0.Add(time.Hour + time.Second))
	c.waitEpochs(2)
	clk.looked(t, 10)
	eps := c.epochsOf()
	checkCuts(t, eps, 2)
	if !eps[1].Start.Equal(t0.Add(time.Hour + time.Second)) {
		t.Errorf("epoch 2 starts at %v, want the leader's time at the cut, %v", eps[1].Start, t0.Add(time.Hour+time.Second))
	}
	// Every replica counts the cut it applied, once, whoever proposed it.
	waitFor(t, "every replica to count one scheduled cut", 20*time.Second, func() bool {
		for _, r := range c.reps {
			var m dto.Metric
			if err := r.metrics.scheduledCuts.WithLabelValues("cut").Write(&m); err != nil {
				t.Fatal(err)
			}
			if m.GetCounter().GetValue() != 1 {
				return false
			}
		}
		return true
	})

	for i := range c.reps {
		c.stop(i)
	}
	clk.set(t0.Add(4*time.Hour + 30*time.Minute))
	for i := range c.reps {
		c.start(i)
	}
	c.waitEpochs(3)
	clk.looked(t, 10)
	eps = c.epochsOf()
	checkCuts(t, eps, 3)
	if want := t0.Add(5 * time.Hour); !NextBoundary(eps[2].Start, time.Hour).Equal(want) {
		t.Errorf("epoch 3 from %v is cut at %v, want %v", eps[2].Start, NextBoundary(eps[2].Start, time.Hour), want)
	}
}

// TestScheduleLeaderChange kills the leader around a scheduled cut — before
// it sees the boundary, as it reads the clock to propose the cut (the cut
// may or may not commit), and once the cut is applied — and requires
// exactly one cut for the period once a new leader has looked at the
// schedule, on every replica, the old leader's included.
func TestScheduleLeaderChange(t *testing.T) {
	for _, when := range []string{"before", "at the read", "after the commit"} {
		t.Run(when, func(t *testing.T) {
			clk := newFakeClock(t0.Add(10 * time.Minute))
			c := scheduledCluster(t, 3, clk)
			c.waitEpochs(1)
			old := c.leader()
			past := t0.Add(time.Hour + time.Second)
			switch when {
			case "before":
				c.stop(old)
				clk.set(past)
			case "at the read":
				<-clk.setAndArm(past)
				c.stop(old)
			case "after the commit":
				clk.set(past)
				c.waitEpochs(2)
				c.stop(old)
			}
			if nl := c.leader(); nl == old {
				t.Fatalf("the stopped replica leads")
			}
			c.waitEpochs(2)
			clk.looked(t, 10)
			c.start(old)
			checkCuts(t, c.epochsOf(), 2)
		})
	}
}
