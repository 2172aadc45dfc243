package simhost

import (
	"errors"
	"sync"
	"testing"
	"time"

	"dcpi/node"
	"dcpi/wire"
)

// failingPublisher takes a few batches, then fails every one.
type failingPublisher struct {
	node.MemPublisher
	mu   sync.Mutex
	left int
}

var errPublish = errors.New("publisher gave up")

func (p *failingPublisher) PublishBatch(b *wire.Batch) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.left == 0 {
		return errPublish
	}
	p.left--
	return p.MemPublisher.PublishBatch(b)
}

// TestRunStopsWhenDaemonDies: a host kept busy with no time limit would
// run forever; when its daemon dies (here, its publisher fails) Run must
// notice, stop and return the daemon's error, with the daemon gone.
func TestRunStopsWhenDaemonDies(t *testing.T) {
	m := sortMachine(t, 2)
	cfg := DefaultConfig()
	cfg.FlushEvery = 2_000_000
	pub := &failingPublisher{left: 3}
	h, err := New(m, cfg, pub)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.KeepRunning("/bin/sort", nil); err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- h.Run(0) }()
	select {
	case err := <-ran:
		if !errors.Is(err, errPublish) {
			t.Fatalf("Run returned %v, want the daemon's %v", err, errPublish)
		}
	case <-time.After(60 * time.Second):
		h.Stop()
		t.Fatalf("Run went on after its daemon died (returned %v once stopped)", <-ran)
	}
	select {
	case <-h.Node().DaemonDone():
	default:
		t.Fatal("Run returned with the daemon still running")
	}
	if got := len(pub.Batches()); got != 3 {
		t.Errorf("%d batches published, want the 3 before the failure", got)
	}
}

// TestRunTwice: a host runs once; a second Run is an error, not a panic.
func TestRunTwice(t *testing.T) {
	m := sortMachine(t, 1)
	h, err := New(m, DefaultConfig(), &node.MemPublisher{})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Run(1_000_000); err != nil {
		t.Fatal(err)
	}
	if err := h.Run(2_000_000); err == nil {
		t.Fatal("a second Run succeeded")
	}
}
