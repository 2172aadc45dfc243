package node

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/internal/testrand"
	"dcpi/workloads"
)

// fakeIPI is an IPI to the fake CPU goroutine: a function to run there,
// and a channel to say it ran. The channel send orders the daemon's work
// before the handler, as the mutex in hwsim.Machine.SendIPI does; the done
// channel orders the handler before the daemon's next step.
type fakeIPI struct {
	fn   func()
	done chan struct{}
}

// daemonSide plays the daemon for one driver: the two cycles of
// driver_flush.go, with the IPIs sent through send.
type daemonSide struct {
	d         *Driver
	send      func(fn func()) // sends an IPI and waits for it
	delivered []Entry
	buf       []Entry
}

func (ds *daemonSide) take() {
	for ok := true; ok; {
		ds.buf, ok = ds.d.TakeFull(ds.buf[:0])
		ds.delivered = append(ds.delivered, ds.buf...)
	}
}

// bufferCycle is the daemon's answer to a buffer-full wake-up. stall, if
// positive, is how long it sits on the copied buffers before releasing
// them (a daemon that falls behind makes the driver drop).
func (ds *daemonSide) bufferCycle(stall time.Duration) {
	ds.send(func() { ds.d.HandOff(false) })
	ds.take()
	time.Sleep(stall)
	ds.send(func() { ds.d.Release() })
}

// fullDrain is the periodic drain of the table and both buffers.
func (ds *daemonSide) fullDrain() {
	ds.send(ds.d.BeginFlush)
	ds.delivered = ds.d.DrainTable(ds.delivered)
	ds.send(func() { ds.d.EndFlush(); ds.d.HandOff(true) })
	ds.take()
	ds.send(func() { ds.d.Release() })
}

// TestFlushProtocolConcurrent runs a fake CPU goroutine that calls the
// handler millions of times (fewer with -short) and a daemon goroutine that
// flushes concurrently, through a fake IPI mechanism, and checks exact
// conservation, per key: every sample generated is delivered to the daemon
// under its own key, or counted in Dropped. Run it with -race: the handler
// uses no lock and no atomic, so the only happens-before edges are the IPI
// channel and the completion channels.
func TestFlushProtocolConcurrent(t *testing.T) {
	seed := testrand.Seed(t)
	samples := 2_000_000
	if testing.Short() {
		samples = 400_000
	}
	for i, c := range []struct {
		assoc   int
		policy  Policy
		entries int
		buffer  int
	}{
		{4, RoundRobin, 1024, 256},
		{6, SwapToFront, 768, 64},
		{8, RoundRobin, 512, 1},
	} {
		t.Run(fmt.Sprintf("%d-way-%v", c.assoc, c.policy), func(t *testing.T) {
			cfg := DefaultDriverConfig()
			cfg.Assoc, cfg.Policy, cfg.TableEntries, cfg.BufferEntries = c.assoc, c.policy, c.entries, c.buffer
			stressFlush(t, cfg, samples, seed+uint64(i))
		})
	}
}

