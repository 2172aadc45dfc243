package node

import (
	"maps"
	"sync"

	"dcpi/node/unwind"
	"dcpi/wire"
)

// Host is what DCPI's driver and daemon need of the machine they profile,
// and all they see of it: a simulated Alpha (package simhost adapts
// hwsim.Machine), or a recorded trace replayed (Simulate's replay host).
type Host interface {
	// CPUs is the number of processors; the node runs a driver on each.
	CPUs() int
	// StartProfiling makes h the performance counter interrupt handler of
	// every CPU; what the counters count is the host's configuration.
	StartProfiling(h InterruptHandler) error
	// SendIPI runs fn on cpu as an interprocessor interrupt, atomically
	// with respect to that CPU's counter interrupts, as soon as the CPU
	// can take it; fn returns the cycles it costs the CPU. Whatever the
	// caller did before SendIPI happens before fn.
	SendIPI(cpu int, fn func() uint64) error
	// Now is the host's time in cycles. The daemon reads it only inside
	// an IPI, on the CPU.
	Now() uint64
	// Subscribe makes s receive loader events: first the mappings already
	// in force (the kernel's, from alpha.KernelBase up), then each one as
	// it happens, in the host's order.
	Subscribe(s LoaderSink)
	// SetIPISync makes the host call sync on its own goroutine before
	// each time it takes the IPIs queued from other goroutines (and at no
	// other time). The node's daemon runs only inside sync (lockstep.go),
	// so a simulated host's run does not depend on goroutine scheduling.
	SetIPISync(sync func())
}

// InterruptHandler handles a performance counter interrupt and returns
// the cycles the handler cost the CPU.
type InterruptHandler interface {
	CounterInterrupt(Sample) uint64
}

// Sample is one performance counter interrupt, as the driver sees it.
type Sample struct {
	CPU int
	// Incarnation names the process image that was running (0: idle):
	// the driver's process key, which the daemon's image maps resolve.
	Incarnation uint32
	// ThreadIncarnation names the thread as Incarnation names the
	// process (EventThread): Incarnation for a process's first thread,
	// the thread's own for any other; 0 from a host that does not tell
	// threads apart. Only a per-thread node (Config.PerThread) reads it.
	ThreadIncarnation uint32
	PC                uint64
	Event             uint8 // an alpha.Event

	// The interrupted user context, for the stack walk: r30, r15, r26
	// and r23 (millicode's return address), and the process's memory.
	// Mem is nil when the CPU was not in user mode (in vmunix or idle):
	// the stack is then the PC alone.
	SP, FP, RA, T9 uint64
	Mem            unwind.Memory
	// Chain, when not nil, is the call chain the host already walked
	// (a Linux kernel's callchain sample), innermost first: the driver
	// counts it instead of walking.
	Chain []uint64
	// Truncated, with Chain: the host's walk stopped before the
	// outermost frame (its stack is stored marked truncated).
	Truncated bool
	// Ctx is the interrupted user context for value sampling's
	// interpreter (values.go); nil when Mem is.
	Ctx Context
}

// EventKind is the kind of a loader event.
type EventKind uint8

// Loader events, in the order a process meets them.
const (
	// EventFork: PID was created and inherits its parent's mappings.
	EventFork EventKind = iota + 1
	// EventMap: an image was mapped: at exec, the program and its
	// interpreter; every executable mapping of a file after that (shared
	// libraries, dlopen); vmunix at boot.
	EventMap
	// EventExec: PID replaced its address space; earlier mappings are gone.
	EventExec
	// EventExit: PID exited; its PID may be reused after this.
	EventExit
	// EventThread: PID started thread TID, whose samples carry its own
	// incarnation (Incarnation; Sample.ThreadIncarnation) and resolve
	// through its process's (ParentIncarnation) image maps.
	EventThread
	// EventThreadExit: thread TID of PID (Incarnation, its own) ended;
	// a process's first thread ends with the process (EventExit).
	EventThreadExit
)

// Event is what DCPI's loader hooks and exec recognizer told the daemon: a
// process changed which images are mapped where.
type Event struct {
	Kind EventKind
	PID  int
	TID  int // for EventThread and EventThreadExit
	// Incarnation names one image of one process: it changes at fork and
	// exec and is never reused, so unlike a PID it says which mappings a
	// sample was taken under.
	Incarnation uint32
	// ParentIncarnation is, for EventFork, the parent's; for EventExec,
	// the process's previous one.
	ParentIncarnation uint32
	// For EventMap: the image and where it lies. A mapping from
	// alpha.KernelBase up is the kernel's, in every process.
	ImageID    string // content identity ("buildid:..." or "sha256:...")
	Path       string
	Base, Size uint64
	// Bias is a shared object's load bias: Base less the image's own
	// address of Base (0 for an executable, mapped where it was linked).
	Bias uint64
}

// LoaderSink receives loader events, on the host's goroutine.
type LoaderSink interface {
	ProcessEvent(Event)
}

// ImageSource describes the images samples land in, for the record the
// daemon publishes once per image (sec. 4.3.2's image records). The node
// never reads an image file itself.
type ImageSource interface {
	// DescribeImage returns the file behind m: ok false if the source does
	// not know it (the record then carries only the mapping).
	DescribeImage(m Mapping) (facts ImageFacts, ok bool, err error)
}

// UnwindSource is an ImageSource that can also compile an image's call
// frame information into an unwind table for the stack walk (the node
// still never reads an image file: the source does).
type UnwindSource interface {
	ImageSource
	// UnwindTable returns m's table, with offsets from m.Base; nil, nil
	// if the image has no call frame information (the walk then scans
	// prologues).
	UnwindTable(m Mapping) (*unwind.Table, error)
}

// ImageFacts are what an image record says of the file beyond its mapping.
type ImageFacts struct {
	Size               uint64 // bytes of the file
	TextStart, TextEnd uint64
	Symbols            []wire.Symbol
	// LinkBase, when set, is the address offset 0 stands for in the
	// image's own addresses, for a host whose mapping bases are not the
	// image's (a Linux host reports file offsets: PIE and shared
	// libraries load anywhere); nil: the mapping's base.
	LinkBase *uint64
}

// Publisher receives what a node produces: each image's record once, and
// sample batches. The cluster transport, simhost's local Pebble sink and
// MemPublisher are the implementations.
type Publisher interface {
	PublishImage(r *wire.ImageRecord) error
	PublishBatch(b *wire.Batch) error
}

// MemPublisher is the in-memory Publisher: it keeps every image record
// and batch, each batch as it comes back from its wire encoding (so what
// a node publishes must round-trip). It is safe for concurrent use.
type MemPublisher struct {
	mu      sync.Mutex
	batches []*wire.Batch
	images  map[wire.ImageKey]*wire.ImageRecord
	values  []*wire.ValuesRecord // values_daemon.go
	// processes are the process records (processes.go).
	processes []*wire.ProcessRecord
}

// PublishImage keeps r.
func (p *MemPublisher) PublishImage(r *wire.ImageRecord) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.images == nil {
		p.images = map[wire.ImageKey]*wire.ImageRecord{}
	}
	p.images[r.Key] = r
	return nil
}

// PublishBatch encodes b, decodes it again and keeps the copy.
func (p *MemPublisher) PublishBatch(b *wire.Batch) error {
	data, err := b.MarshalBinary()
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

// Batches returns the batches published so far, in order.
func (p *MemPublisher) Batches() []*wire.Batch {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*wire.Batch(nil), p.batches...)
}

// Images returns the image records published so far.
func (p *MemPublisher) Images() map[wire.ImageKey]*wire.ImageRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.images)
}
