package node

import (
	"sync"
	"testing"

	"dcpi/hwsim"
	"dcpi/wire"
	"dcpi/workloads"
)

// memPublisher keeps what a node publishes.
type memPublisher struct {
	mu      sync.Mutex
	batches []*wire.Batch
	images  map[wire.ImageKey]*wire.ImageRecord
}

func (p *memPublisher) PublishImage(r *wire.ImageRecord) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.images == nil {
		p.images = map[wire.ImageKey]*wire.ImageRecord{}
	}
	p.images[r.Key] = r
	return nil
}

func (p *memPublisher) PublishBatch(b *wire.Batch) error {
	data, err := b.MarshalBinary() // what goes on the wire must round-trip
	if err != nil {
		return err
	}
	var c wire.Batch
	if err := c.UnmarshalBinary(data); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.batches = append(p.batches, &c)
	return nil
}

// TestConservation runs a mix of workloads, the process-heavy driver among
// them, on four CPUs with a deliberately small table and buffers, so that
// evictions, buffer hand-offs, full drains racing the sampling and drops
// all happen, and requires every sample the hardware delivered to be in
// exactly one published batch or in a drop counter.
func TestConservation(t *testing.T) {
	cfg := hwsim.DefaultConfig()
	cfg.Timing = false
	cfg.Files = map[string][]byte{}
	for _, w := range workloads.All() {
		data, _ := workloads.Binary(w.Name)
		cfg.Files["/bin/"+w.Name] = data
	}
	m, err := hwsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ncfg := DefaultConfig()
	ncfg.Driver.TableEntries, ncfg.Driver.BufferEntries = 256, 64
	ncfg.Profile.Counters[0].PeriodMin, ncfg.Profile.Counters[0].PeriodMax = 3000, 3400
	ncfg.FlushEvery = 2_000_000
	ncfg.Images = cfg.Files
	pub := &memPublisher{}
	n, err := New(m, ncfg, pub)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ccdriver", "hashdb", "interp", "sort", "server"} {
		w, _ := workloadArgs(name)
		if _, err := m.Spawn("/bin/"+name, append([]string{"/bin/" + name}, w...), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Run(0); err != nil {
		t.Fatal(err)
	}

	var delivered uint64
	for _, c := range m.CPUStats() {
		for _, v := range c.Interrupts {
			delivered += v
		}
	}
	var published, dropped, unknown uint64
	seqs := map[uint16]uint64{}
	for _, b := range pub.batches {
		published += b.Total()
		for _, d := range b.Drops {
			dropped += d
		}
		for _, u := range b.Unknown {
			unknown += u.Count
		}
		if b.Seq != seqs[b.CPU]+1 {
			t.Fatalf("cpu %d: batch seq %d after %d", b.CPU, b.Seq, seqs[b.CPU])
		}
		seqs[b.CPU] = b.Seq
	}
	// Each CPU's last batch, cut after the final drain, accounts for every
	// interrupt its CPU took; and along the way no batch claims more
	// accounted than delivered (Validate) or goes backwards.
	last := map[uint16]*wire.Batch{}
	for _, b := range pub.batches {
		if p := last[b.CPU]; p != nil && (b.Delivered < p.Delivered || b.Accounted < p.Accounted) {
			t.Fatalf("cpu %d: batch %d accounting (%d, %d) behind batch %d's (%d, %d)", b.CPU, b.Seq, b.Delivered, b.Accounted, p.Seq, p.Delivered, p.Accounted)
		}
		last[b.CPU] = b
	}
	for cpu, c := range m.CPUStats() {
		var took uint64
		for _, v := range c.Interrupts {
			took += v
		}
		if b := last[uint16(cpu)]; b == nil || b.Delivered != took || b.Accounted != took {
			t.Fatalf("cpu %d took %d interrupts; its last batch says delivered %d, accounted %d", cpu, took, b.Delivered, b.Accounted)
		}
	}
	ds, drivers := n.Stats()
	var evictions uint64
	for _, d := range drivers {
		evictions += d.Evictions
	}
	t.Logf("delivered %d, published %d in %d batches, dropped %d, unknown %d, evictions %d, full drains %d, buffer drains %d",
		delivered, published, len(pub.batches), dropped, unknown, evictions, ds.FullDrains, ds.BufferDrains)
	if delivered == 0 || published+dropped != delivered {
		t.Fatalf("conservation: %d published + %d dropped != %d delivered", published, dropped, delivered)
	}
	if evictions == 0 || ds.FullDrains == 0 {
		t.Fatalf("the test did not exercise evictions (%d) and full drains (%d)", evictions, ds.FullDrains)
	}
	if float64(unknown) > 0.01*float64(published) {
		t.Errorf("%d of %d samples unattributed: the paper reports well under 1%%", unknown, published)
	}
	// Every image a batch names has a record, with symbols.
	for _, b := range pub.batches {
		for _, e := range b.Entries {
			r := pub.images[e.Image]
			if r == nil {
				t.Fatalf("batch names image %v with no record", e.Image)
			}
		}
	}
}

// sortMachine is a functional (untimed) machine with /bin/sort on it.
func sortMachine(t *testing.T, cpus int) *hwsim.Machine {
	t.Helper()
	cfg := hwsim.DefaultConfig()
	cfg.Timing, cfg.CPUs = false, cpus
	data, _ := workloads.Binary("sort")
	cfg.Files = map[string][]byte{"/bin/sort": data}
	m, err := hwsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func workloadArgs(name string) ([]string, bool) {
	for _, w := range workloads.All() {
		if w.Name == name {
			return w.DefaultArgs, true
		}
	}
	return nil, false
}

// TestFlushOnCommand asks for a drain with no periodic ones configured and
// requires the daemon to have made it.
func TestFlushOnCommand(t *testing.T) {
	m := sortMachine(t, 1)
	ncfg := DefaultConfig()
	ncfg.FlushEvery = 1 << 62 // never
	pub := &memPublisher{}
	n, err := New(m, ncfg, pub)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Spawn("/bin/sort", nil, nil); err != nil {
		t.Fatal(err)
	}
	n.Flush()
	if err := n.Run(0); err != nil {
		t.Fatal(err)
	}
	if ds, _ := n.Stats(); ds.FullDrains != 1 {
		t.Fatalf("%d full drains, want the 1 asked for", ds.FullDrains)
	}
}

// TestCarriedDrops: a restarted agent reports its predecessor's losses in
// its first batch on each CPU, outside its own accounting.
func TestCarriedDrops(t *testing.T) {
	m := sortMachine(t, 2)
	ncfg := DefaultConfig()
	ncfg.FirstSeq = []uint64{7, 3}
	ncfg.Carried = []map[string]uint64{{"node.crash_lost": 11}, nil}
	pub := &memPublisher{}
	n, err := New(m, ncfg, pub)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Spawn("/bin/sort", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := n.Run(0); err != nil {
		t.Fatal(err)
	}
	var lost uint64
	first := map[uint16]uint64{}
	for _, b := range pub.batches {
		if _, ok := first[b.CPU]; !ok {
			first[b.CPU] = b.Seq
			if b.CPU == 0 && b.Drops["node.crash_lost"] != 11 {
				t.Errorf("first batch of cpu 0 carries drops %v, want node.crash_lost 11", b.Drops)
			}
		}
		lost += b.Drops["node.crash_lost"]
		if b.Accounted > b.Delivered {
			t.Fatalf("batch %d: accounted %d > delivered %d: carried drops counted as this run's", b.Seq, b.Accounted, b.Delivered)
		}
	}
	if lost != 11 || first[0] != 7 || first[1] != 3 {
		t.Fatalf("lost %d (want 11 once); first seqs %v (want 7 and 3)", lost, first)
	}
}
