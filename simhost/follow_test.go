package simhost

import (
	"context"
	"dcpi/node"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeControl is a coordinator whose epoch moves on when told, and which
// can be unreachable.
type fakeControl struct {
	mu      sync.Mutex
	epoch   uint64
	away    bool
	beats   int
	acks    map[uint64][]uint64
	ackList []uint64
}

func (c *fakeControl) Register(context.Context, string, map[string]string, int) error { return nil }

func (c *fakeControl) Heartbeat(context.Context, string) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.away {
		return 0, errors.New("no route to coordinator")
	}
	c.beats++
	return c.epoch, nil
}

func (c *fakeControl) AckEpoch(_ context.Context, _ string, epoch uint64, last []uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.away {
		return errors.New("no route to coordinator")
	}
	c.acks[epoch] = append([]uint64(nil), last...)
	c.ackList = append(c.ackList, epoch)
	return nil
}

func (c *fakeControl) set(f func(c *fakeControl)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c)
}

// TestFollowCatchesUp moves the fleet through epochs, once while the node
// cannot reach the coordinator, and requires an acknowledgement of every
// epoch, in order, naming the last batch the node published into it.
func TestFollowCatchesUp(t *testing.T) {
	m := sortMachine(t, 2)
	ncfg := DefaultConfig()
	ncfg.Profile.Counters[0].PeriodMin, ncfg.Profile.Counters[0].PeriodMax = 4000, 4400
	pub := &node.MemPublisher{}
	n, err := New(m, ncfg, pub)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := n.KeepRunning("/bin/sort", nil); err != nil {
			t.Fatal(err)
		}
	}
	ctl := &fakeControl{epoch: 1, acks: map[uint64][]uint64{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- n.Run(0) }()
	followed := make(chan node.FollowStats, 1)
	go func() { followed <- n.Node().Follow(ctx, ctl, nil, 5*time.Millisecond, t.Logf) }()

	waitFor := func(what string, ok func() bool) {
		deadline := time.Now().Add(20 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	acked := func(e uint64) func() bool {
		return func() bool {
			ctl.mu.Lock()
			defer ctl.mu.Unlock()
			_, ok := ctl.acks[e]
			return ok
		}
	}
	time.Sleep(50 * time.Millisecond)
	ctl.set(func(c *fakeControl) { c.epoch = 2 })
	waitFor("ack of epoch 1", acked(1))
	time.Sleep(50 * time.Millisecond)
	ctl.set(func(c *fakeControl) { c.away = true })
	time.Sleep(30 * time.Millisecond)
	ctl.set(func(c *fakeControl) { c.epoch = 5 }) // cuts to 3, 4, 5 while away
	time.Sleep(50 * time.Millisecond)
	if n.Node().Epoch() != 2 {
		t.Fatalf("node moved to epoch %d while it could not hear the coordinator", n.Node().Epoch())
	}
	ctl.set(func(c *fakeControl) { c.away = false })
	waitFor("acks of epochs 2-4", acked(4))
	n.Stop()
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	cancel()
	st := <-followed

	if want := []uint64{1, 2, 3, 4}; !slices.Equal(ctl.ackList, want) {
		t.Fatalf("acks in order %v, want %v", ctl.ackList, want)
	}
	lastIn := map[[2]uint64]uint64{}
	for _, b := range pub.Batches() {
		lastIn[[2]uint64{uint64(b.CPU), b.Epoch}] = b.Seq
		if b.Epoch == 3 || b.Epoch == 4 {
			t.Fatalf("batch published into skipped epoch %d", b.Epoch)
		}
	}
	for e := uint64(1); e <= 4; e++ {
		for cpu, last := range ctl.acks[e] {
			if got := lastIn[[2]uint64{uint64(cpu), e}]; got != last {
				t.Errorf("epoch %d cpu %d: acked last seq %d, batches show %d", e, cpu, last, got)
			}
		}
	}
	if lastIn[[2]uint64{0, 2}] == 0 || lastIn[[2]uint64{0, 5}] == 0 {
		t.Fatalf("expected batches in epochs 2 and 5: %v", lastIn)
	}
	if st.Cuts != 2 || st.Failures == 0 {
		t.Fatalf("follow stats %+v: want 2 cuts and some failures", st)
	}
}

// TestFollowAcksAfterRun: once Run has returned, a cut is acknowledged at
// once with the batches the node published into the epoch it was in, so a
// stopped node does not hold up a seal.
func TestFollowAcksAfterRun(t *testing.T) {
	m := sortMachine(t, 2)
	pub := &node.MemPublisher{}
	n, err := New(m, DefaultConfig(), pub)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Spawn("/bin/sort", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := n.Run(0); err != nil {
		t.Fatal(err)
	}
	ctl := &fakeControl{epoch: 3, acks: map[uint64][]uint64{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan node.FollowStats, 1)
	go func() { done <- n.Node().Follow(ctx, ctl, nil, 5*time.Millisecond, t.Logf) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctl.mu.Lock()
		got := len(ctl.ackList)
		ctl.mu.Unlock()
		if got == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("acks %v after Run, want epochs 1 and 2", ctl.ackList)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	last := map[uint16]uint64{}
	for _, b := range pub.Batches() {
		last[b.CPU] = b.Seq
	}
	for cpu, seq := range ctl.acks[1] {
		if seq != last[uint16(cpu)] {
			t.Errorf("epoch 1 cpu %d acked through %d, batches end at %d", cpu, seq, last[uint16(cpu)])
		}
	}
	if n.Node().Epoch() != 3 || !slices.Equal(ctl.acks[2], []uint64{0, 0}) {
		t.Fatalf("node in epoch %d, ack of 2: %v", n.Node().Epoch(), ctl.acks[2])
	}
}
