package node

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"dcpi/hwsim"
	"dcpi/hwsim/elfimage"
	"dcpi/hwsim/vmunix"
	"dcpi/wire"
)

// Publisher receives what a node produces: each image's record once, and
// sample batches. The cluster transport and the local Pebble sink are the
// two implementations.
type Publisher interface {
	PublishImage(r *wire.ImageRecord) error
	PublishBatch(b *wire.Batch) error
}

// Config configures a node.
type Config struct {
	Host    string
	Epoch   uint64
	Driver  DriverConfig
	Profile hwsim.ProfileConfig
	// FlushEvery is the simulated time, in cycles, between full drains of
	// every CPU's table (the paper's 5- and 10-minute intervals are
	// real-time defaults; simulations want a fraction of a second).
	FlushEvery uint64
	// IPICycles is the modelled cost of each flush IPI on its CPU.
	IPICycles uint64
	// PerProcess lists image paths whose profiles keep the PID.
	PerProcess []string
	// Images holds the programs the machine runs, by path, for their
	// symbol tables in the image records.
	Images map[string][]byte
	// FirstSeq is, per CPU, the sequence number of the first batch (0 or
	// missing: 1). A restarted agent continues its streams after what the
	// profile database has applied, so its batches are not taken for
	// redeliveries.
	FirstSeq []uint64
	// Carried are, per CPU, drop counters a restarted agent reports for
	// its predecessor (samples its crash lost) in its first batch. They
	// are not this run's samples, so its Accounted leaves them out.
	Carried []map[string]uint64
}

// DefaultConfig drains every 0.1 simulated second at 333 MHz.
func DefaultConfig() Config {
	return Config{Host: "alpha0", Epoch: 1, Driver: DefaultDriverConfig(), Profile: hwsim.DefaultProfile(),
		FlushEvery: 33_300_000, IPICycles: 1000}
}

// Node is one host's agent: DCPI's driver on every CPU of a simulated
// machine, and the daemon that drains the drivers, attributes samples to
// images and publishes batches. The machine runs on the caller's goroutine
// (Run); the daemon runs on its own and reaches each CPU's driver only
// through IPIs, following the protocol in driver_flush.go.
type Node struct {
	cfg     Config
	m       *hwsim.Machine
	drivers []*Driver
	maps    *ImageMaps
	att     *attributor
	pub     Publisher
	kernel  *elfimage.Image
	keep    *keepAlive // programs restarted when they exit (KeepRunning)
	stopReq atomic.Bool
	simNow  atomic.Uint64 // machine time, for progress displays on other goroutines

	wake     chan struct{}   // a buffer filled: drain buffers
	flushReq chan struct{}   // drain everything: periodic, or on command
	cutReq   chan cutRequest // drain everything into the epoch, then start the next
	// daemonDone is closed when the daemon goroutine returns; runDone
	// when Run has returned, its final drain published.
	daemonDone, runDone chan struct{}

	// timing measures the handler in host time on one sample in
	// timingStride, per CPU (touched only on the simulation goroutine).
	timing  []handlerTiming
	clockNS float64 // host ns a pair of clock reads costs, subtracted

	// Daemon-side state.
	epoch      uint64   // the epoch batches are published into
	seq        []uint64 // next batch sequence number per CPU
	epochFirst []uint64 // first seq published into the current epoch per CPU (0: none yet)
	accounted  []uint64 // samples and drops published per CPU, this run
	lastCycle  []uint64
	dropsSeen  []uint64
	published  map[string]bool
	buf        []Entry
	stats      DaemonStats
	statsMu    sync.Mutex
	publishErr error
}

// DaemonStats is what the daemon did.
type DaemonStats struct {
	Batches, Entries, Samples, Unknown uint64
	Images                             int
	FullDrains, BufferDrains           uint64
	// HostNanos is host time spent attributing and publishing.
	HostNanos uint64
}

