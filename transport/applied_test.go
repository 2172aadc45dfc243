package transport

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"dcpi/wire/wiretest"
)

// countingApplier wraps a memApplier's AppliedFunc and records every
// call's streams, so a test can see how many requests a poll makes.
type countingApplier struct {
	mu    sync.Mutex
	calls [][]uint16
	inner AppliedFunc
}

func (c *countingApplier) applied(ctx context.Context, cpus []uint16) ([]uint64, error) {
	c.mu.Lock()
	c.calls = append(c.calls, slices.Clone(cpus))
	c.mu.Unlock()
	return c.inner(ctx, cpus)
}

// TestAppliedOneRequestPerPoll: a 4-CPU host whose every stream retains
// batches asks about all four in one call per poll (the coordinator's
// load is one request per host per poll, not per CPU), the call names
// each retaining stream once, in order, and the batches are released as
// before once applied. Asking per CPU, as the publisher once did, makes
// four calls of one stream each and fails.
func TestAppliedOneRequestPerPoll(t *testing.T) {
	r := testRand(t)
	srv := startTestServer(t, 0)
	nc, js := connect(t, srv.URL())
	ensure(t, js)
	app := newMemApplier()
	count := &countingApplier{inner: app.appliedFunc("alpha0")}
	const poll = 100 * time.Millisecond
	p, err := NewPublisher(nc, PublisherConfig{Host: "alpha0", AckTimeout: 5 * time.Second,
		Applied: count.applied, AppliedPoll: poll, RepublishAfter: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	keys := wiretest.Keys(3)
	const cpus, perCPU = 4, 5
	for seq := uint64(1); seq <= perCPU; seq++ {
		for cpu := range uint16(cpus) {
			if err := p.PublishBatch(streamBatch(r, "alpha0", 1, cpu, seq, 20, keys)); err != nil {
				t.Fatal(err)
			}
		}
	}
	flush(t, p, 20*time.Second)
	// Nothing applies yet: every poll sees four retaining streams.
	waitFor(t, 20*time.Second, func() bool {
		count.mu.Lock()
		defer count.mu.Unlock()
		return len(count.calls) >= 3
	})
	count.mu.Lock()
	for i, c := range count.calls {
		if !slices.Equal(c, []uint16{0, 1, 2, 3}) {
			t.Errorf("poll %d asked about %v, want [0 1 2 3] in one call", i, c)
		}
	}
	count.mu.Unlock()
	if st := p.Stats(); st.RetainedBatches != cpus*perCPU {
		t.Fatalf("retained %d batches, want %d", st.RetainedBatches, cpus*perCPU)
	}
	app.start(t, js)
	defer app.stop()
	if err := p.WaitApplied(testCtx(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Released != cpus*perCPU || st.Republished != 0 {
		t.Errorf("released %d, republished %d; want %d and 0", st.Released, st.Republished, cpus*perCPU)
	}
	// With nothing retained the poller asks nothing.
	count.mu.Lock()
	n := len(count.calls)
	count.mu.Unlock()
	time.Sleep(5 * poll)
	count.mu.Lock()
	defer count.mu.Unlock()
	if len(count.calls) != n {
		t.Errorf("%d calls with nothing retained, want none", len(count.calls)-n)
	}
}

func TestAppliedPollFor(t *testing.T) {
	for _, tc := range []struct{ window, republish, want time.Duration }{
		{0, 0, time.Second},                          // a batch per drain: the default
		{time.Second, 0, time.Second},                // the default window
		{8 * time.Second, 0, 2 * time.Second},        // a quarter of the window
		{time.Minute, 0, 5 * time.Second},            // capped at a third of 15 s
		{time.Minute, time.Minute, 15 * time.Second}, // a quarter again under a longer republish
		{time.Minute, time.Second, time.Second},      // never under 1 s
	} {
		if got := AppliedPollFor(tc.window, tc.republish); got != tc.want {
			t.Errorf("AppliedPollFor(%v, %v) = %v, want %v", tc.window, tc.republish, got, tc.want)
		}
	}
}

// waitFor waits until cond holds, or fails the test after d.
func waitFor(t testing.TB, d time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met after %v", d)
		}
	}
}
