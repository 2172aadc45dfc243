package simhost

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"dcpi/hwsim"
	"dcpi/node"
	"dcpi/wire"
)

// windowProfile sums a run's batches per (CPU, image, offset, event, PID)
// and per (CPU, unknown PID, PC, event), with the drops by (CPU, name), and
// per CPU the stacks' samples: what a window must publish, whatever it
// merged.
func windowProfile(bs []*wire.Batch) (profile map[string]uint64, stacks map[uint16]uint64) {
	profile, stacks = map[string]uint64{}, map[uint16]uint64{}
	for _, b := range bs {
		for _, e := range b.Entries {
			profile[fmt.Sprintf("%d %v %d %d %d", b.CPU, e.Image, e.Offset, e.Event, e.PID)] += e.Count
		}
		for _, u := range b.Unknown {
			profile[fmt.Sprintf("%d unknown %d %d %d", b.CPU, u.PID, u.PC, u.Event)] += u.Count
		}
		for name, d := range b.Drops {
			profile[fmt.Sprintf("%d drop %s", b.CPU, name)] += d
		}
		stacks[b.CPU] += b.StackTotal()
		for _, d := range b.StackDrops {
			stacks[b.CPU] += d
		}
	}
	return profile, stacks
}

// TestPublishWindowSameProfile runs the same deterministic host twice,
// publishing a batch per drain and with a publish window of five drains,
// with stacks on and a small driver so that drops happen: the windowed
// run must publish fewer batches holding exactly the same per-CPU
// profile, drops and stack samples, and each CPU's last batch the same
// accounting. A drain lost or merged twice changes the sums.
func TestPublishWindowSameProfile(t *testing.T) {
	skipUnderRace(t)
	names := []string{"ccdriver", "sort", "hashdb"}
	run := func(window uint64) (*Host, []*wire.Batch) {
		m := workloadMachine(t, 2, false, names...)
		ncfg := busyDriverConfig()
		ncfg.Node.Driver.Stacks = node.StackConfig{Entries: 64, BufferEntries: 16, Depth: wire.MaxStackFrames}
		ncfg.Node.PublishEvery = window
		h, pub := runWorkloads(t, m, ncfg, 40_000_000, names...)
		return h, pub.Batches()
	}
	each, eachBatches := run(0)
	win, winBatches := run(5 * busyDriverConfig().FlushEvery)
	if each.Generated() != win.Generated() || each.Generated() == 0 {
		t.Fatalf("the runs differ: %d and %d samples generated", each.Generated(), win.Generated())
	}
	pe, se := windowProfile(eachBatches)
	pw, sw := windowProfile(winBatches)
	if !maps.Equal(pe, pw) || !maps.Equal(se, sw) {
		t.Fatalf("windowed profile differs: %d keys, stacks %v; per drain %d keys, stacks %v", len(pw), sw, len(pe), se)
	}
	last := func(bs []*wire.Batch) map[uint16][2]uint64 {
		out := map[uint16][2]uint64{}
		for _, b := range bs {
			out[b.CPU] = [2]uint64{b.Delivered, b.Accounted}
		}
		return out
	}
	if le, lw := last(eachBatches), last(winBatches); !maps.Equal(le, lw) {
		t.Fatalf("last accounting per CPU: per drain %v, windowed %v", le, lw)
	}
	if 2*len(winBatches) >= len(eachBatches) {
		t.Fatalf("the window merged little: %d batches, %d per drain", len(winBatches), len(eachBatches))
	}
	ds, _ := win.Node().Stats()
	t.Logf("%d samples: %d batches per drain, %d windowed (%d full drains); entries %d per drain, %d windowed",
		win.Generated(), len(eachBatches), len(winBatches), ds.FullDrains, entriesOf(eachBatches), ds.Entries)
}

func entriesOf(bs []*wire.Batch) (n int) {
	for _, b := range bs {
		n += len(b.Entries) + len(b.Unknown)
	}
	return n
}