// New attaches a node to m: it programs the counters, installs the
// drivers' interrupt handler, and follows m's loader events.
func New(m *hwsim.Machine, cfg Config, pub Publisher) (*Node, error) {
	if err := cfg.Driver.Validate(); err != nil {
		return nil, err
	}
	kim, err := elfimage.ParseKernel(vmunix.Image(), vmunix.Path)
	if err != nil {
		return nil, err
	}
	lo, hi := ^uint64(0), uint64(0)
	for _, s := range kim.Segments {
		lo, hi = min(lo, s.Vaddr), max(hi, s.Vaddr+s.Memsz)
	}
	n := &Node{cfg: cfg, m: m, pub: pub, kernel: kim, wake: make(chan struct{}, 1),
		flushReq: make(chan struct{}, 1), cutReq: make(chan cutRequest), daemonDone: make(chan struct{}), runDone: make(chan struct{}), published: map[string]bool{},
		epoch: cfg.Epoch}
	n.cfg.Carried = slices.Clone(cfg.Carried) // emptied as reported
	n.maps = NewImageMaps(Mapping{Base: lo, Size: hi - lo, Image: kim.ID.String(), Path: vmunix.Path})
	n.att = newAttributor(n.maps, cfg.PerProcess)
	cpus := m.Config().CPUs
	for range cpus {
		d, err := NewDriver(cfg.Driver)
		if err != nil {
			return nil, err
		}
		n.drivers = append(n.drivers, d)
	}
	n.seq, n.lastCycle, n.dropsSeen = make([]uint64, cpus), make([]uint64, cpus), make([]uint64, cpus)
	n.epochFirst = make([]uint64, cpus)
	n.accounted = make([]uint64, cpus)
	for i := range n.seq {
		n.seq[i] = 1
		if i < len(cfg.FirstSeq) && cfg.FirstSeq[i] > 0 {
			n.seq[i] = cfg.FirstSeq[i]
		}
	}
	n.timing = make([]handlerTiming, cpus)
	for i := range n.timing {
		n.timing[i] = newHandlerTiming()
	}
	n.clockNS = clockReadCost()
	m.Subscribe(n.maps)
	if err := m.StartProfiling(cfg.Profile, n); err != nil {
		return nil, err
	}
	return n, nil
}

// CounterInterrupt is the performance counter interrupt handler: the
// driver's hot path, keyed by the process incarnation. One sample in
// timingStride is timed in host nanoseconds, outside the driver, so the
// handler itself tests nothing.
func (n *Node) CounterInterrupt(s hwsim.Sample) uint64 {
	d, t := n.drivers[s.CPU], &n.timing[s.CPU]
	var cost uint64
	var full bool
	switch t.tick++; t.tick % timingStride {
	case 0:
		cost, full = t.timed(d, s, n.clockNS)
	case timingStride / 2:
		t.timeClock(n.clockNS)
		fallthrough
	default:
		cost, full = d.Sample(s.Incarnation, s.PC, uint8(s.Event))
	}
	if full {
		select {
		case n.wake <- struct{}{}:
		default:
		}
	}
	return cost
}

// Run runs the machine until every process has exited or limit cycles of
// simulated time have passed (0: no limit), with the daemon draining
// concurrently, then drains everything and publishes the last batches.
func (n *Node) Run(limit uint64) error {
	defer close(n.runDone)
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		err := n.daemon(n.flushReq, stop)
		close(n.daemonDone)
		done <- err
	}()

	var runErr error
	const chunk = 1_000_000 // cycles between looks at the clock
	next := n.m.Now() + n.cfg.FlushEvery
	for {
		if limit != 0 && n.m.Now() >= limit {
			break
		}
		if !n.m.RunFor(chunk) && n.keep == nil {
			break
		}
		n.simNow.Store(n.m.Now())
		if n.stopReq.Load() {
			break
		}
		if n.keep != nil {
			if runErr = n.keep.restart(n.m); runErr != nil {
				break
			}
		}
		if n.m.Now() >= next {
			next += n.cfg.FlushEvery
			n.Flush()
		}
	}
	// Keep the CPUs taking IPIs until the daemon has finished whatever
	// handshake it is in.
	close(stop)
	for {
		select {
		case err := <-done:
			if err != nil {
				return err
			}
			if err := n.finalDrain(); err != nil {
				return err
			}
			return runErr
		default:
			n.m.Idle(n.m.Config().Quantum)
		}
	}
}

// SimCycles is how far the simulated machine has run, in cycles, as of
// Run's last look at the clock; safe from any goroutine.
func (n *Node) SimCycles() uint64 { return n.simNow.Load() }

// Stop makes Run return soon, after its final drain; it is safe from any
// goroutine.
func (n *Node) Stop() { n.stopReq.Store(true) }