func stressFlush(t *testing.T, cfg DriverConfig, samples int, seed uint64) {
	d, err := NewDriver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const nKeys = 6000
	const base = 0x120000000
	keyOf := func(id int) (uint32, uint64, uint8) {
		return uint32(1 + id%7), base + uint64(id/7)*4, uint8(id % 3 / 2)
	}
	idOf := func(e Entry) int { return int(e.PC-base)/4*7 + int(e.PID) - 1 }

	ipis := make(chan fakeIPI, 4) // queued like SendIPI's list
	wake := make(chan struct{}, 1)
	cpuDone := make(chan struct{})
	stop := make(chan struct{})
	generated := make([]uint64, nKeys)
	var wg sync.WaitGroup

	// The CPU: samples, and between them runs IPIs, never both at once.
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(seed, 2))
		run := func(r fakeIPI) {
			r.fn()
			r.done <- struct{}{}
		}
		for i := range samples {
			if i%16 == 0 {
				select {
				case r := <-ipis:
					run(r)
				default:
				}
				if i%1024 == 0 {
					runtime.Gosched() // give the daemon a turn on a loaded host
				}
			}
			// Skewed keys: most samples on a few hundred hot PCs.
			id := rng.IntN(nKeys)
			if rng.IntN(4) != 0 {
				id %= 300
			}
			generated[id]++
			if _, full := d.Sample(keyOf(id)); full {
				select {
				case wake <- struct{}{}:
				default: // a wake-up is pending already: merge
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

	// The daemon.
	ds := &daemonSide{d: d, send: func(fn func()) {
		done := make(chan struct{})
		ipis <- fakeIPI{fn: fn, done: done}
		<-done
	}}
	rng := rand.New(rand.NewPCG(seed, 3))
	drains, cycles := 0, 0
	for finished := false; !finished; {
		if rng.IntN(6) == 0 {
			ds.fullDrain()
			drains++
			continue
		}
		select {
		case <-wake:
			var stall time.Duration
			if rng.IntN(8) == 0 {
				stall = time.Duration(rng.IntN(200)) * time.Microsecond
			}
			ds.bufferCycle(stall)
			cycles++
		case <-cpuDone:
			finished = true
		case <-time.After(100 * time.Microsecond):
		}
	}
	ds.fullDrain() // the last: nothing is sampled any more
	close(stop)
	wg.Wait()

	st := d.Stats()
	tableEntries, tableSamples, bufferEntries, bufferSamples := d.Pending()
	var delivered uint64
	got := make([]uint64, nKeys)
	for _, e := range ds.delivered {
		id := idOf(e)
		if id < 0 || id >= nKeys {
			t.Fatalf("delivered entry %+v names no key generated", e)
		}
		if p, pc, ev := keyOf(id); p != e.PID || pc != e.PC || ev != e.Event {
			t.Fatalf("delivered entry %+v is not key %d", e, id)
		}
		got[id] += uint64(e.Count)
		delivered += uint64(e.Count)
	}
	t.Logf("%d samples: %d hits, %d evictions, %d direct writes, %d buffers completed, %d dropped; %d full drains, %d buffer cycles, %d entries delivered",
		st.Samples, st.Hits, st.Evictions, st.DirectWrites, st.BuffersCompleted, st.Dropped, drains, cycles, len(ds.delivered))
	if st.Samples != uint64(samples) {
		t.Errorf("driver counted %d samples, %d generated", st.Samples, samples)
	}
	if tableEntries != 0 || bufferEntries != 0 {
		t.Errorf("after the last drain: %d entries (%d samples) in the table, %d (%d) in buffers",
			tableEntries, tableSamples, bufferEntries, bufferSamples)
	}
	if sum := delivered + tableSamples + bufferSamples + st.Dropped; sum != uint64(samples) {
		t.Errorf("conservation: %d generated, %d delivered + %d in table + %d in buffers + %d dropped = %d",
			samples, delivered, tableSamples, bufferSamples, st.Dropped, sum)
	}
	var lost uint64
	for id := range generated {
		if got[id] > generated[id] {
			t.Fatalf("key %d: %d delivered, %d generated", id, got[id], generated[id])
		}
		lost += generated[id] - got[id]
	}
	if lost != st.Dropped {
		t.Errorf("per key, %d samples missing; Dropped = %d", lost, st.Dropped)
	}
	if d.Delivered() != delivered {
		t.Errorf("Delivered() = %d, daemon received %d", d.Delivered(), delivered)
	}
}

// TestDriverOnMachine runs the driver under hwsim: the machine's counter
// interrupts call Sample on the simulation goroutine, and a daemon
// goroutine flushes through Machine.SendIPI, whose mutex and the daemon's
// completion channel are the only synchronization. Every interrupt the
// machine delivered must be delivered to the daemon or dropped.
func TestDriverOnMachine(t *testing.T) {
	cfg := hwsim.DefaultConfig()
	cfg.CPUs, cfg.Timing = 2, false
	cfg.Files = map[string][]byte{}
	for _, name := range []string{"sort", "ccdriver"} {
		bin, err := workloads.Binary(name)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Files["/bin/"+name] = bin
	}
	m, err := hwsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dcfg := DefaultDriverConfig()
	dcfg.TableEntries, dcfg.BufferEntries = 256, 128 // small: evictions and full buffers
	h := &machineHandler{wake: make(chan struct{}, 1)}
	for range cfg.CPUs {
		d, err := NewDriver(dcfg)
		if err != nil {
			t.Fatal(err)
		}
		h.drivers = append(h.drivers, d)
	}
	prof := hwsim.ProfileConfig{Counters: []hwsim.CounterSpec{
		{Events: []alpha.Event{alpha.EvCycles}, PeriodMin: 500, PeriodMax: 700}}, InterruptCycles: 214}
	if err := m.StartProfiling(prof, h); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{{"/bin/sort", "6000"}, {"/bin/ccdriver", "2"}} {
		if _, err := m.Spawn(argv[0], argv, nil); err != nil {
			t.Fatal(err)
		}
	}

	// The daemon: a goroutine per host, one IPI at a time.
	stop := make(chan struct{})
	daemonDone := make(chan []*daemonSide)
	go func() {
		done := make(chan struct{}, 1)
		sides := make([]*daemonSide, len(h.drivers))
		for cpu, d := range h.drivers {
			sides[cpu] = &daemonSide{d: d, send: func(fn func()) {
				if err := m.SendIPI(cpu, func(int) uint64 { fn(); done <- struct{}{}; return 500 }); err != nil {
					panic(err)
				}
				<-done
			}}
		}
		for {
			select {
			case <-h.wake:
				for _, ds := range sides {
					ds.bufferCycle(0)
				}
			case <-time.After(2 * time.Millisecond):
				for _, ds := range sides {
					ds.fullDrain()
				}
			case <-stop:
				daemonDone <- sides
				return
			}
		}
	}()

	// Run the machine while the daemon works; stop the daemon between two
	// quanta (it may be waiting for an IPI, which the next quantum
	// delivers), then drain what is left with the simulation stopped.
	for m.RunFor(2_000_000) {
	}
	close(stop)
	var sides []*daemonSide
	for sides == nil {
		select {
		case sides = <-daemonDone:
		default:
			m.RunFor(cfg.Quantum) // deliver an IPI the daemon may wait on
			if m.Live() == 0 {
				// No process left to run a quantum: spawn a tiny one.
				if _, err := m.Spawn("/bin/sort", []string{"/bin/sort", "10"}, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	m.StopProfiling()
	var interrupts uint64
	for _, c := range m.CPUStats() {
		interrupts += c.Interrupts[alpha.EvCycles]
	}
	var delivered, dropped, direct uint64
	for _, ds := range sides {
		// With the machine stopped, the daemon may call the CPU side
		// itself: nothing else runs.
		ds.send = func(fn func()) { fn() }
		ds.fullDrain()
		for _, e := range ds.delivered {
			delivered += uint64(e.Count)
		}
		dropped += ds.d.Stats().Dropped
		direct += ds.d.Stats().DirectWrites
	}
	t.Logf("%d interrupts: %d delivered, %d dropped (%d direct writes during flushes)", interrupts, delivered, dropped, direct)
	if interrupts < 10_000 {
		t.Fatalf("only %d interrupts", interrupts)
	}
	if delivered+dropped != interrupts {
		t.Errorf("%d interrupts, %d delivered + %d dropped", interrupts, delivered, dropped)
	}
}

// machineHandler dispatches a machine's counter interrupts to per-CPU
// drivers, as node's daemon does.
type machineHandler struct {
	drivers []*Driver
	wake    chan struct{}
}

func (h *machineHandler) CounterInterrupt(s hwsim.Sample) uint64 {
	cost, full := h.drivers[s.CPU].Sample(s.Incarnation, s.PC, uint8(s.Event))
	if full {
		select {
		case h.wake <- struct{}{}:
		default:
		}
	}
	return cost
}
