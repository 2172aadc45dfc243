package node

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"dcpi/internal/testrand"
	"dcpi/node/unwind"
	"dcpi/wire"
)

// A synthetic process for the stack side: synthProcs procedures of 256
// bytes from synthBase, each with a 16-byte frame whose RA is at CFA-16,
// and an outermost one whose RA is undefined; a stack region the CPU side
// writes each sample's frames into before it samples.
const (
	synthBase  = 0x120000000
	synthProcs = 64
	synthStack = 0x11fff0000
	synthWords = 1024
)

type synthMem struct{ w [synthWords]uint64 }

func (m *synthMem) Read8(addr uint64) (uint64, bool) {
	i := (addr - synthStack) / 8
	if addr&7 != 0 || i >= synthWords {
		return 0, false
	}
	return m.w[i], true
}

func synthSpace(t testing.TB) *unwind.Space {
	var rows []unwind.Row
	for p := range synthProcs {
		rows = append(rows, unwind.Row{Start: uint64(p) * 256, CFAReg: unwind.RegSP, CFAOff: 16, RA: unwind.AtCFA, RAOff: -16})
	}
	rows = append(rows, unwind.Row{Start: synthProcs * 256, CFAReg: unwind.RegSP, RA: unwind.Undefined})
	tab, err := unwind.NewTable(rows, []unwind.Range{{Lo: 0, Hi: (synthProcs + 1) * 256}})
	if err != nil {
		t.Fatal(err)
	}
	return unwind.NewSpace([]unwind.Image{{Base: synthBase, Size: (synthProcs + 1) * 256, Table: tab}})
}

// synthChain is key id's chain, leaf first, ending in the outermost
// procedure: 1 to 6 frames.
func synthChain(id int) []uint64 {
	depth := 1 + id%6
	chain := make([]uint64, 0, depth+1)
	chain = append(chain, synthBase+uint64(id%synthProcs)*256+uint64(id/synthProcs%60)*4)
	for k := 1; k < depth; k++ {
		chain = append(chain, synthBase+uint64((id/7+k)%synthProcs)*256+0x40)
	}
	return append(chain, synthBase+synthProcs*256+0x20)
}

// synthSample lays chain out on the stack and returns its sample: frame
// i's SP is synthStack+16i, and its RA is stored at its SP.
func synthSample(m *synthMem, pid uint32, event uint8, chain []uint64) Sample {
	for i := 0; i+1 < len(chain); i++ {
		m.w[2*i] = chain[i+1]
	}
	return Sample{Incarnation: pid, PC: chain[0], Event: event, SP: synthStack, Mem: m}
}

func TestSampleStackCountsChains(t *testing.T) {
	cfg := DefaultDriverConfig()
	cfg.Stacks = StackConfig{Entries: 64, BufferEntries: 256, Depth: wire.MaxStackFrames}
	d, err := NewDriver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	space := synthSpace(t)
	var m synthMem
	want := map[string]int{}
	key := func(pid uint32, ev uint8, frames []uint64, trunc bool) string {
		return fmt.Sprint(pid, ev, frames, trunc)
	}
	var cost uint64
	for i := range 400 {
		id := i % 50
		chain := synthChain(id)
		s := synthSample(&m, 7, uint8(id%2), chain)
		c, _ := d.SampleStack(s, space)
		cost += c
		want[key(7, uint8(id%2), chain, false)]++
	}
	// A kernel sample in a process, and an idle one.
	d.SampleStack(Sample{Incarnation: 7, PC: 0xfffffc0000310000}, space)
	want[key(7, 0, []uint64{0xfffffc0000310000}, true)]++
	d.SampleStack(Sample{PC: 0xfffffc0000320000}, space)
	want[key(0, 0, []uint64{0xfffffc0000320000}, false)]++

	d.BeginFlush()
	got := d.DrainStacks(nil)
	d.EndFlush()
	d.HandOff(true)
	for ok := true; ok; {
		got, ok = d.TakeFullStacks(got)
	}
	d.Release()
	have := map[string]int{}
	for _, s := range got {
		have[key(s.PID, s.Event, s.Frames, s.Truncated)] += int(s.Count)
	}
	st := d.Stats()
	if st.StackDropped != 0 {
		t.Fatalf("dropped %d", st.StackDropped)
	}
	if len(have) != len(want) {
		t.Fatalf("%d distinct stacks, want %d", len(have), len(want))
	}
	for k, n := range want {
		if have[k] != n {
			t.Errorf("stack %s: %d, want %d", k, have[k], n)
		}
	}
	if st.StackSamples != 402 || d.StacksDelivered() != 402 || st.StackEvictions == 0 {
		t.Errorf("stats %+v, delivered %d (want 402 samples, some evictions from a 64-entry table)", st, d.StacksDelivered())
	}
	// The modelled cost grows with the walk: per frame and per read.
	c := DefaultCostModel()
	if min := uint64(400) * (c.StackWalk + c.StackFrame + c.StackHit); cost < min {
		t.Errorf("modelled stack cost %d, below %d", cost, min)
	}
	if st.CyclesStack < cost || st.StackReads == 0 {
		t.Errorf("CyclesStack %d < %d charged, or no reads counted (%d)", st.CyclesStack, cost, st.StackReads)
	}
}

func TestSampleStackOffCostsNothing(t *testing.T) {
	d, err := NewDriver(DefaultDriverConfig())
	if err != nil {
		t.Fatal(err)
	}
	var m synthMem
	if c, full := d.SampleStack(synthSample(&m, 1, 0, synthChain(3)), synthSpace(t)); c != 0 || full {
		t.Fatalf("stacks off: cost %d, full %v", c, full)
	}
	if st := d.Stats(); st.StackSamples != 0 {
		t.Fatalf("stacks off counted %d", st.StackSamples)
	}
}