// Flush asks the daemon to drain every CPU's table and buffers now (the
// paper's daemon did so on command as well as periodically). It does not
// wait; a request made while one is pending is merged with it. It is safe
// from any goroutine while Run runs.
func (n *Node) Flush() {
	select {
	case n.flushReq <- struct{}{}:
	default:
	}
}

// daemon drains buffers when woken and everything when asked, until stop.
func (n *Node) daemon(flushReq, stop <-chan struct{}) error {
	for {
		select {
		case <-stop:
			return nil
		case <-n.wake:
			if err := n.drainBuffers(); err != nil {
				return err
			}
		case <-flushReq:
			if err := n.drainAll(); err != nil {
				return err
			}
		case req := <-n.cutReq:
			last, err := n.cut(req.next)
			req.reply <- cutReply{closed: last, err: err}
			if err != nil {
				return err
			}
		}
	}
}

// ipi runs fn on cpu's driver and waits for it to finish.
func (n *Node) ipi(cpu int, fn func(d *Driver)) {
	ack := make(chan struct{})
	d := n.drivers[cpu]
	n.m.SendIPI(cpu, func(int) uint64 {
		fn(d)
		close(ack)
		return n.cfg.IPICycles
	})
	// Even once stop is closed the machine keeps taking IPIs (Run idles
	// it until the daemon returns), so the handshake always completes.
	<-ack
}

// drainBuffers takes every full overflow buffer (buffer-full wake-up).
func (n *Node) drainBuffers() error {
	n.stats.BufferDrains++
	for cpu, d := range n.drivers {
		n.ipi(cpu, func(d *Driver) { d.HandOff(false) })
		if err := n.takeBuffers(cpu, d, n.buf[:0]); err != nil {
			return err
		}
	}
	return nil
}

// drainAll flushes every CPU's table and buffers by the full protocol.
func (n *Node) drainAll() error {
	n.stats.FullDrains++
	for cpu, d := range n.drivers {
		n.ipi(cpu, func(d *Driver) { d.BeginFlush() })
		buf := d.DrainTable(n.buf[:0])
		n.ipi(cpu, func(d *Driver) { d.EndFlush(); d.HandOff(true) })
		if err := n.takeBuffers(cpu, d, buf); err != nil {
			return err
		}
	}
	n.maps.FlushCompleted()
	return nil
}

// takeBuffers appends the buffers cpu has handed off to buf, gives them
// back by IPI, and publishes the lot.
func (n *Node) takeBuffers(cpu int, d *Driver, buf []Entry) error {
	for {
		var ok bool
		if buf, ok = d.TakeFull(buf); !ok {
			break
		}
	}
	n.buf = buf
	var st DriverStats
	var now uint64
	n.ipi(cpu, func(d *Driver) { d.Release(); st, now = d.Stats(), n.m.Now() })
	return n.publish(cpu, buf, st, now)
}

// finalDrain empties every driver with the machine stopped: nothing runs
// on the CPUs, so the CPU-side calls are made directly.
func (n *Node) finalDrain() error {
	for cpu, d := range n.drivers {
		d.BeginFlush()
		buf := d.DrainTable(nil)
		d.EndFlush()
		d.HandOff(true)
		for {
			var ok bool
			if buf, ok = d.TakeFull(buf); !ok {
				break
			}
		}
		d.Release()
		if err := n.publish(cpu, buf, d.Stats(), n.m.Now()); err != nil {
			return err
		}
	}
	n.maps.FlushCompleted()
	return nil
}

