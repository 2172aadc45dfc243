package simhost

import (
	"context"
	"errors"
	"testing"
	"time"

	"dcpi/hwsim"
	"dcpi/node"
	"dcpi/workloads"
)

// TestCutEpoch cuts epochs while four CPUs sample and requires each sample
// in exactly one epoch: per CPU, batches move through epochs in order, each
// cut's report names the last batch of the closing epoch, and the samples
// published plus those dropped equal those the hardware delivered.
func TestCutEpoch(t *testing.T) {
	cfg := hwsim.DefaultConfig()
	cfg.Timing = false
	cfg.Files = map[string][]byte{}
	for _, name := range []string{"ccdriver", "sort", "hashdb", "interp"} {
		data, _ := workloads.Binary(name)
		cfg.Files["/bin/"+name] = data
	}
	m, err := hwsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ncfg := DefaultConfig()
	ncfg.Node.Driver.TableEntries, ncfg.Node.Driver.BufferEntries = 512, 128
	ncfg.Profile.Counters[0].PeriodMin, ncfg.Profile.Counters[0].PeriodMax = 4000, 4400
	ncfg.FlushEvery = 1 << 62 // only the cuts drain tables
	pub := &node.MemPublisher{}
	n, err := New(m, ncfg, pub)
	if err != nil {
		t.Fatal(err)
	}
	for name := range cfg.Files {
		w, _ := workloadArgs(name[len("/bin/"):])
		if _, err := m.Spawn(name, append([]string{name}, w...), nil); err != nil {
			t.Fatal(err)
		}
	}
	runErr := make(chan error, 1)
	go func() { runErr <- n.Run(0) }()

	var closes []node.EpochClose
	for next := uint64(2); ; next++ {
		time.Sleep(20 * time.Millisecond)
		c, err := n.Node().CutEpoch(context.Background(), next)
		if errors.Is(err, node.ErrNotRunning) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if c.Epoch != next-1 {
			t.Fatalf("cut to %d closed epoch %d", next, c.Epoch)
		}
		closes = append(closes, c)
	}
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	if len(closes) < 3 {
		t.Fatalf("only %d cuts happened during the run; the test needs several", len(closes))
	}
	if _, err := n.Node().CutEpoch(context.Background(), 1000); !errors.Is(err, node.ErrNotRunning) {
		t.Fatalf("cut after Run: %v, want node.ErrNotRunning", err)
	}

	// Per CPU, the highest seq seen in each epoch.
	lastIn := map[[2]uint64]uint64{} // {cpu, epoch} -> seq
	prevEpoch := map[uint16]uint64{}
	var published, dropped uint64
	for _, b := range pub.Batches() {
		if b.Epoch < prevEpoch[b.CPU] {
			t.Fatalf("cpu %d: batch %d in epoch %d after one in epoch %d", b.CPU, b.Seq, b.Epoch, prevEpoch[b.CPU])
		}
		prevEpoch[b.CPU] = b.Epoch
		lastIn[[2]uint64{uint64(b.CPU), b.Epoch}] = b.Seq
		published += b.Total()
		for _, d := range b.Drops {
			dropped += d
		}
	}
	for _, c := range closes {
		for cpu, last := range c.LastSeq {
			if got := lastIn[[2]uint64{uint64(cpu), c.Epoch}]; got != last {
				t.Errorf("epoch %d cpu %d: cut reported last seq %d, batches show %d", c.Epoch, cpu, last, got)
			}
		}
	}
	var delivered uint64
	for _, c := range m.CPUStats() {
		for _, v := range c.Interrupts {
			delivered += v
		}
	}
	if published+dropped != delivered {
		t.Fatalf("conservation across %d cuts: %d published + %d dropped != %d delivered", len(closes), published, dropped, delivered)
	}
	t.Logf("%d cuts, %d batches, %d samples", len(closes), len(pub.Batches()), delivered)
}
