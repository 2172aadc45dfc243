package coordinator

import (
	"fmt"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"dcpi/storage"
)

// waitEpochsLike waits until the leader's epochs satisfy ok.
func (c *cluster) waitEpochsLike(what string, ok func([]storage.Epoch) bool) {
	c.t.Helper()
	waitFor(c.t, what, 20*time.Second, func() bool {
		for _, r := range c.reps {
			if r != nil && r.IsLeader() {
				eps, err := r.DB().Epochs()
				return err == nil && ok(eps)
			}
		}
		return false
	})
}

// retentionCount is replica i's dcpi_coordinator_retention_epochs_total
// of an action: what the retention commands it applied removed.
func (c *cluster) retentionCount(action string, i int) float64 {
	var m dto.Metric
	if err := c.reps[i].metrics.retention.WithLabelValues(action).Write(&m); err != nil {
		c.t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// waitRetained waits until every running replica but skip counts want
// epochs removed by action: each counts what it applies, so all agree
// once the followers have applied what the leader committed.
func (c *cluster) waitRetained(action string, want float64, skip int) {
	c.t.Helper()
	waitFor(c.t, fmt.Sprintf("every replica to count %v epochs %s", want, action), 20*time.Second, func() bool {
		for i, r := range c.reps {
			if r != nil && i != skip && c.retentionCount(action, i) != want {
				return false
			}
		}
		return true
	})
}

// TestRetentionOnReplicas runs hourly scheduled epochs on a fake clock
// under a policy of two-hour windows after two hours and deletion after
// six, across a leader change: every replica ends with the same merged
// and expired epochs, each merge and expiry made once, and the expired
// epochs' space accounted for.
func TestRetentionOnReplicas(t *testing.T) {
	clk := newFakeClock(t0.Add(10 * time.Minute))
	pol := Retention{Full: 2 * time.Hour, MergeTo: 2 * time.Hour, Keep: 6 * time.Hour}
	c := newTunedCluster(t, 3, func(cfg *Config) { cfg.EpochEvery, cfg.Retention, cfg.Now = time.Hour, pol, clk.Now })
	c.waitEpochs(1)
	for h := 1; h <= 4; h++ {
		clk.set(t0.Add(time.Duration(h)*time.Hour + time.Second))
		// By the open epoch's number: a merge may already have
		// removed one.
		c.waitEpochsLike("the cut", func(eps []storage.Epoch) bool { return len(eps) > 0 && eps[len(eps)-1].Number == uint64(h+1) })
	}
	// At 16:00:01 the window 12:00..14:00 (epochs 1 and 2) ended two
	// hours ago: it is merged, once.
	c.waitEpochsLike("epochs 1..2 merged", func(eps []storage.Epoch) bool { return len(eps) > 0 && eps[0].MergedThrough == 2 })
	clk.looked(t, 10)
	eps := c.epochsOf()
	if len(eps) != 4 || eps[0].Number != 1 || eps[1].Number != 3 || !eps[0].End.Equal(t0.Add(2*time.Hour+time.Second)) {
		t.Fatalf("after the first merge: %+v", eps)
	}

	// Epoch 2 into 1, counted once by every replica, where it applied.
	c.waitRetained("merged", 1, -1)

	// A new leader finds nothing left to do for that window. (The
	// stopped replica's counts go with it: it starts again from 0, and
	// counts what it applies after its database's last log index.)
	old := c.leader()
	c.stop(old)
	c.leader()
	clk.looked(t, 10)
	c.start(old)
	c.waitRetained("merged", 1, old)

	// At 21:00: one cut (epoch 6); epoch 1 ended more than six hours
	// ago and is deleted; epochs 3 and 4 (14:00..16:00) are merged.
	clk.set(t0.Add(9 * time.Hour))
	c.waitEpochsLike("expiry and the second merge", func(eps []storage.Epoch) bool {
		return len(eps) == 3 && eps[0].Number == 3 && eps[0].MergedThrough == 4
	})
	clk.looked(t, 10)
	eps = c.epochsOf()
	if eps[1].Number != 5 || eps[2].Number != 6 || eps[2].State != storage.EpochOpen {
		t.Fatalf("epochs %+v", eps)
	}
	for i, r := range c.reps {
		if x, err := r.DB().ExpiredTotals(storage.Query{}); err != nil || x != (storage.Expired{}) {
			// No node sampled anything: nothing to count, but the
			// query must answer on every replica.
			t.Fatalf("replica %d: expired %+v, %v", i, x, err)
		}
	}
	c.waitRetained("merged", 2, old)
	c.waitRetained("expired", 1, -1)
	if m := c.retentionCount("merged", old); m < 1 || m > 2 {
		t.Errorf("the restarted replica counts %v epochs merged away, want the second merge (1) and perhaps the first again (2)", m)
	}
}
