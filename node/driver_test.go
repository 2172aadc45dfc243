package node

import (
	"errors"
	"strings"
	"testing"
)

func TestDefaultDriverConfig(t *testing.T) {
	c := DefaultDriverConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// Sec. 4.2.1 and 5.3: 16K entries, 4-way, two 8K-entry buffers.
	if c.TableEntries != 16384 || c.Assoc != 4 || c.Policy != RoundRobin || c.BufferEntries != 8192 {
		t.Errorf("default %+v", c)
	}
}

func TestDriverConfigValidate(t *testing.T) {
	for _, c := range []struct {
		change func(*DriverConfig)
		want   string
	}{
		{func(c *DriverConfig) { c.Assoc = 0 }, "associativity 0"},
		{func(c *DriverConfig) { c.Assoc = 17 }, "associativity 17"},
		{func(c *DriverConfig) { c.Assoc = 6 }, "multiple of the associativity 6"},
		{func(c *DriverConfig) { c.TableEntries = 0 }, "table of 0 entries"},
		{func(c *DriverConfig) { c.TableEntries = 1 << 27 }, "at most"},
		{func(c *DriverConfig) { c.Policy = 2 }, "policy 2"},
		{func(c *DriverConfig) { c.BufferEntries = 0 }, "overflow buffers of 0 entries"},
	} {
		cfg := DefaultDriverConfig()
		c.change(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrDriverConfig) {
			t.Errorf("%+v: error %v, want one saying %q and wrapping ErrDriverConfig", cfg, err, c.want)
		}
		if _, err := NewDriver(cfg); err == nil {
			t.Errorf("NewDriver(%+v) accepted it", cfg)
		}
	}
	for _, p := range []string{"rr", "round-robin", "stf", "swap-to-front"} {
		if _, err := ParsePolicy(p); err != nil {
			t.Error(err)
		}
	}
	if _, err := ParsePolicy("lru"); err == nil {
		t.Error("ParsePolicy(lru) accepted it")
	}
}

// TestCostModel pins the modelled cost of each path for the designs of
// sec. 5.4: DCPI's 4-way round-robin table costs 430 cycles a hit on
// average and 700 an eviction (Table 4, SPECint95); a packed 6-way bucket
// pays more per compare, an 8-way one a second line, swap-to-front the
// entries it moves.
func TestCostModel(t *testing.T) {
	c := DefaultCostModel()
	for _, tc := range []struct {
		assoc  int
		policy Policy
		hit    []uint64
		evict  uint64
		drop   uint64
	}{
		{4, RoundRobin, []uint64{424, 428, 432, 436}, 700, 436},
		{4, SwapToFront, []uint64{424, 436, 440, 444}, 712, 436},
		{6, RoundRobin, []uint64{426, 432, 438, 444, 450, 456}, 720, 456},
		{6, SwapToFront, []uint64{426, 440, 446, 452, 458, 464}, 740, 456},
		{8, RoundRobin, []uint64{424, 428, 432, 436, 540, 544, 548, 552}, 816, 552},
		{8, SwapToFront, []uint64{424, 436, 440, 444, 548, 552, 556, 560}, 844, 552},
	} {
		ct := c.table(tc.assoc, tc.policy)
		var sum uint64
		for j, want := range tc.hit {
			if ct.hit[j] != want {
				t.Errorf("%d-way %v: hit at %d costs %d, want %d", tc.assoc, tc.policy, j, ct.hit[j], want)
			}
			sum += ct.hit[j]
		}
		if ct.evict != tc.evict || ct.drop != tc.drop {
			t.Errorf("%d-way %v: evict %d drop %d, want %d %d", tc.assoc, tc.policy, ct.evict, ct.drop, tc.evict, tc.drop)
		}
		if tc.assoc == 4 && tc.policy == RoundRobin && sum/4 != 430 {
			t.Errorf("4-way round-robin: mean hit cost %d, want 430", sum/4)
		}
	}
}

