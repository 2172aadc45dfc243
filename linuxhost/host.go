package linuxhost

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"dcpi/node"
	"dcpi/node/unwind"
	"dcpi/wire"
)

// KernelBase is where x86-64 and arm64 kernel addresses begin: the
// node's Config.KernelBase on a Linux host.
const KernelBase = 0xffff800000000000

// Config configures a Linux host.
type Config struct {
	// Event is what each CPU's counter counts (Events; "": cpu-clock).
	Event string
	// Freq is samples per second per CPU (0: 999, perf's -F 999 rate...
	// DCPI's was about 5,200/s of cycles at 333 MHz).
	Freq uint64
	// PID is the process to profile with its children (inherit); -1:
	// every process (system-wide).
	PID int
	// EnableOnExec starts counting at PID's next exec (dcpi profile
	// holds its command before exec).
	EnableOnExec bool
	// RingPages is each CPU's ring buffer in pages, a power of two (0:
	// 128, 512 KiB).
	RingPages int
	// Poll is how often the rings are read (0: 10 ms).
	Poll time.Duration
	// UserStack, when not 0, is how many bytes of the user stack the
	// kernel copies with each sample, with the user registers, for the
	// reader's .eh_frame walk (unwind.go; DefaultUserStack is perf's
	// 8 KiB): a multiple of 8, at most 60 KiB, on amd64 and arm64; no
	// more than a quarter of the ring, so that it holds a few samples
	// (a smaller ring gets shorter copies). 0: the kernel's
	// frame-pointer chain, and samples of the plain size.
	UserStack int
}

func (c *Config) defaults() {
	if c.Event == "" {
		c.Event = "cpu-clock"
	}
	if c.Freq == 0 {
		c.Freq = 999
	}
	if c.RingPages == 0 {
		c.RingPages = 128
	}
	if c.Poll == 0 {
		c.Poll = 10 * time.Millisecond
	}
}

// Host is a Linux machine as a node.Host. Its Run goroutine is the
// host's goroutine: it reads every CPU's ring, hands the samples to the
// node's handler and the loader records to its sinks in time order, and
// runs the daemon's IPIs between reads, so an IPI is atomic with respect
// to its CPU's samples (sec. 4.2.3's flush protocol holds as on a CPU).
type Host struct {
	cfg   Config
	ev    Event
	rings []*ring // by CPU
	cpus  []int   // the kernel's CPU number of each ring

	images *Images
	kernel *Kernel

	// With UserStack: the samples' layout, the walk's instruction set,
	// the images' tables by identity (nil: none), and the copied
	// stacks of records not yet applied.
	layout Layout
	arch   userArch
	tables map[string]*unwind.Table
	stacks []byte

	handler node.InterruptHandler
	sinks   []node.LoaderSink
	sync    func()

	ipiMu sync.Mutex
	ipis  []func() uint64

	// Reader state (Run's goroutine).
	pending []Record // read but newer than the last cutoff
	procs   map[uint32]*process
	nextInc uint32
	// lossGen counts the KindLost records applied: a process last
	// checked against /proc before the latest may have lost the records
	// of an mmap or exec with them.
	lossGen uint64
	dropped func(cpu int, reason string, k uint64)

	mu          sync.Mutex
	delivered   uint64 // samples handed to the node
	sampleBytes uint64 // their records' bytes
	lost        uint64 // samples the kernel lost (DropRingLost)
	bad         uint64 // records that did not decode
	byCPU       map[uint32]int
	walks       WalkCounts
	tableErrs   uint64 // images whose .eh_frame did not compile
}

var _ node.Host = (*Host)(nil)

