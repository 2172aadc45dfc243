package node

import (
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"dcpi/hwsim/alpha"
)

// Mapping is one image mapped into a process: DCPI's loader and exec
// recognizer reported these (sec. 4.3.2).
type Mapping struct {
	Base, Size uint64
	Image      string // content identity: "buildid:..." or "sha256:..."
	Path       string
	// Bias is a shared object's load bias (Event.Bias): the image's own
	// address of Base is Base-Bias, which is the image record's Base, so
	// an offset means the same address in the file wherever it was loaded.
	Bias uint64
}

// ImageBase is the image's own address (its symbol table's) of Base.
func (m Mapping) ImageBase() uint64 { return m.Base - m.Bias }

// procImages is what one process incarnation had mapped, and whether it
// has ended (exec or exit): an ended incarnation's map is kept until every
// sample it could have left in a driver table has been drained.
type procImages struct {
	pid      int
	maps     []Mapping // sorted by Base
	endedGen uint64    // flush generation at which it ended; 0 while live
}

// ImageMaps is the daemon's image map of every process, keyed by process
// incarnation rather than PID (Event.Incarnation): a PID is reused
// once its process exits, but an incarnation is not, so a sample is
// attributed to the mappings in force when it was taken even if it is
// drained from the driver after the PID was given to another process.
// Events arrive on the simulation goroutine and lookups on the daemon's,
// so it is guarded by a mutex; nothing on the interrupt path touches it.
type ImageMaps struct {
	mu    sync.Mutex
	procs map[uint32]*procImages
	// kernel is vmunix, every address from alpha.KernelBase up, as the
	// host's boot-time map event said (nil before it). An atomic, not the
	// mutex: the daemon resolves kernel samples without locking.
	kernel atomic.Pointer[Mapping]
	gen    uint64 // completed full flushes
	// kernelBase is where kernel addresses begin (Config.KernelBase).
	kernelBase uint64
	// threads are the threads of a per-thread node (Config.PerThread),
	// by their own incarnation (EventThread), the key its driver counts
	// their samples under; nil when the node is not per-thread.
	threads map[uint32]*threadOf
}

// threadOf is one thread of a process incarnation, and whether it has
// ended (kept, as an ended incarnation is, until no sample of it can
// remain in a driver).
type threadOf struct {
	inc      uint32 // the process's incarnation, whose maps it runs in
	tid      int
	endedGen uint64
}

// NewImageMaps returns an empty map. The kernel's mapping arrives as a
// map event like any other image's (Host.Subscribe delivers it first).
func NewImageMaps() *ImageMaps {
	return &ImageMaps{procs: make(map[uint32]*procImages), gen: 1, kernelBase: alpha.KernelBase}
}

// ProcessEvent applies a loader event (it is a LoaderSink). A map event
// from alpha.KernelBase up maps the kernel, in every process.
func (im *ImageMaps) ProcessEvent(e Event) {
	if e.Kind == EventMap && e.Base >= im.kernelBase {
		im.kernel.Store(&Mapping{Base: e.Base, Size: e.Size, Image: e.ImageID, Path: e.Path})
		return
	}
	im.mu.Lock()
	defer im.mu.Unlock()
	switch e.Kind {
	case EventFork:
		child := &procImages{pid: e.PID}
		if parent := im.procs[e.ParentIncarnation]; parent != nil {
			child.maps = append([]Mapping(nil), parent.maps...)
		}
		im.procs[e.Incarnation] = child
	case EventExec:
		if old := im.procs[e.ParentIncarnation]; old != nil && old.endedGen == 0 {
			old.endedGen = im.gen
		}
		im.procs[e.Incarnation] = &procImages{pid: e.PID}
	case EventMap:
		p := im.procs[e.Incarnation]
		if p == nil {
			p = &procImages{pid: e.PID}
			im.procs[e.Incarnation] = p
		}
		m := Mapping{Base: e.Base, Size: e.Size, Image: e.ImageID, Path: e.Path, Bias: e.Bias}
		// A new mapping replaces whatever it overlaps (a library mapped
		// where a dlclose'd one was), as mmap with MAP_FIXED does.
		p.maps = slices.DeleteFunc(p.maps, func(o Mapping) bool { return o.Base < m.Base+m.Size && m.Base < o.Base+o.Size })
		i := sort.Search(len(p.maps), func(i int) bool { return p.maps[i].Base >= m.Base })
		p.maps = append(p.maps, Mapping{})
		copy(p.maps[i+1:], p.maps[i:])
		p.maps[i] = m
	case EventExit:
		if p := im.procs[e.Incarnation]; p != nil && p.endedGen == 0 {
			p.endedGen = im.gen
		}
	case EventThread:
		if im.threads != nil {
			im.threads[e.Incarnation] = &threadOf{inc: e.ParentIncarnation, tid: e.TID}
		}
	case EventThreadExit:
		if t := im.threads[e.Incarnation]; t != nil && t.endedGen == 0 {
			t.endedGen = im.gen
		}
	}
}