func TestStackConfigValidate(t *testing.T) {
	for _, s := range []StackConfig{
		{Entries: 6, BufferEntries: 1, Depth: 1},
		{Entries: 8, BufferEntries: 0, Depth: 1},
		{Entries: 8, BufferEntries: 1, Depth: 0},
		{Entries: 8, BufferEntries: 1, Depth: wire.MaxStackFrames + 1},
		{Entries: -4, BufferEntries: 1, Depth: 1},
	} {
		cfg := DefaultDriverConfig()
		cfg.Stacks = s
		if err := cfg.Validate(); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
}

// TestStackProtocolConcurrent is TestFlushProtocolConcurrent for the
// stack side: a CPU goroutine samples stacks (and flat samples) with no
// lock while a daemon drains both through fake IPIs; every sample's stack
// is delivered under its own chain or counted in StackDropped. Run it
// with -race.
func TestStackProtocolConcurrent(t *testing.T) {
	seed := testrand.Seed(t)
	samples := 400_000
	if testing.Short() {
		samples = 100_000
	}
	cfg := DefaultDriverConfig()
	cfg.TableEntries, cfg.BufferEntries = 1024, 64
	cfg.Stacks = StackConfig{Entries: 512, BufferEntries: 128, Depth: wire.MaxStackFrames}
	d, err := NewDriver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	space := synthSpace(t)
	const nKeys = 3000
	chains := make([][]uint64, nKeys)
	for id := range chains {
		chains[id] = synthChain(id)
	}
	ipis := make(chan fakeIPI, 4)
	wake := make(chan struct{}, 1)
	cpuDone, stop := make(chan struct{}), make(chan struct{})
	generated := make([]uint64, nKeys)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m synthMem
		rng := rand.New(rand.NewPCG(seed, 2))
		run := func(r fakeIPI) { r.fn(); r.done <- struct{}{} }
		for i := range samples {
			if i%16 == 0 {
				select {
				case r := <-ipis:
					run(r)
				default:
				}
				if i%1024 == 0 {
					runtime.Gosched()
				}
			}
			id := rng.IntN(nKeys)
			if rng.IntN(4) != 0 {
				id %= 200
			}
			generated[id]++
			s := synthSample(&m, uint32(1+id%3), uint8(id%2), chains[id])
			_, f1 := d.Sample(s.Incarnation, s.PC, s.Event)
			_, f2 := d.SampleStack(s, space)
			if f1 || f2 {
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		}
		close(cpuDone)
		for {
			select {
			case r := <-ipis:
				run(r)
			case <-stop:
				return
			}
		}
	}()

	send := func(fn func()) {
		done := make(chan struct{})
		ipis <- fakeIPI{fn: fn, done: done}
		<-done
	}
	var delivered []StackSample
	var sbuf []StackSample
	var fbuf []Entry
	take := func() {
		for ok := true; ok; {
			sbuf, ok = d.TakeFullStacks(sbuf[:0])
			delivered = append(delivered, sbuf...)
		}
		for ok := true; ok; {
			fbuf, ok = d.TakeFull(fbuf[:0])
		}
	}
	full := func() {
		send(d.BeginFlush)
		delivered = d.DrainStacks(delivered)
		d.DrainTable(nil)
		send(func() { d.EndFlush(); d.HandOff(true) })
		take()
		send(func() { d.Release() })
	}
	rng := rand.New(rand.NewPCG(seed, 3))
	for finished := false; !finished; {
		if rng.IntN(6) == 0 {
			full()
			continue
		}
		select {
		case <-wake:
			send(func() { d.HandOff(false) })
			take()
			if rng.IntN(8) == 0 {
				time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
			}
			send(func() { d.Release() })
		case <-cpuDone:
			finished = true
		case <-time.After(100 * time.Microsecond):
		}
	}
	full()
	close(stop)
	wg.Wait()

	st := d.Stats()
	got := make([]uint64, nKeys)
	var n uint64
	for _, s := range delivered {
		id := -1
		for k := range chains { // find the key by its chain and PID
			if uint32(1+k%3) == s.PID && uint8(k%2) == s.Event && slices.Equal(chains[k], s.Frames) {
				id = k
				break
			}
		}
		if id < 0 || s.Truncated {
			t.Fatalf("delivered stack %+v is no key's", s)
		}
		got[id] += uint64(s.Count)
		n += uint64(s.Count)
	}
	t.Logf("%d samples: %d stack hits, %d misses, %d evictions, %d dropped; %d stack entries delivered",
		st.StackSamples, st.StackHits, st.StackMisses, st.StackEvictions, st.StackDropped, len(delivered))
	if st.StackSamples != uint64(samples) || d.PendingStacks() != 0 {
		t.Fatalf("%d stack samples of %d, %d pending", st.StackSamples, samples, d.PendingStacks())
	}
	if n+st.StackDropped != uint64(samples) || n != d.StacksDelivered() {
		t.Fatalf("conservation: %d delivered (driver says %d) + %d dropped != %d", n, d.StacksDelivered(), st.StackDropped, samples)
	}
	var lost uint64
	for id := range generated {
		if got[id] > generated[id] {
			t.Fatalf("key %d: %d delivered, %d generated", id, got[id], generated[id])
		}
		lost += generated[id] - got[id]
	}
	if lost != st.StackDropped {
		t.Fatalf("per key, %d missing; StackDropped %d", lost, st.StackDropped)
	}
}