// New opens cfg's event on every online CPU, disabled (or enabled at
// PID's exec), with a ring each.
func New(cfg Config) (_ *Host, err error) {
	cfg.defaults()
	ev, err := LookupEvent(cfg.Event)
	if err != nil {
		return nil, err
	}
	if cfg.RingPages&(cfg.RingPages-1) != 0 {
		return nil, fmt.Errorf("linuxhost: ring of %d pages: want a power of two", cfg.RingPages)
	}
	h := &Host{cfg: cfg, ev: ev, procs: map[uint32]*process{}, byCPU: map[uint32]int{}}
	if cfg.UserStack != 0 {
		arch, ok := nativeArch()
		switch {
		case !ok:
			return nil, fmt.Errorf("linuxhost: call stacks from stack copies need amd64 or arm64, not %s", runtime.GOARCH)
		case cfg.UserStack < 0 || cfg.UserStack%8 != 0 || cfg.UserStack > maxUserStack:
			return nil, fmt.Errorf("linuxhost: user stack copy of %d bytes: want a multiple of 8 up to %d", cfg.UserStack, maxUserStack)
		}
		// A ring must hold a few samples: a small one gets shorter
		// copies (the walks they cut short are counted truncated).
		fit := (cfg.RingPages*unix.Getpagesize()/4 - sampleOverhead) &^ 7
		h.cfg.UserStack = max(min(cfg.UserStack, fit), 8)
		h.arch, h.layout, h.tables = arch, Layout{Regs: arch.mask}, map[string]*unwind.Table{}
	}
	defer func() {
		if err != nil {
			h.Close()
		}
	}()
	for cpu := range runtime.NumCPU() {
		fd, err := h.open(cpu, true)
		if errors.Is(err, unix.EINVAL) {
			fd, err = h.open(cpu, false) // a kernel before 5.12: no build IDs in MMAP2
		}
		if err != nil {
			return nil, openError(ev, cfg.PID < 0, err)
		}
		r, err := mapRing(fd, cfg.RingPages)
		if err != nil {
			unix.Close(fd)
			return nil, err
		}
		h.byCPU[uint32(cpu)] = len(h.rings)
		h.rings, h.cpus = append(h.rings, r), append(h.cpus, cpu)
	}
	// After the events: a missing permission is the error to report.
	if h.kernel, err = LoadKernel(); err != nil {
		return nil, err
	}
	h.images = NewImages(h.kernel)
	return h, nil
}

// attrBuildID is perf_event_attr's build_id bit (kernel 5.12).
const attrBuildID = 1 << 34

