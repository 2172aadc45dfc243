package node

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"dcpi/wire"
)

// Config configures a node.
type Config struct {
	Host   string
	Epoch  uint64
	Driver DriverConfig
	// IPICycles is the modelled cost of each flush IPI on its CPU.
	IPICycles uint64
	// PerProcess lists the images whose profiles keep the PID (sec. 4.3's
	// per-process profiles): paths, base names, or PerProcessAll
	// (CheckPerProcess).
	PerProcess []string
	// PerThread keeps the images PerProcess names per thread instead:
	// their samples carry the thread's ID (TID) where they would carry
	// the PID, and the process records (wire.ProcessThreadVersion) name
	// each thread's process (perthread.go). It needs a host that tells
	// threads apart (Sample.ThreadIncarnation, EventThread: simhost's);
	// on any other, a process's samples are all its first thread's.
	PerThread bool
	// ProcessLabels are the user's process labels, by binary: a path or
	// a base name (as PerProcess names images) → labels, which every
	// process running that binary carries, and its children inherit
	// (processes.go; CheckProcessLabels). They reach the database in the
	// node's process records, if its Publisher is a ProcessPublisher.
	ProcessLabels map[string]map[string]string
	// FirstSeq is, per CPU, the sequence number of the first batch (0 or
	// missing: 1). A restarted agent continues its streams after what the
	// profile database has applied, so its batches are not taken for
	// redeliveries.
	FirstSeq []uint64
	// PublishEvery is the daemon's publish window in the host's cycles:
	// each CPU's drains are merged, per (image, offset, event, PID), and
	// published as one batch once a drain ends at least PublishEvery
	// after the CPU's last batch (DCPI's daemon merged its in-memory
	// profiles for minutes before writing them). An epoch cut and the
	// end of the run close every window. 0: a batch per drain.
	PublishEvery uint64
	// Values turns value sampling on (values.go; zero: off).
	Values ValuesConfig
	// KernelBase is where the host's kernel addresses begin: a map event
	// or sample PC from here up is the kernel's, in every process (0:
	// alpha.KernelBase; a Linux x86-64 host's is 0xffff800000000000).
	KernelBase uint64
	// Carried are, per CPU, drop counters a restarted agent reports for
	// its predecessor (samples its crash lost) in its first batch. They
	// are not this run's samples, so its Accounted leaves them out.
	Carried []map[string]uint64
}

// DefaultConfig is DCPI's driver, host alpha0, epoch 1.
func DefaultConfig() Config {
	return Config{Host: "alpha0", Epoch: 1, Driver: DefaultDriverConfig(), IPICycles: 1000}
}

// Node is one host's agent: DCPI's driver on every CPU of a Host, and the
// daemon that drains the drivers, books what they held (Ledger) and
// publishes batches. The host runs on its own goroutine (package simhost
// runs a simulated one); the daemon runs on another, started by Start,
// and reaches each CPU's driver only through IPIs, following the protocol
// in driver_flush.go.
type Node struct {
	cfg     Config
	host    Host
	drivers []*Driver
	maps    *ImageMaps
	images  ImageSource
	pub     Publisher
	// procs follows the processes for their records, procPub takes them
	// (both nil when pub is no ProcessPublisher).
	procs   *processBook
	procPub ProcessPublisher

	// steps runs the daemon in lockstep with the host (lockstep.go): it
	// carries buffer-full wake-ups, flush requests and IPI completions.
	steps   *lockstep
	cutReq  chan cutRequest // drain everything into the epoch, then start the next
	stop    chan struct{}   // closed by Finish: the daemon returns
	started bool
	// daemonDone is closed when the daemon goroutine returns, after
	// daemonErr is set; runDone when Finish has returned, its final
	// drain published.
	daemonDone, runDone chan struct{}
	daemonErr           error

	// timing measures the handler in host time on one sample in
	// timingStride, per CPU (touched only on the host's goroutine).
	timing  []handlerTiming
	clockNS float64 // host ns a pair of clock reads costs, subtracted

	buf  []Entry       // the daemon's drain buffer
	sbuf []StackSample // and its stack drain buffer
	mbuf []MeSample    // and its ProfileMe drain buffer

	// stacks hands the handler each process's unwind space; nil with
	// stacks off, which is all the handler then tests.
	stacks *stackSpaces

	// values is value sampling's interpreter and tables (nil: off).
	values *valuesDaemon

	// mu guards the books and the daemon's counters: the daemon writes
	// them, Follow and Stats read them from other goroutines.
	mu     sync.Mutex
	books  *Ledger
	drains DaemonStats // FullDrains, BufferDrains, HostNanos
}

