package coordinator

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"dcpi/storage"
)

// TestReplicaPowerLoss: a replica loses its unsynced tail. Its Raft log
// and stable store are fsynced at every append (raft-wal), so a power loss
// takes only the profile database's writes since its last sync (the FSM
// commits with NoSync; the log is the durable record). The test takes the
// database at a sync point (a clean stop: Pebble syncs on close), lets the
// replica — the leader — apply more, stops it and puts that database back:
// the database's log index and counts go back to the sync point together.
// After the restart the replica must replay the log and end identical to
// the others, every stream applied to its last Seq, and stored samples =
// the samples of every delta proposed, exactly.
func TestReplicaPowerLoss(t *testing.T) {
	c := newCluster(t, 3)
	cl := NewClient(connect(t, c.url))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s := newStreams(testRand(t))
	hosts := []string{"alpha1", "alpha2"}
	propose := func(n int) {
		t.Helper()
		out, err := cl.Propose(ctx, s.deltas(n, 30, 1, hosts...), nil)
		if err != nil {
			t.Fatal(err)
		}
		// A proposal retried across a leader change may find its first
		// attempt committed: Duplicate. The totals below count each once.
		for i, o := range out {
			if o != storage.Applied && o != storage.Duplicate {
				t.Fatalf("outcome %d = %v, want applied (or duplicate after a retry)", i, o)
			}
		}
	}
	propose(20)
	c.converged()
	victim := c.leader()
	db := filepath.Join(c.dirs[victim], "db")
	synced := filepath.Join(t.TempDir(), "db-synced")
	c.stop(victim)
	if out, err := exec.Command("cp", "-a", db, synced).CombinedOutput(); err != nil {
		t.Fatalf("copy the database: %v: %s", err, out)
	}
	c.start(victim)
	c.converged()
	// The victim leads again or follows; either way it applies these.
	propose(30)
	c.converged()
	applied := c.reps[victim].FSM().AppliedIndex()
	c.stop(victim)
	if err := os.RemoveAll(db); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", synced, db).CombinedOutput(); err != nil {
		t.Fatalf("restore the database: %v: %s", err, out)
	}
	f, err := OpenFSM(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	lost := f.AppliedIndex()
	f.Close()
	if lost >= applied {
		t.Fatalf("the restored database is at log index %d, not behind %d: nothing was lost", lost, applied)
	}
	t.Logf("replica %s lost its database's tail: log index %d -> %d", c.ids[victim], applied, lost)
	c.start(victim)
	propose(10)
	dump := c.converged()

	var want uint64
	for _, d := range s.sent {
		want += d.Batch.Total()
	}
	for i, r := range c.reps {
		var got uint64
		err := r.FSM().View(func(db *storage.DB) error {
			samples, unknown, _, err := db.Totals(storage.Query{})
			got = samples + unknown
			return err
		})
		if err != nil || got != want {
			t.Errorf("replica %s: stored %d samples (%v), want %d", c.ids[i], got, err, want)
		}
	}
	for k, last := range s.next {
		var host string
		var cpu uint16
		for i := len(k) - 1; i >= 0; i-- {
			if k[i] == '/' {
				host, cpu = k[:i], uint16(k[i+1]-'0')
				break
			}
		}
		seq, err := cl.Applied(ctx, host, cpu)
		if err != nil || seq != last {
			t.Errorf("stream %s: applied %d (%v), want %d", k, seq, err, last)
		}
	}
	if dump == "" {
		t.Error("empty database")
	}
}