func (h *Host) open(cpu int, buildID bool) (int, error) {
	attr := unix.PerfEventAttr{
		Type: h.ev.Type, Config: h.ev.Config, Size: uint32(unsafeSizeofAttr),
		Sample: h.cfg.Freq, Sample_type: h.layout.sampleType(),
		Bits: unix.PerfBitDisabled | unix.PerfBitFreq | unix.PerfBitSampleIDAll | unix.PerfBitMmap | unix.PerfBitMmap2 |
			unix.PerfBitComm | unix.PerfBitCommExec | unix.PerfBitTask | unix.PerfBitUseClockID,
		Clockid:          unix.CLOCK_MONOTONIC,
		Sample_max_stack: 127,
	}
	if buildID {
		attr.Bits |= attrBuildID
	}
	if h.layout.Regs != 0 {
		// The walk gives the user frames: the kernel's chain keeps only
		// its own (perf record --call-graph dwarf does the same).
		attr.Sample_regs_user, attr.Sample_stack_user = h.layout.Regs, uint32(h.cfg.UserStack)
		attr.Bits |= unix.PerfBitExcludeCallchainUser
	}
	if h.cfg.PID >= 0 {
		attr.Bits |= unix.PerfBitInherit
		if h.cfg.EnableOnExec {
			attr.Bits |= unix.PerfBitEnableOnExec
		}
	}
	return unix.PerfEventOpen(&attr, h.cfg.PID, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
}

// CPUs is the number of rings: every CPU online when New ran.
func (h *Host) CPUs() int { return len(h.rings) }

// Images describes the host's images for the node's image records.
func (h *Host) Images() *Images { return h.images }

// Kernel is the running kernel as the host describes it.
func (h *Host) Kernel() *Kernel { return h.kernel }

// Machine is the machine kind a profile records ("linux-amd64").
func Machine() string { return "linux-" + runtime.GOARCH }

// StartProfiling makes handler the samples' destination; Run enables
// the events.
func (h *Host) StartProfiling(handler node.InterruptHandler) error {
	h.handler = handler
	return nil
}

// SendIPI queues fn for cpu; Run's goroutine runs it between reads.
func (h *Host) SendIPI(cpu int, fn func() uint64) error {
	if cpu < 0 || cpu >= len(h.rings) {
		return fmt.Errorf("linuxhost: IPI to cpu %d of %d", cpu, len(h.rings))
	}
	h.ipiMu.Lock()
	h.ipis = append(h.ipis, fn)
	h.ipiMu.Unlock()
	return nil
}

// Now is CLOCK_MONOTONIC in ns: the host's cycles are nanoseconds.
func (h *Host) Now() uint64 { return monotonic() }

func monotonic() uint64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// SetIPISync: Run calls sync before it runs the queued IPIs.
func (h *Host) SetIPISync(sync func()) { h.sync = sync }

// Subscribe makes s receive loader events: the kernel's mapping, then
// the mappings of PID (or of every process, system-wide) from /proc,
// then each one as the rings report it.
func (h *Host) Subscribe(s node.LoaderSink) {
	h.sinks = append(h.sinks, s)
	s.ProcessEvent(node.Event{Kind: node.EventMap, ImageID: h.kernel.ID, Path: KernelPath, Base: h.kernel.Base, Size: h.kernel.Size})
	if len(h.sinks) > 1 {
		return // the processes' incarnations exist: replay their maps to s
	}
	if h.cfg.PID >= 0 {
		h.adopt(uint32(h.cfg.PID))
		return
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if pid, err := strconv.ParseUint(e.Name(), 10, 32); err == nil {
			h.adopt(uint32(pid))
		}
	}
}

func (h *Host) emit(e node.Event) {
	for _, s := range h.sinks {
		s.ProcessEvent(e)
	}
}

// process is what the host has told its sinks about one live process.
type process struct {
	inc uint32
	// exe is /proc/PID/exe when last read ("" since an exec the rings
	// reported: unknown until read again).
	exe  string
	maps map[ProcMapping]string // reported mappings of this incarnation: their images' identities ("": unknown)
	// walk is maps for the stack walk, built at its first need after
	// they changed (nil).
	walk *procImages
	// checked is the host's lossGen when the mappings were last known
	// whole (read from /proc, or followed from records since).
	checked uint64
}

func procFile(pid uint32, name string) string {
	return "/proc/" + strconv.FormatUint(uint64(pid), 10) + "/" + name
}

// adopt gives pid an incarnation with its mappings from /proc: a process
// that was running before its records could be read.
func (h *Host) adopt(pid uint32) *process {
	h.nextInc++
	p := &process{inc: h.nextInc, maps: map[ProcMapping]string{}}
	h.procs[pid] = p
	h.reread(pid, p)
	return p
}

// reread brings p's mappings up to date with /proc/PID: every executable
// file mapping not yet reported is, and an executable other than the one
// last read means an exec whose record the kernel lost, so p starts a
// new incarnation. The rings report what happened in order; /proc says
// what holds now, which is the best a host can do once records are lost
// (perf synthesizes the same events the same way at its start).
func (h *Host) reread(pid uint32, p *process) {
	p.checked = h.lossGen
	text, err := os.ReadFile(procFile(pid, "maps"))
	if err != nil {
		return // gone already, or a kernel thread: its samples are the kernel's
	}
	if exe, err := os.Readlink(procFile(pid, "exe")); err == nil {
		if p.exe != "" && exe != p.exe {
			old := p.inc
			h.nextInc++
			p.inc, p.maps, p.walk = h.nextInc, map[ProcMapping]string{}, nil
			h.emit(node.Event{Kind: node.EventExec, PID: int(pid), Incarnation: p.inc, ParentIncarnation: old, Path: exe})
		}
		p.exe = exe
	}
	for _, m := range ParseProcMaps(text) {
		if _, ok := p.maps[m]; !ok {
			h.mapped(pid, p, m.Start, m.End-m.Start, m.Offset, m.Path, nil)
		}
	}
}

// mapped reports a file mapping, based at its file offset 0 so that the
// sample offsets of an image are the same in every process.
func (h *Host) mapped(pid uint32, p *process, addr, length, pgoff uint64, path string, buildID []byte) {
	if len(path) == 0 || path[0] != '/' || pgoff > addr {
		return // anonymous, [vdso] and the like: no file to describe
	}
	m := ProcMapping{Start: addr, End: addr + length, Offset: pgoff, Path: path}
	p.maps[m], p.walk = "", nil
	id, err := h.images.Identify(path, buildID)
	if err != nil {
		return // deleted or unreadable: its samples count as unknown
	}
	p.maps[m] = id
	h.emit(node.Event{Kind: node.EventMap, PID: int(pid), Incarnation: p.inc, ImageID: id, Path: path, Base: addr - pgoff, Size: length + pgoff})
}

// process is pid's state, adopting an unknown pid; nil for the idle
// task (pid 0), whose samples are the kernel's.
func (h *Host) process(pid uint32) *process {
	if pid == 0 {
		return nil
	}
	if p, ok := h.procs[pid]; ok {
		return p
	}
	return h.adopt(pid)
}

// apply follows one record in time order.
func (h *Host) apply(r *Record) {
	switch r.Kind {
	case KindSample:
		s := node.Sample{CPU: h.byCPU[r.CPU], PC: r.IP, Event: h.ev.Alpha}
		p := h.process(r.PID)
		if p != nil {
			if p.checked < h.lossGen {
				h.reread(r.PID, p)
			}
			s.Incarnation = p.inc
		}
		switch {
		case h.layout.Regs != 0:
			s.Chain, s.Truncated = h.walk(p, r)
		case len(r.Chain) > 0:
			s.Chain = r.Chain
		default:
			s.Chain = []uint64{r.IP}
		}
		h.handler.CounterInterrupt(s)
		h.mu.Lock()
		h.delivered++
		h.mu.Unlock()
	case KindFork:
		if r.PID == r.PPID {
			return // a thread: same process, same mappings
		}
		parent := h.process(r.PPID)
		h.nextInc++
		child := &process{inc: h.nextInc, maps: map[ProcMapping]string{}}
		var parentInc uint32
		if parent != nil {
			parentInc, child.exe, child.checked = parent.inc, parent.exe, parent.checked
			maps.Copy(child.maps, parent.maps)
		}
		h.procs[r.PID] = child
		h.emit(node.Event{Kind: node.EventFork, PID: int(r.PID), Incarnation: child.inc, ParentIncarnation: parentInc})
	case KindComm:
		if !r.Exec {
			return
		}
		p := h.process(r.PID)
		if p == nil {
			return
		}
		old := p.inc
		h.nextInc++
		p.inc, p.exe, p.maps, p.walk = h.nextInc, "", map[ProcMapping]string{}, nil
		h.emit(node.Event{Kind: node.EventExec, PID: int(r.PID), Incarnation: p.inc, ParentIncarnation: old})
	case KindMmap:
		if p := h.process(r.PID); p != nil {
			h.mapped(r.PID, p, r.Addr, r.Len, r.PgOff, r.File, r.BuildID)
		}
	case KindExit:
		if r.PID != r.TID {
			return // a thread
		}
		if p, ok := h.procs[r.PID]; ok {
			h.emit(node.Event{Kind: node.EventExit, PID: int(r.PID), Incarnation: p.inc})
			delete(h.procs, r.PID)
		}
	case KindLost:
		h.lossGen++
		cpu := h.byCPU[r.CPU]
		h.mu.Lock()
		h.lost += r.Lost
		h.mu.Unlock()
		if h.dropped != nil {
			h.dropped(cpu, wire.DropRingLost, r.Lost)
		}
	}
}

// step is one turn of the host's goroutine: the daemon's sync point and
// its IPIs, then the rings read and what they held up to the cutoff
// applied in time order (all of it when final). Records from the rings
// of different CPUs are merged by time, so a child's first sample is
// never applied before the fork that made it: everything written before
// the cutoff, taken before any ring is read, is in this read.
func (h *Host) step(final bool) {
	if h.sync != nil {
		h.sync()
	}
	h.ipiMu.Lock()
	ipis := h.ipis
	h.ipis = nil
	h.ipiMu.Unlock()
	for _, fn := range ipis {
		fn()
	}
	cutoff := monotonic()
	for _, r := range h.rings {
		buf := r.read()
		if _, err := Split(buf, func(b []byte) {
			rec, err := ParseLayout(b, h.layout)
			if err != nil {
				h.mu.Lock()
				h.bad++
				h.mu.Unlock()
				return
			}
			if rec.Kind == KindSample {
				h.mu.Lock()
				h.sampleBytes += uint64(len(b))
				h.mu.Unlock()
				rec.Chain = slices.Clone(rec.Chain)
				rec.Stack = h.keepStack(rec.Stack)
			} else {
				rec.BuildID = slices.Clone(rec.BuildID)
			}
			h.pending = append(h.pending, rec)
		}); err != nil {
			h.mu.Lock()
			h.bad++
			h.mu.Unlock()
		}
	}
	slices.SortStableFunc(h.pending, func(a, b Record) int {
		switch {
		case a.Time < b.Time:
			return -1
		case a.Time > b.Time:
			return 1
		}
		return 0
	})
	n := len(h.pending)
	if !final {
		n = 0
		for n < len(h.pending) && h.pending[n].Time <= cutoff {
			n++
		}
	}
	for i := range n {
		h.apply(&h.pending[i])
	}
	h.pending = append(h.pending[:0], h.pending[n:]...)
}

// keepStack copies a sample's stack out of the ring's read buffer, which
// the next read reuses, until the sample is applied: into a slab shared
// by the records of a read, a new one when it is full (the records not
// yet applied keep the old one alive), so a read costs one allocation,
// not one per sample.
func (h *Host) keepStack(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	if cap(h.stacks)-len(h.stacks) < len(b) {
		h.stacks = make([]byte, 0, max(len(b), 1<<20))
	}
	n := len(h.stacks)
	h.stacks = append(h.stacks, b...)
	return h.stacks[n:len(h.stacks):len(h.stacks)]
}

// ioctlAll runs a perf ioctl on every CPU's event.
func (h *Host) ioctlAll(req uint) error {
	for _, r := range h.rings {
		if err := unix.IoctlSetInt(r.fd, req, 0); err != nil {
			return fmt.Errorf("linuxhost: perf ioctl %#x: %w", req, err)
		}
	}
	return nil
}

// Runner is what Run drives: the node attached to this host.
type Runner interface {
	Start() error
	Flush()
	Finish(idle func()) error
	HostDropped(cpu int, reason string, k uint64)
}

// Run profiles until stop is closed: it starts n's daemon, enables the
// events (unless they wait for an exec), reads the rings every Poll with
// a full drain every flushEvery (0: none before the end), then disables
// the events, reads what is left and has n drain everything.
func (h *Host) Run(n Runner, stop <-chan struct{}, flushEvery time.Duration) error {
	h.dropped = n.HostDropped
	if err := n.Start(); err != nil {
		return err
	}
	if !h.cfg.EnableOnExec {
		if err := h.ioctlAll(unix.PERF_EVENT_IOC_ENABLE); err != nil {
			return err
		}
	}
	tick := time.NewTicker(h.cfg.Poll)
	defer tick.Stop()
	lastFlush := time.Now()
loop:
	for {
		select {
		case <-stop:
			break loop
		case <-tick.C:
		}
		h.step(false)
		if flushEvery > 0 && time.Since(lastFlush) >= flushEvery {
			lastFlush = time.Now()
			n.Flush()
		}
	}
	disableErr := h.ioctlAll(unix.PERF_EVENT_IOC_DISABLE)
	h.step(true)
	err := n.Finish(func() { h.step(true); time.Sleep(time.Millisecond) })
	if err != nil {
		return err
	}
	return disableErr
}

// Counts are what the host saw: Generated is every sample the kernel
// took, Delivered + Lost.
type Counts struct {
	Generated, Delivered, Lost, Malformed uint64
	// SampleBytes is the ring space the delivered samples took.
	SampleBytes uint64
	// Walks are the stack walks of the samples' copies (Config.UserStack).
	Walks WalkCounts
}

// WalkCounts are the reader's walks of copied user stacks. A truncated
// walk loses the callers beyond where it stopped: its sample's stack is
// stored marked truncated, and counted here, never silently.
type WalkCounts struct {
	Walked       uint64 // samples whose user stack was walked
	Frames       uint64 // user frames found
	Truncated    uint64 // walks that stopped before the outermost frame
	FramePointer uint64 // frames followed by frame pointer (no .eh_frame row)
	TableErrors  uint64 // images whose .eh_frame did not compile (walked by frame pointer)
	Nanos        uint64 // the walks' time, TableNanos included
	TableNanos   uint64 // compiling the images' tables, once per image
}

// Counts is safe from any goroutine; exact once Run has returned.
func (h *Host) Counts() Counts {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.walks
	w.TableErrors = h.tableErrs
	return Counts{Generated: h.delivered + h.lost, Delivered: h.delivered, Lost: h.lost, Malformed: h.bad, SampleBytes: h.sampleBytes, Walks: w}
}

// Close releases the events and rings.
func (h *Host) Close() {
	for _, r := range h.rings {
		r.close()
	}
	h.rings = nil
}