// DaemonStats is what the daemon did.
type DaemonStats struct {
	Batches, Entries, Samples, Unknown uint64
	// Stacks and StackSamples count the stack entries published and the
	// samples they hold (stacks on).
	Stacks, StackSamples uint64
	// MeEntries, MeSamples and MeUnknown count the ProfileMe entries
	// published, the samples in them and in MeUnknown, and those alone
	// (ProfileMe on).
	MeEntries, MeSamples, MeUnknown uint64
	Images                          int
	// Processes counts the process records published; ProcessesRefused
	// those not published because the binary's path cannot be one
	// (wire.ProcessRecord.Validate).
	Processes, ProcessesRefused uint64
	FullDrains, BufferDrains    uint64
	// HostNanos is host time spent attributing and publishing.
	HostNanos uint64
}

// New attaches a node to host: it installs the drivers' interrupt handler
// and follows the host's loader events. images describes the images for
// their records (nil: records carry only the mapping).
func New(host Host, cfg Config, pub Publisher, images ImageSource) (*Node, error) {
	if err := cfg.Driver.Validate(); err != nil {
		return nil, err
	}
	cpus := host.CPUs()
	maps := NewImageMaps()
	if cfg.KernelBase != 0 {
		maps.kernelBase = cfg.KernelBase
	}
	books, err := NewLedger(cfg, cpus, maps)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, host: host, pub: pub, images: images, maps: maps, books: books,
		steps: newLockstep(), cutReq: make(chan cutRequest),
		stop: make(chan struct{}), daemonDone: make(chan struct{}), runDone: make(chan struct{})}
	for range cpus {
		d, err := NewDriver(cfg.Driver)
		if err != nil {
			return nil, err
		}
		n.drivers = append(n.drivers, d)
	}
	n.timing = make([]handlerTiming, cpus)
	for i := range n.timing {
		n.timing[i] = newHandlerTiming()
	}
	n.clockNS = clockReadCost()
	if n.values, err = newValuesDaemon(cfg.Values, cpus, pub); err != nil {
		return nil, err
	}
	sinks := loaderSinks{maps}
	if cfg.Driver.Stacks.Entries > 0 {
		src, _ := images.(UnwindSource)
		n.stacks = newStackSpaces(src)
		n.stacks.kernelBase = maps.kernelBase
		sinks = append(sinks, n.stacks)
	}
	if pp, ok := pub.(ProcessPublisher); ok {
		if err := CheckProcessLabels(cfg.ProcessLabels); err != nil {
			return nil, err
		}
		n.procs, n.procPub = newProcessBook(cfg.ProcessLabels), pp
		n.procs.perThread = cfg.PerThread
		sinks = append(sinks, n.procs)
	}
	if len(sinks) == 1 {
		host.Subscribe(maps)
	} else {
		host.Subscribe(sinks)
	}
	host.SetIPISync(n.steps.sync)
	var handler InterruptHandler = n
	if cfg.PerThread {
		handler = perThreadHandler{n}
	}
	if err := host.StartProfiling(handler); err != nil {
		return nil, err
	}
	if err := n.startProfileMe(); err != nil {
		return nil, err
	}
	return n, nil
}

// CounterInterrupt is the performance counter interrupt handler: the
// driver's hot path, keyed by the process incarnation. One sample in
// timingStride is timed in host nanoseconds, outside the driver, so the
// handler itself tests nothing.
func (n *Node) CounterInterrupt(s Sample) uint64 { return n.interrupt(s, s.Incarnation) }