// TestPublishWindowAcrossCuts cuts epochs while a windowed daemon drains
// every 0.4 M cycles and publishes every 2 M: every sample must be in
// exactly one epoch (the cut's report names the last batch of the
// closing epoch, conservation holds), and a batch that does not close an
// epoch or the run spans at least the window. (How much the windows
// merge depends on how often the wall-clock cuts land;
// TestPublishWindowSameProfile checks the merging itself.)
func TestPublishWindowAcrossCuts(t *testing.T) {
	names := []string{"ccdriver", "sort", "hashdb", "interp"}
	m := workloadMachine(t, 4, false, names...)
	ncfg := busyDriverConfig()
	ncfg.FlushEvery = 400_000
	const window = 2_000_000
	ncfg.Node.PublishEvery = window
	pub := &node.MemPublisher{}
	h, err := New(m, ncfg, pub)
	if err != nil {
		t.Fatal(err)
	}
	spawnWorkloads(t, m, names...)
	runErr := make(chan error, 1)
	go func() { runErr <- h.Run(0) }()
	var closes []node.EpochClose
	for next := uint64(2); ; next++ {
		time.Sleep(30 * time.Millisecond)
		c, err := h.Node().CutEpoch(context.Background(), next)
		if errors.Is(err, node.ErrNotRunning) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		closes = append(closes, c)
	}
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	if len(closes) < 2 {
		t.Fatalf("only %d cuts happened during the run; the test needs several", len(closes))
	}
	batches := pub.Batches()
	lastIn := map[[2]uint64]uint64{} // {cpu, epoch} -> last seq
	lastOf := map[uint16]uint64{}    // cpu -> last seq
	for _, b := range batches {
		lastIn[[2]uint64{uint64(b.CPU), b.Epoch}] = b.Seq
		lastOf[b.CPU] = b.Seq
	}
	var published, dropped uint64
	prevEpoch := map[uint16]uint64{}
	for _, b := range batches {
		if b.Epoch < prevEpoch[b.CPU] {
			t.Fatalf("cpu %d: batch %d in epoch %d after one in epoch %d", b.CPU, b.Seq, b.Epoch, prevEpoch[b.CPU])
		}
		prevEpoch[b.CPU] = b.Epoch
		published += b.Total()
		for _, d := range b.Drops {
			dropped += d
		}
		closing := lastIn[[2]uint64{uint64(b.CPU), b.Epoch}] == b.Seq || lastOf[b.CPU] == b.Seq
		if !closing && b.End-b.Start < window {
			t.Fatalf("cpu %d batch %d spans %d cycles, less than the %d window, and closes no epoch", b.CPU, b.Seq, b.End-b.Start, window)
		}
	}
	for _, c := range closes {
		for cpu, last := range c.LastSeq {
			if got := lastIn[[2]uint64{uint64(cpu), c.Epoch}]; got != last {
				t.Errorf("epoch %d cpu %d: cut reported last seq %d, batches show %d", c.Epoch, cpu, last, got)
			}
		}
	}
	if published+dropped != h.Generated() {
		t.Fatalf("conservation across %d cuts: %d published + %d dropped != %d generated", len(closes), published, dropped, h.Generated())
	}
	ds, _ := h.Node().Stats()
	t.Logf("%d cuts, %d batches, %d full drains, %d samples", len(closes), len(batches), ds.FullDrains, h.Generated())
}

// TestPublishWindowProfileMe is TestPublishWindowSameProfile for the
// ProfileMe section, which the window merges too: the same deterministic
// host per drain and with a window of ten drains publishes the same
// ProfileMe counts per (CPU, image, offset, PID), the same unknown and
// drop totals, and every tagged instruction once.
func TestPublishWindowProfileMe(t *testing.T) {
	skipUnderRace(t)
	names := []string{"ccdriver", "sort", "interp"}
	run := func(window uint64) (*Host, *node.MemPublisher) {
		m := workloadMachine(t, 2, true, names...)
		ncfg := DefaultConfig()
		ncfg.Node.Driver.Me = node.MeConfig{Entries: 8, BufferEntries: 2}
		ncfg.ProfileMe = hwsim.ProfileMeConfig{IntervalMin: 40, IntervalMax: 60, Copies: 4}
		ncfg.FlushEvery = 2_000_000
		ncfg.Node.PublishEvery = window
		return runWorkloads(t, m, ncfg, 30_000_000, names...)
	}
	sums := func(pub *node.MemPublisher) map[string]wire.MeCounts {
		out := map[string]wire.MeCounts{}
		for _, b := range pub.Batches() {
			for _, e := range b.Me {
				k := fmt.Sprintf("%d %v %d %d", b.CPU, e.Image, e.Offset, e.PID)
				c := out[k]
				c.Add(&e.Counts)
				out[k] = c
			}
		}
		return out
	}
	eh, ep := run(0)
	wh, wp := run(10 * 2_000_000)
	ee, eu, ed := meBooks(t, ep)
	we, wu, wd := meBooks(t, wp)
	if eh.MeTagged() != wh.MeTagged() || wh.MeTagged() == 0 {
		t.Fatalf("the runs differ: %d and %d tagged", eh.MeTagged(), wh.MeTagged())
	}
	var dropped uint64
	for _, n := range wd {
		dropped += n
	}
	if we+wu+dropped != wh.MeTagged() {
		t.Fatalf("windowed: %d tagged != %d in entries + %d unknown + drops %v", wh.MeTagged(), we, wu, wd)
	}
	if ee != we || eu != wu || !maps.Equal(ed, wd) || !maps.Equal(sums(ep), sums(wp)) {
		t.Fatalf("windowed ProfileMe differs: entries %d/%d unknown %d/%d drops %v/%v", we, ee, wu, eu, wd, ed)
	}
	if 2*len(wp.Batches()) >= len(ep.Batches()) {
		t.Fatalf("the window merged little: %d batches, %d per drain", len(wp.Batches()), len(ep.Batches()))
	}
}
