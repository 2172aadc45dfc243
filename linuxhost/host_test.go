package linuxhost

import (
	"errors"
	"os"
	"testing"
	"time"

	"dcpi/node"
	"dcpi/wire"
)

// needPerf skips unless this process may open per-CPU events.
func needPerf(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("perf_event_open per CPU needs root here")
	}
}

// batchTotals sums the samples the batches stored and counted as dropped.
func batchTotals(bs []*wire.Batch) (stored, drops uint64) {
	for _, b := range bs {
		for _, e := range b.Entries {
			stored += e.Count
		}
		for _, u := range b.Unknown {
			stored += u.Count
		}
		for _, d := range b.Drops {
			drops += d
		}
	}
	return stored, drops
}

// TestHostProfilesAChild profiles a shell loop and its children through
// a node: conservation is exact, and the samples land in /bin/sh or the
// kernel.
func TestHostProfilesAChild(t *testing.T) {
	needPerf(t)
	held, err := StartHeld([]string{"/bin/sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; /bin/true"}, nil, os.Stdout, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{PID: held.PID(), Freq: 999, EnableOnExec: true})
	if err != nil {
		held.Kill()
		t.Fatal(err)
	}
	defer h.Close()
	cfg := node.DefaultConfig()
	cfg.Host, cfg.KernelBase = "linux0", KernelBase
	cfg.Driver.Stacks = node.DefaultStackConfig()
	pub := &node.MemPublisher{}
	n, err := node.New(h, cfg, pub, h.Images())
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	go func() { held.Cmd.Wait(); close(stop) }()
	if err := h.Run(n, stop, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	c := h.Counts()
	stored, drops := batchTotals(pub.Batches())
	t.Logf("counts %+v; stored %d, dropped %d, images %d", c, stored, drops, len(pub.Images()))
	if c.Delivered == 0 {
		t.Fatal("no samples")
	}
	if stored+drops != c.Generated {
		t.Errorf("conservation: stored %d + dropped %d != generated %d", stored, drops, c.Generated)
	}
	var unknown uint64
	for _, b := range pub.Batches() {
		for _, u := range b.Unknown {
			unknown += u.Count
		}
	}
	if unknown*2 > stored {
		t.Errorf("%d of %d samples in no image", unknown, stored)
	}
	var sawSh bool
	for _, r := range pub.Images() {
		if r.Path == "/usr/bin/dash" || r.Path == "/bin/sh" || r.Path == "/usr/bin/sh" || r.Path == "/bin/dash" {
			sawSh = true
		}
	}
	for _, r := range pub.Images() {
		t.Logf("image %s base %#x, %d symbols", r.Path, r.Base, len(r.Symbols))
	}
	if !sawSh {
		t.Error("no image record for the shell")
	}
}

// TestHardwareEventRefusedCleanly: where there is no PMU, cycles is
// refused with ErrNoPMU in one line.
func TestHardwareEventRefusedCleanly(t *testing.T) {
	needPerf(t)
	if _, err := os.Stat("/sys/bus/event_source/devices/cpu"); err == nil {
		t.Skip("this machine has a PMU")
	}
	_, err := New(Config{PID: os.Getpid(), Event: "cycles"})
	if !errors.Is(err, ErrNoPMU) {
		t.Fatalf("cycles without a PMU: %v, want ErrNoPMU", err)
	}
	t.Log(err)
}

// TestLostRecordsCounted: a one-page ring read once a second at a high
// rate overflows; what the kernel lost is counted under host.ring_lost
// and conservation stays exact.
func TestLostRecordsCounted(t *testing.T) {
	needPerf(t)
	held, err := StartHeld([]string{"/bin/sh", "-c", "i=0; while [ $i -lt 2000000 ]; do i=$((i+1)); done"}, nil, os.Stdout, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{PID: held.PID(), Freq: 10000, EnableOnExec: true, RingPages: 1, Poll: 300 * time.Millisecond})
	if err != nil {
		held.Kill()
		t.Fatal(err)
	}
	defer h.Close()
	cfg := node.DefaultConfig()
	cfg.Host, cfg.KernelBase = "linux0", KernelBase
	pub := &node.MemPublisher{}
	n, err := node.New(h, cfg, pub, h.Images())
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	go func() { held.Cmd.Wait(); close(stop) }()
	if err := h.Run(n, stop, 0); err != nil {
		t.Fatal(err)
	}
	c := h.Counts()
	stored, drops := batchTotals(pub.Batches())
	var lost uint64
	for _, b := range pub.Batches() {
		lost += b.Drops[wire.DropRingLost]
	}
	t.Logf("counts %+v; stored %d, dropped %d (%s %d)", c, stored, drops, wire.DropRingLost, lost)
	if stored+drops != c.Generated || lost != c.Lost {
		t.Errorf("conservation: stored %d + dropped %d != generated %d, or ring_lost %d != lost %d", stored, drops, c.Generated, lost, c.Lost)
	}
	if c.Lost == 0 {
		t.Skip("the ring did not overflow on this machine")
	}
}
