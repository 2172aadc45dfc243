package simhost

import (
	"bytes"
	"os"
	"testing"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/vmunix"
	"dcpi/node"
	"dcpi/wire"
	"dcpi/workloads"
)

// TestConservation runs a mix of workloads, the process-heavy driver among
// them, on four CPUs with a deliberately small table and buffers, so that
// evictions, buffer hand-offs, full drains racing the sampling and drops
// all happen, and requires every sample the hardware delivered to be in
// exactly one published batch or in a drop counter.
func TestConservation(t *testing.T) {
	var all []string
	for _, w := range workloads.All() {
		all = append(all, w.Name)
	}
	m := workloadMachine(t, hwsim.DefaultConfig().CPUs, false, all...)
	n, pub := runWorkloads(t, m, busyDriverConfig(), 0, "ccdriver", "hashdb", "interp", "sort", "server")
	checkConservation(t, m, n, pub, true)
}

// TestConservationThreads is TestConservation for a multi-threaded
// program: hwsim's static pthreads test program, its threads spread over
// four CPUs of the timed 21164, sampled into the same small node. Every
// sample lands in one batch or a drop counter, attributed to the process.
func TestConservationThreads(t *testing.T) {
	skipUnderRace(t)
	data, err := os.ReadFile("../hwsim/testdata/pthreads")
	if err != nil {
		t.Fatal(err)
	}
	cfg := hwsim.DefaultConfig()
	cfg.CPUs = 4
	cfg.Files = map[string][]byte{"/bin/pthreads": data}
	m, err := hwsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pub := &node.MemPublisher{}
	n, err := New(m, busyDriverConfig(), pub)
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.Spawn("/bin/pthreads", []string{"/bin/pthreads", "4", "3000"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Run(0); err != nil {
		t.Fatal(err)
	}
	if p.ExitStatus() != 0 || len(m.Unimplemented()) > 0 {
		t.Fatalf("exit status %#x, unimplemented %v", p.ExitStatus(), m.Unimplemented())
	}
	busy := 0
	for _, c := range m.CPUStats() {
		if c.User > 0 {
			busy++
		}
	}
	if busy < 2 {
		t.Fatalf("the threads ran on %d CPU(s)", busy)
	}
	checkConservation(t, m, n, pub, false)
}

// checkConservation requires every sample m's CPUs took to be in exactly
// one of pub's batches or in a drop counter, each CPU's last batch to
// account for all of its CPU's interrupts, and unknown samples to stay
// under 1%; busy: evictions and full drains must have happened too.
func checkConservation(t *testing.T, m *hwsim.Machine, n *Host, pub *node.MemPublisher, busy bool) {
	t.Helper()
	var delivered uint64
	for _, c := range m.CPUStats() {
		for _, v := range c.Interrupts {
			delivered += v
		}
	}
	var published, dropped, unknown uint64
	seqs := map[uint16]uint64{}
	for _, b := range pub.Batches() {
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
	for _, b := range pub.Batches() {
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
	ds, drivers := n.Node().Stats()
	var evictions uint64
	for _, d := range drivers {
		evictions += d.Evictions
	}
	t.Logf("delivered %d, published %d in %d batches, dropped %d, unknown %d, evictions %d, full drains %d, buffer drains %d",
		delivered, published, len(pub.Batches()), dropped, unknown, evictions, ds.FullDrains, ds.BufferDrains)
	if delivered == 0 || published+dropped != delivered {
		t.Fatalf("conservation: %d published + %d dropped != %d delivered", published, dropped, delivered)
	}
	if busy && (evictions == 0 || ds.FullDrains == 0) {
		t.Fatalf("the test did not exercise evictions (%d) and full drains (%d)", evictions, ds.FullDrains)
	}
	if float64(unknown) > 0.01*float64(published) {
		t.Errorf("%d of %d samples unattributed: the paper reports well under 1%%", unknown, published)
	}
	// Every image a batch names has a record, with symbols.
	for _, b := range pub.Batches() {
		for _, e := range b.Entries {
			r := pub.Images()[e.Image]
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
	pub := &node.MemPublisher{}
	n, err := New(m, ncfg, pub)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Spawn("/bin/sort", nil, nil); err != nil {
		t.Fatal(err)
	}
	n.Node().Flush()
	if err := n.Run(0); err != nil {
		t.Fatal(err)
	}
	if ds, _ := n.Node().Stats(); ds.FullDrains != 1 {
		t.Fatalf("%d full drains, want the 1 asked for", ds.FullDrains)
	}
}

// TestCarriedDrops: a restarted agent reports its predecessor's losses in
// its first batch on each CPU, outside its own accounting.
func TestCarriedDrops(t *testing.T) {
	m := sortMachine(t, 2)
	ncfg := DefaultConfig()
	ncfg.Node.FirstSeq = []uint64{7, 3}
	ncfg.Node.Carried = []map[string]uint64{{wire.DropCrashLost: 11}, nil}
	pub := &node.MemPublisher{}
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
	for _, b := range pub.Batches() {
		if _, ok := first[b.CPU]; !ok {
			first[b.CPU] = b.Seq
			if b.CPU == 0 && b.Drops[wire.DropCrashLost] != 11 {
				t.Errorf("first batch of cpu 0 carries drops %v, want node.crash_lost 11", b.Drops)
			}
		}
		lost += b.Drops[wire.DropCrashLost]
		if b.Accounted > b.Delivered {
			t.Fatalf("batch %d: accounted %d > delivered %d: carried drops counted as this run's", b.Seq, b.Accounted, b.Delivered)
		}
	}
	if lost != 11 || first[0] != 7 || first[1] != 3 {
		t.Fatalf("lost %d (want 11 once); first seqs %v (want 7 and 3)", lost, first)
	}
}

// machineConfig returns a machine with the named embedded workloads in
// /bin.
func machineConfig(t testing.TB, cpus int, names ...string) hwsim.Config {
	t.Helper()
	cfg := hwsim.DefaultConfig()
	cfg.CPUs = cpus
	cfg.Files = map[string][]byte{}
	for _, n := range names {
		bin, err := workloads.Binary(n)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Files["/bin/"+n] = bin
	}
	return cfg
}

// spawnWorkloads starts each named workload of /bin with its usual
// arguments.
func spawnWorkloads(t testing.TB, m *hwsim.Machine, names ...string) {
	t.Helper()
	for _, name := range names {
		args, _ := workloadArgs(name)
		if _, err := m.Spawn("/bin/"+name, append([]string{"/bin/" + name}, args...), nil); err != nil {
			t.Fatal(err)
		}
	}
}

// runWorkloads runs the named workloads on m under a host of ncfg that
// publishes into memory, for limit cycles (0: until they exit), and
// returns the host and what it published.
func runWorkloads(t testing.TB, m *hwsim.Machine, ncfg Config, limit uint64, names ...string) (*Host, *node.MemPublisher) {
	t.Helper()
	pub := &node.MemPublisher{}
	h, err := New(m, ncfg, pub)
	if err != nil {
		t.Fatal(err)
	}
	spawnWorkloads(t, m, names...)
	if err := h.Run(limit); err != nil {
		t.Fatal(err)
	}
	return h, pub
}

// shortPeriods samples CYCLES about every 1,000 cycles and IMISS every 200
// misses: many samples from a short run.
func shortPeriods() hwsim.ProfileConfig {
	p := hwsim.DefaultProfile()
	p.Counters[0].PeriodMin, p.Counters[0].PeriodMax = 900, 1100
	p.Counters[1].PeriodMin, p.Counters[1].PeriodMax = 180, 220
	return p
}

// TestRecordTrace records a short run and checks that the trace holds every
// interrupt the machine delivered, as the machine delivered it.
func TestRecordTrace(t *testing.T) {
	cfg := machineConfig(t, 2, "sort", "ccdriver")
	var buf bytes.Buffer
	sum, err := RecordTrace(&buf, RecordOptions{
		Machine:  cfg,
		Profile:  shortPeriods(),
		Programs: [][]string{{"/bin/sort", "3000"}, {"/bin/ccdriver", "1"}},
		Cycles:   5_000_000, // ccdriver finishes first and is started again
	})
	if err != nil {
		t.Fatal(err)
	}
	size := buf.Len()
	tr, err := node.ReadTrace(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(tr.Samples)) != sum.Samples || tr.CPUs != 2 || sum.Samples < 3000 {
		t.Fatalf("trace of %d samples on %d CPUs, summary %+v", len(tr.Samples), tr.CPUs, sum)
	}
	if sum.Processes < 3 || sum.Cycles < 5_000_000 {
		t.Errorf("summary %+v: want programs restarted until 5M cycles", sum)
	}
	var events [alpha.NumEvents]int
	kernel, idle := 0, 0
	for _, s := range tr.Samples {
		events[s.Event]++
		if s.PC >= alpha.KernelBase {
			kernel++
		}
		if s.PID == 0 {
			idle++
		}
	}
	if events[alpha.EvCycles] == 0 || events[alpha.EvIMiss] == 0 || events[alpha.EvCycles]+events[alpha.EvIMiss] != len(tr.Samples) {
		t.Errorf("events %v", events)
	}
	if kernel == 0 {
		t.Error("no kernel samples")
	}
	t.Logf("%+v: %d samples, %d in vmunix, %d idle, %.1f bytes a sample", sum, len(tr.Samples), kernel, idle,
		float64(size)/float64(len(tr.Samples)))
}

// TestImageRecords: the daemon learns vmunix from the machine's boot map
// event and the programs from their exec, and each record carries what
// the simulated host's files say: size, text range and symbols.
func TestImageRecords(t *testing.T) {
	m := sortMachine(t, 1)
	pub := &node.MemPublisher{}
	cfg := DefaultConfig()
	cfg.Profile = shortPeriods() // enough samples to land some in vmunix
	h, err := New(m, cfg, pub)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Spawn("/bin/sort", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := h.Run(0); err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int{vmunix.Path: len(vmunix.Image()), "/bin/sort": len(m.Config().Files["/bin/sort"])}
	seen := map[string]bool{}
	for _, r := range pub.Images() {
		want, ok := sizes[r.Path]
		if !ok {
			t.Errorf("record of %s, an image the host does not have", r.Path)
			continue
		}
		seen[r.Path] = true
		if r.Size != uint64(want) || len(r.Symbols) == 0 || r.TextStart >= r.TextEnd {
			t.Errorf("%s: size %d (want %d), %d symbols, text [%#x, %#x)", r.Path, r.Size, want, len(r.Symbols), r.TextStart, r.TextEnd)
		}
	}
	t.Logf("by image: %+v", h.Node().ImageFigures())
	if !seen[vmunix.Path] || !seen["/bin/sort"] {
		t.Fatalf("records of %v, want vmunix and /bin/sort", seen)
	}
}