// followThreads makes im resolve the incarnations of threads
// (EventThread) as their processes', for a per-thread node.
func (im *ImageMaps) followThreads() {
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.threads == nil {
		im.threads = map[uint32]*threadOf{}
	}
}

// Resolve maps a sample's incarnation and PC to the image it lies in, with
// the PC's offset from the image's base, and the process's PID.
func (im *ImageMaps) Resolve(inc uint32, pc uint64) (m Mapping, offset uint64, pid int, ok bool) {
	m, offset, pid, _, ok = im.ResolveThread(inc, pc)
	return m, offset, pid, ok
}

// ResolveThread is Resolve for the key a per-thread driver counts under,
// a process's incarnation or one of its threads': it also returns the
// thread's ID (the PID for a process's first thread; 0 in the kernel,
// whose samples keep no process).
func (im *ImageMaps) ResolveThread(key uint32, pc uint64) (m Mapping, offset uint64, pid, tid int, ok bool) {
	if pc >= im.kernelBase {
		k := im.kernel.Load()
		if k != nil && pc-k.Base < k.Size {
			return *k, pc - k.Base, 0, 0, true
		}
		return Mapping{}, 0, 0, 0, false
	}
	im.mu.Lock()
	defer im.mu.Unlock()
	inc, tid := key, 0
	if im.threads != nil {
		if t := im.threads[key]; t != nil {
			inc, tid = t.inc, t.tid
		}
	}
	p := im.procs[inc]
	if p == nil {
		return Mapping{}, 0, 0, 0, false
	}
	if tid == 0 {
		tid = p.pid
	}
	i := sort.Search(len(p.maps), func(i int) bool { return p.maps[i].Base > pc }) - 1
	if i < 0 || pc-p.maps[i].Base >= p.maps[i].Size {
		return Mapping{}, 0, p.pid, tid, false
	}
	return p.maps[i], pc - p.maps[i].Base, p.pid, tid, true
}

// FlushCompleted records that every driver table and buffer has been
// drained and processed since the last call, and forgets incarnations
// that ended before the previous flush: no sample of theirs can remain.
func (im *ImageMaps) FlushCompleted() {
	im.mu.Lock()
	defer im.mu.Unlock()
	for inc, p := range im.procs {
		if p.endedGen != 0 && p.endedGen < im.gen {
			delete(im.procs, inc)
		}
	}
	for inc, t := range im.threads {
		if t.endedGen != 0 && t.endedGen < im.gen {
			delete(im.threads, inc)
		}
	}
	im.gen++
}

// Len returns how many incarnations the map holds (live and ended).
func (im *ImageMaps) Len() int {
	im.mu.Lock()
	defer im.mu.Unlock()
	return len(im.procs)
}

// MemoryBytes estimates the map's memory: each incarnation's record and
// its mappings (the strings are shared with the loader's events).
func (im *ImageMaps) MemoryBytes() int {
	im.mu.Lock()
	defer im.mu.Unlock()
	const perEntry = 8 + 8 // map key and pointer, before Go's map overhead
	n := 0
	for _, p := range im.procs {
		n += perEntry + int(unsafe.Sizeof(*p)) + cap(p.maps)*int(unsafe.Sizeof(Mapping{}))
	}
	n += len(im.threads) * (perEntry + int(unsafe.Sizeof(threadOf{})))
	return n
}