// interrupt is the handler with the driver's key given: the process
// incarnation, or a per-thread node's thread key (perThreadHandler). s
// is a value, not a pointer: its address taken would move every
// interrupt's sample to the heap.
func (n *Node) interrupt(s Sample, key uint32) uint64 {
	d, t := n.drivers[s.CPU], &n.timing[s.CPU]
	var cost uint64
	var full bool
	switch t.tick++; t.tick % timingStride {
	case 0:
		cost, full = t.timed(d, key, s.PC, s.Event, n.clockNS)
	case timingStride / 2:
		t.timeClock(n.clockNS)
		fallthrough
	default:
		cost, full = d.Sample(key, s.PC, s.Event)
	}
	if n.stacks != nil {
		var c uint64
		var f bool
		if t.tick%timingStride == 0 {
			c, f = t.timedStack(d, s, n.stacks.space(s.Incarnation), n.clockNS)
		} else {
			c, f = d.SampleStack(s, n.stacks.space(s.Incarnation))
		}
		cost, full = cost+c, full || f
	}
	if n.values != nil {
		cost += n.values.samplers[s.CPU].interrupt(s)
	}
	if full {
		n.steps.noteWake()
	}
	return cost
}

// HostDropped counts k samples the host lost on cpu before the driver
// saw them, under reason (wire.DropRingLost); the CPU's next batch
// carries the count. Safe from any goroutine.
func (n *Node) HostDropped(cpu int, reason string, k uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.books.AddHostDrops(cpu, reason, k)
}

// Start starts the daemon on its own goroutine. The host must keep
// running (taking IPIs) until Finish has returned.
func (n *Node) Start() error {
	if n.started {
		return errors.New("node: started twice")
	}
	n.started = true
	go func() {
		n.daemonErr = n.daemon()
		n.steps.exit()
		close(n.daemonDone)
	}()
	return nil
}

// DaemonDone is closed when the daemon has returned: after Finish asked
// it to, or on an error (Finish returns it). A host's run loop watches it
// to stop at once when the daemon has died.
func (n *Node) DaemonDone() <-chan struct{} { return n.daemonDone }

// Finish stops the daemon and, with the host stopped, drains every
// driver and publishes the last batches. Until the daemon has returned
// it calls idle, which must let the host take IPIs (the daemon may be in
// the middle of a handshake). It returns the daemon's error, if it died,
// or the final drain's. Call it once, on the host's goroutine.
func (n *Node) Finish(idle func()) error {
	defer close(n.runDone)
	if n.started {
		n.steps.stop()
		close(n.stop)
		// The host runs only while the daemon waits for an IPI (it may be
		// in a handshake), so the simulated time this takes does not
		// depend on when the daemon goroutine gets to run.
		for n.steps.awaitHost() {
			idle()
		}
		<-n.daemonDone
		if n.daemonErr != nil {
			return n.daemonErr
		}
	}
	return n.finalDrain()
}

// Flush asks the daemon to drain every CPU's table and buffers now (the
// paper's daemon did so on command as well as periodically). It does not
// wait; a request made while one is pending is merged with it. It is safe
// from any goroutine.
func (n *Node) Flush() { n.steps.noteFlush() }

// daemon drains buffers when woken and everything when asked, until stop.
func (n *Node) daemon() error {
	for {
		select {
		case <-n.stop:
			return nil
		case r := <-n.steps.kick:
			n.steps.start()
			drain := n.drainBuffers
			if r == drainAllReq {
				drain = func() error { return n.drainAll(false) }
			}
			if err := drain(); err != nil {
				return err
			}
			n.steps.idle()
		case req := <-n.cutReq:
			n.steps.start()
			last, err := n.cut(req.next)
			req.reply <- cutReply{closed: last, err: err}
			if err != nil {
				return err
			}
			n.steps.idle()
		}
	}
}

// ipi runs fn on cpu's driver and waits for it to finish.
func (n *Node) ipi(cpu int, fn func(d *Driver)) error {
	ack := make(chan struct{})
	d := n.drivers[cpu]
	if err := n.host.SendIPI(cpu, func() uint64 {
		fn(d)
		n.steps.completed(ack)
		return n.cfg.IPICycles
	}); err != nil {
		return fmt.Errorf("node: IPI to cpu %d: %w", cpu, err)
	}
	n.steps.waitIPI()
	// Even once stop is closed the host keeps taking IPIs (Finish idles
	// it until the daemon returns), so the handshake always completes.
	<-ack
	return nil
}