// publish attributes one CPU's drained entries and publishes them as a
// batch, with image records for images not yet published.
//
// st is the driver's counters and now the machine time, both read on the
// CPU (in the IPI that ended the drain): the daemon never reads the
// machine directly.
func (n *Node) publish(cpu int, entries []Entry, st DriverStats, now uint64) error {
	dropped := st.Dropped
	start := time.Now()
	defer func() {
		n.statsMu.Lock()
		n.stats.HostNanos += uint64(time.Since(start))
		n.statsMu.Unlock()
	}()
	newImages, err := n.att.add(entries)
	if err != nil {
		return err
	}
	for _, m := range newImages {
		if err := n.publishImage(m); err != nil {
			return err
		}
	}
	var drops map[string]uint64
	if d := dropped - n.dropsSeen[cpu]; d > 0 {
		drops = map[string]uint64{"driver.overflow_full": d}
	}
	n.dropsSeen[cpu] = dropped
	var ownDrops uint64
	for _, d := range drops {
		ownDrops += d
	}
	if cpu < len(n.cfg.Carried) && len(n.cfg.Carried[cpu]) > 0 {
		if drops == nil {
			drops = map[string]uint64{}
		}
		for name, d := range n.cfg.Carried[cpu] {
			drops[name] += d
		}
		n.cfg.Carried[cpu] = nil
	}
	if len(entries) == 0 && drops == nil {
		return nil
	}
	end := now
	b := n.att.batch(n.cfg.Host, n.epoch, uint16(cpu), n.seq[cpu], n.lastCycle[cpu], end, drops)
	// The accounting a successor needs if this agent dies: every
	// interrupt delivered so far on this CPU is in a batch, dropped, or
	// still held by the driver.
	n.accounted[cpu] += b.Total() + ownDrops
	b.Delivered, b.Accounted = st.Samples, n.accounted[cpu]
	if n.epochFirst[cpu] == 0 {
		n.epochFirst[cpu] = n.seq[cpu]
	}
	n.seq[cpu]++
	n.lastCycle[cpu] = end
	n.statsMu.Lock()
	n.stats.Batches++
	n.stats.Entries += uint64(len(b.Entries) + len(b.Unknown))
	for _, u := range b.Unknown {
		n.stats.Unknown += u.Count
	}
	n.stats.Samples += b.Total()
	n.statsMu.Unlock()
	return n.pub.PublishBatch(b)
}

func (n *Node) publishImage(m Mapping) error {
	if n.published[m.Image] {
		return nil
	}
	n.published[m.Image] = true
	key, err := wire.ParseImageKey(m.Image)
	if err != nil {
		return err
	}
	r := &wire.ImageRecord{Version: wire.Version, Key: key, Path: m.Path, Base: m.Base}
	var im *elfimage.Image
	if m.Path == vmunix.Path {
		im, r.Size = n.kernel, uint64(len(vmunix.Image()))
	} else if data, ok := n.cfg.Images[m.Path]; ok {
		if im, err = elfimage.Parse(data, m.Path); err != nil {
			return fmt.Errorf("node: image %s: %w", m.Path, err)
		}
		r.Size = uint64(len(data))
	}
	if im != nil {
		r.TextStart, r.TextEnd = im.TextStart, im.TextEnd
		for _, s := range im.Symbols {
			r.Symbols = append(r.Symbols, wire.Symbol{Name: s.Name, Addr: s.Addr, Size: s.Size})
		}
	}
	n.statsMu.Lock()
	n.stats.Images++
	n.statsMu.Unlock()
	return n.pub.PublishImage(r)
}

// ImageFigures returns the daemon's per-image sample and entry counts,
// sorted by samples, most first; call it after Run.
func (n *Node) ImageFigures() []ImageFigures {
	out := make([]ImageFigures, 0, len(n.att.byImage))
	for _, f := range n.att.byImage {
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b ImageFigures) int {
		if c := cmp.Compare(b.Samples, a.Samples); c != 0 {
			return c
		}
		return cmp.Compare(a.Path, b.Path)
	})
	return out
}

// DriverMemoryBytes is one CPU's driver memory: table and buffer pair.
func (n *Node) DriverMemoryBytes() int { return n.cfg.Driver.MemoryBytes() }

// DaemonMemoryBytes estimates the daemon's memory, as sec. 5.3 accounts
// it: the buffer it drains a table or buffer pair into, the image maps,
// and the largest batch it has built. Call it after Run.
func (n *Node) DaemonMemoryBytes() int {
	perCount := int(unsafe.Sizeof(entryKey{})) + 8
	return cap(n.buf)*int(unsafe.Sizeof(Entry{})) + n.maps.MemoryBytes() + n.att.peak*perCount
}

// HandlerTiming returns the handler's measured host cost, over every CPU;
// call it after Run.
func (n *Node) HandlerTiming() HandlerTiming {
	return summarize(n.timing)
}

// Stats returns the daemon's counters and each driver's; call it after Run.
func (n *Node) Stats() (DaemonStats, []DriverStats) {
	n.statsMu.Lock()
	defer n.statsMu.Unlock()
	ds := make([]DriverStats, len(n.drivers))
	for i, d := range n.drivers {
		ds[i] = d.Stats()
	}
	return n.stats, ds
}