// TestSampleCostsByPath checks what Sample returns on each path, and that
// Stats accounts for it.
func TestSampleCostsByPath(t *testing.T) {
	d := oneBucket(t, 4, RoundRobin)
	cm := DefaultCostModel()
	fill := cm.Base + 4*cm.Probe + cm.Replace
	steps := []struct {
		pc   uint64
		cost uint64
		what string
	}{
		{4, fill, "fill"}, {4, 424, "hit at 0"}, {8, fill, "fill"}, {8, 428, "hit at 1"},
		{12, fill, "fill"}, {16, fill, "fill"}, {16, 436, "hit at 3"}, {20, 700, "eviction"},
	}
	var total uint64
	for _, s := range steps {
		cost, full := d.Sample(1, s.pc, 0)
		if cost != s.cost || full {
			t.Errorf("%s of %d: cost %d full %v, want %d false", s.what, s.pc, cost, full, s.cost)
		}
		total += cost
	}
	d.BeginFlush()
	if cost, _ := d.Sample(1, 4, 0); cost != cm.Direct {
		t.Errorf("flushing: cost %d, want %d", cost, cm.Direct)
	}
	total += cm.Direct
	st := d.Stats()
	if st.Cycles() != total || st.CyclesDirect != cm.Direct || st.CyclesMiss != 4*fill+700 {
		t.Errorf("stats cycles %+v, want total %d", st, total)
	}
	if st.Samples != 9 || st.Hits != 3 || st.Misses != 5 || st.Fills != 4 || st.Evictions != 1 || st.DirectWrites != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestFlushingHandler checks the handler variants of sec. 4.2.3: between
// BeginFlush and EndFlush a sample goes straight to the overflow buffer
// and the table is left alone for the daemon; after EndFlush the table
// counts again.
func TestFlushingHandler(t *testing.T) {
	cfg := DefaultDriverConfig()
	cfg.TableEntries, cfg.BufferEntries = 64, 16
	d, err := NewDriver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d.Sample(5, 0x1000, 0)
	d.Sample(5, 0x1000, 0)
	d.BeginFlush()
	before := append([]slot(nil), d.tab.slots...)
	for range 3 {
		d.Sample(5, 0x1000, 0)
		d.Sample(6, 0x2000, 2)
	}
	for i := range before {
		if d.tab.slots[i] != before[i] {
			t.Fatal("the flushing handler changed the table")
		}
	}
	got := d.DrainTable(nil)
	if len(got) != 1 || got[0] != (Entry{PID: 5, PC: 0x1000, Count: 2}) {
		t.Errorf("DrainTable = %v", got)
	}
	d.EndFlush()
	d.Sample(5, 0x1000, 0)
	if n := d.HandOff(true); n != 1 {
		t.Fatalf("HandOff(true) = %d buffers", n)
	}
	direct, ok := d.TakeFull(nil)
	if !ok || len(direct) != 6 {
		t.Fatalf("TakeFull = %v %v", direct, ok)
	}
	for i, e := range direct {
		want := Entry{PID: 5, PC: 0x1000, Count: 1}
		if i%2 == 1 {
			want = Entry{PID: 6, PC: 0x2000, Event: 2, Count: 1}
		}
		if e != want {
			t.Errorf("direct write %d = %+v, want %+v", i, e, want)
		}
	}
	d.Release()
	if _, ts, _, bs := d.Pending(); ts != 1 || bs != 0 {
		t.Errorf("after EndFlush: %d samples in the table, %d in buffers; want 1, 0", ts, bs)
	}
	defer func() {
		if recover() == nil {
			t.Error("DrainTable outside a flush did not panic")
		}
	}()
	d.DrainTable(nil)
}

// TestSaturation runs one key CountMax+1 times: the entry reaches
// CountMax, the next hit sends it out with that count and restarts it at
// one, so no sample is lost to the 24-bit field.
func TestSaturation(t *testing.T) {
	if testing.Short() {
		t.Skip("16.7 million samples")
	}
	d, err := NewDriver(DefaultDriverConfig())
	if err != nil {
		t.Fatal(err)
	}
	for range CountMax + 1 {
		d.Sample(3, 0x120000040, 0)
	}
	d.HandOff(true)
	out, _ := d.TakeFull(nil)
	d.BeginFlush()
	table := d.DrainTable(nil)
	want := Entry{PID: 3, PC: 0x120000040, Count: CountMax}
	if len(out) != 1 || out[0] != want || len(table) != 1 || table[0].Count != 1 {
		t.Errorf("buffer %v, table %v; want [%+v] and a count of 1", out, table, want)
	}
	if st := d.Stats(); st.Saturations != 1 || st.Hits != CountMax || st.Misses != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestDropsWhenDaemonIsBehind fills both overflow buffers with the daemon
// holding them: evictions then drop the incoming sample (not the evicted
// entry, which may hold many), hits still count, and Release restores the
// normal path.
func TestDropsWhenDaemonIsBehind(t *testing.T) {
	cfg := DefaultDriverConfig()
	cfg.TableEntries, cfg.Assoc, cfg.BufferEntries = 4, 4, 2
	d, err := NewDriver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for pc := uint64(4); pc <= 16; pc += 4 {
		d.Sample(1, pc, 0)
		d.Sample(1, pc, 0)
	}
	fulls := 0
	for pc := uint64(20); pc <= 32; pc += 4 { // four evictions fill both buffers
		if _, full := d.Sample(1, pc, 0); full {
			fulls++
		}
	}
	if fulls != 2 {
		t.Fatalf("%d buffers reported full, want 2", fulls)
	}
	d.Sample(1, 36, 0) // no room: dropped
	d.Sample(1, 32, 0) // a hit still counts
	if st := d.Stats(); st.Dropped != 1 || st.Evictions != 4 {
		t.Errorf("stats %+v", st)
	}
	d.HandOff(false)
	var got []Entry
	for ok := true; ok; {
		got, ok = d.TakeFull(got)
	}
	if len(got) != 4 || got[0].Count != 2 {
		t.Errorf("daemon took %v", got)
	}
	if n := d.Release(); n != 2 {
		t.Errorf("Release freed %d buffers, want 2", n)
	}
	if _, full := d.Sample(1, 40, 0); full || d.Stats().Evictions != 5 {
		t.Errorf("after Release: stats %+v", d.Stats())
	}
}

// TestHandlerDoesNotAllocate covers every path of every handler variant.
func TestHandlerDoesNotAllocate(t *testing.T) {
	for _, c := range []struct {
		assoc  int
		policy Policy
	}{{4, RoundRobin}, {6, RoundRobin}, {6, SwapToFront}, {8, SwapToFront}} {
		cfg := DefaultDriverConfig()
		cfg.Assoc, cfg.Policy = c.assoc, c.policy
		cfg.TableEntries, cfg.BufferEntries = 64*c.assoc, 32
		d, err := NewDriver(cfg)
		if err != nil {
			t.Fatal(err)
		}
		d.satAt = 3
		pc := uint64(0x120000000)
		dst := make([]Entry, 0, cfg.BufferEntries)
		i := 0
		allocs := testing.AllocsPerRun(20000, func() {
			d.Sample(1, 0x120000000, 0) // hits, saturations
			pc += 4
			d.Sample(2, pc, 0) // fills, evictions, full buffers
			// A daemon that keeps up half the time: drops the other half.
			if i++; i%20 == 0 && i/1000%2 == 0 {
				d.HandOff(false)
				for ok := true; ok; {
					dst, ok = d.TakeFull(dst[:0])
				}
				d.Release()
			}
		})
		d.BeginFlush()
		allocs += testing.AllocsPerRun(1000, func() { d.Sample(1, 0x120000000, 0) })
		if allocs != 0 {
			t.Errorf("%d-way %v: %v allocations per sample", c.assoc, c.policy, allocs)
		}
		if st := d.Stats(); st.Hits == 0 || st.Evictions == 0 || st.Saturations == 0 || st.Dropped == 0 || st.DirectWrites == 0 {
			t.Errorf("%d-way %v: a path was not taken: %+v", c.assoc, c.policy, st)
		}
	}
}