// count adds to the daemon's own counters.
func (n *Node) count(f func(s *DaemonStats)) {
	n.mu.Lock()
	f(&n.drains)
	n.mu.Unlock()
}

// drainBuffers takes every full overflow buffer (buffer-full wake-up).
func (n *Node) drainBuffers() error {
	n.count(func(s *DaemonStats) { s.BufferDrains++ })
	for cpu := range n.drivers {
		if err := n.ipi(cpu, func(d *Driver) { d.HandOff(false) }); err != nil {
			return err
		}
		if err := n.takeBuffers(cpu, n.buf[:0], n.sbuf[:0], n.mbuf[:0], false); err != nil {
			return err
		}
	}
	return nil
}

// drainAll flushes every CPU's table and buffers by the full protocol;
// closeWindows publishes every CPU's window too, whatever its length.
func (n *Node) drainAll(closeWindows bool) error {
	n.count(func(s *DaemonStats) { s.FullDrains++ })
	for cpu, d := range n.drivers {
		if err := n.ipi(cpu, func(d *Driver) { d.BeginFlush() }); err != nil {
			return err
		}
		buf := d.DrainTable(n.buf[:0])
		sbuf := d.DrainStacks(n.sbuf[:0])
		mbuf := d.DrainMe(n.mbuf[:0])
		if err := n.ipi(cpu, func(d *Driver) { d.EndFlush(); d.HandOff(true) }); err != nil {
			return err
		}
		if err := n.takeBuffers(cpu, buf, sbuf, mbuf, closeWindows); err != nil {
			return err
		}
	}
	if err := n.drainValues(false); err != nil {
		return err
	}
	n.maps.FlushCompleted()
	return nil
}

// takeBuffers appends the buffers cpu has handed off to buf, gives them
// back by IPI, and books the lot (publishing it when cpu's window closes;
// closeWindow closes it now). The driver's counters and the time are read
// on the CPU, in the IPI that ends the drain: the daemon never reads the
// host directly.
func (n *Node) takeBuffers(cpu int, buf []Entry, sbuf []StackSample, mbuf []MeSample, closeWindow bool) error {
	d := n.drivers[cpu]
	for {
		var ok bool
		if buf, ok = d.TakeFull(buf); !ok {
			break
		}
	}
	for {
		var ok bool
		if sbuf, ok = d.TakeFullStacks(sbuf); !ok {
			break
		}
	}
	for {
		var ok bool
		if mbuf, ok = d.TakeFullMe(mbuf); !ok {
			break
		}
	}
	n.buf, n.sbuf, n.mbuf = buf, sbuf, mbuf
	var st DriverStats
	var now uint64
	if err := n.ipi(cpu, func(d *Driver) { d.Release(); st, now = d.Stats(), n.host.Now() }); err != nil {
		return err
	}
	return n.publish(cpu, buf, sbuf, mbuf, st, now, closeWindow)
}

// finalDrain empties every driver with the host stopped: nothing runs on
// the CPUs, so the CPU-side calls are made directly.
func (n *Node) finalDrain() error {
	for cpu, d := range n.drivers {
		d.BeginFlush()
		buf := d.DrainTable(nil)
		sbuf := d.DrainStacks(nil)
		mbuf := d.DrainMe(nil)
		d.EndFlush()
		d.HandOff(true)
		for {
			var ok bool
			if buf, ok = d.TakeFull(buf); !ok {
				break
			}
		}
		for {
			var ok bool
			if sbuf, ok = d.TakeFullStacks(sbuf); !ok {
				break
			}
		}
		for {
			var ok bool
			if mbuf, ok = d.TakeFullMe(mbuf); !ok {
				break
			}
		}
		d.Release()
		if err := n.publish(cpu, buf, sbuf, mbuf, d.Stats(), n.host.Now(), true); err != nil {
			return err
		}
	}
	if err := n.drainValues(true); err != nil {
		return err
	}
	n.maps.FlushCompleted()
	return nil
}

// publish books one CPU's drained entries and publishes the records of
// new images, then the batch, if the CPU's publish window closed (or
// closeWindow closes it).
func (n *Node) publish(cpu int, entries []Entry, stacks []StackSample, me []MeSample, st DriverStats, now uint64, closeWindow bool) error {
	start := time.Now()
	defer func() {
		n.count(func(s *DaemonStats) { s.HostNanos += uint64(time.Since(start)) })
	}()
	n.mu.Lock()
	b, newImages, err := n.books.DrainedAll(cpu, entries, stacks, me, st, now)
	if err == nil && b == nil && closeWindow {
		b, err = n.books.CloseWindow(cpu)
	}
	n.mu.Unlock()
	if err != nil {
		return err
	}
	if err := n.publishProcesses(); err != nil {
		return err
	}
	for _, m := range newImages {
		r, err := n.imageRecord(m)
		if err != nil {
			return err
		}
		if err := n.pub.PublishImage(r); err != nil {
			return err
		}
	}
	if b == nil {
		return nil
	}
	return n.pub.PublishBatch(b)
}

// imageRecord is m's record, with what the image source knows of its file.
func (n *Node) imageRecord(m Mapping) (*wire.ImageRecord, error) {
	key, err := wire.ParseImageKey(m.Image)
	if err != nil {
		return nil, err
	}
	r := &wire.ImageRecord{Version: wire.StackVersion, Key: key, Path: m.Path, Base: m.ImageBase()}
	if n.images == nil {
		return r, nil
	}
	f, ok, err := n.images.DescribeImage(m)
	if err != nil {
		return nil, fmt.Errorf("node: image %s: %w", m.Path, err)
	}
	if ok {
		r.Size, r.TextStart, r.TextEnd, r.Symbols = f.Size, f.TextStart, f.TextEnd, f.Symbols
		if f.LinkBase != nil {
			r.Base = *f.LinkBase
		}
	}
	return r, nil
}

// ImageFigures returns the daemon's per-image sample and entry counts,
// sorted by samples, most first; call it after Finish.
func (n *Node) ImageFigures() []ImageFigures {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.books.ImageFigures()
}

// DriverMemoryBytes is one CPU's driver memory: table and buffer pair.
func (n *Node) DriverMemoryBytes() int { return n.cfg.Driver.MemoryBytes() }

// DaemonMemoryBytes estimates the daemon's memory, as sec. 5.3 accounts
// it: the buffer it drains a table or buffer pair into, the image maps,
// and the largest batch it has built. Call it after Finish.
func (n *Node) DaemonMemoryBytes() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return cap(n.buf)*int(unsafe.Sizeof(Entry{})) + cap(n.sbuf)*int(unsafe.Sizeof(StackSample{})) +
		cap(n.mbuf)*int(unsafe.Sizeof(MeSample{})) + n.books.memoryBytes()
}

// HandlerTiming returns the handler's measured host cost, over every CPU;
// call it after Finish.
func (n *Node) HandlerTiming() HandlerTiming {
	return summarize(n.timing)
}

// Stats returns the daemon's counters and each driver's; call it after
// Finish for the drivers' (they are the CPUs' while the host runs).
func (n *Node) Stats() (DaemonStats, []DriverStats) {
	n.mu.Lock()
	ds := n.books.Stats()
	ds.FullDrains, ds.BufferDrains, ds.HostNanos = n.drains.FullDrains, n.drains.BufferDrains, n.drains.HostNanos
	ds.Processes, ds.ProcessesRefused = n.drains.Processes, n.drains.ProcessesRefused
	n.mu.Unlock()
	drivers := make([]DriverStats, len(n.drivers))
	for i, d := range n.drivers {
		drivers[i] = d.Stats()
	}
	return ds, drivers
}

// BatchFormat is the newest wire format version the node's batches take
// with c: wire.MeVersion with a ProfileMe table, wire.StackVersion with
// a stack table, else wire.FlatVersion (Ledger.DrainedAll). A cluster
// must read it before the node may publish (a rolling upgrade upgrades
// the cluster first).
func (c Config) BatchFormat() uint16 {
	switch {
	case c.Driver.Me.Entries > 0:
		return wire.MeVersion
	case c.Driver.Stacks.Entries > 0:
		return wire.StackVersion
	}
	return wire.FlatVersion
}
