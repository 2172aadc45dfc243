package hwsim

import "fmt"

// EventKind is the kind of a process event.
type EventKind uint8

// Process events, in the order a process meets them.
const (
	// EventFork: PID was created by PPID and inherits its image mappings.
	EventFork EventKind = iota + 1
	// EventMap: an image was mapped into PID: at exec, the executable and
	// its interpreter; later, every executable mapping of a file (a shared
	// library ld.so maps, a dlopen), as DCPI's modified loader reported them.
	EventMap
	// EventExec: PID replaced its address space; earlier mappings are gone.
	EventExec
	// EventExit: PID exited; its PID may be reused after this.
	EventExit
	// EventThread: PID started thread TID (clone with CLONE_THREAD).
	// Incarnation is the thread's own, which its samples carry as
	// Sample.ThreadIncarnation; ParentIncarnation is the process's, whose
	// image maps the thread runs in. A per-thread profiler follows these;
	// everything else keys samples by process and ignores them.
	EventThread
	// EventThreadExit: thread TID of PID ended (not the process's first
	// thread, whose end is the process's EventExit). Incarnation is the
	// thread's, as EventThread gave it.
	EventThreadExit
)

func (k EventKind) String() string {
	switch k {
	case EventFork:
		return "fork"
	case EventMap:
		return "map"
	case EventExec:
		return "exec"
	case EventExit:
		return "exit"
	case EventThread:
		return "thread"
	case EventThreadExit:
		return "thread-exit"
	}
	return fmt.Sprintf("event(%d)", k)
}

// Event is what DCPI's loader hooks and exec recognizer told the daemon: a
// process changed which images are mapped where. Events are delivered in
// simulation order; Cycle orders them against samples taken on CPU.
type Event struct {
	Kind  EventKind
	Cycle uint64 // machine time, in cycles
	CPU   int
	PID   int
	PPID  int // for EventFork
	TID   int // for EventThread and EventThreadExit
	// Incarnation names one image of one process: it changes at fork and
	// at exec and is never reused by a machine, so unlike a PID it says
	// which mappings a sample was taken under (samples carry it too).
	Incarnation uint32
	// ParentIncarnation is, for EventFork, the parent's; for EventExec,
	// the process's previous one.
	ParentIncarnation uint32
	// For EventMap: the image and where it lies.
	ImageID string // content identity ("buildid:..." or "sha256:...")
	Path    string
	Base    uint64 // lowest mapped address of the image
	Size    uint64 // bytes from Base to the end of its last segment
	// Bias is the load bias of a shared object, Base less the image's own
	// address of Base (its symbol table's): 0 for an executable, which is
	// mapped where it was linked.
	Bias uint64
	// Status is the wait status for EventExit.
	Status int
}

func (e Event) String() string {
	switch e.Kind {
	case EventFork:
		return fmt.Sprintf("%d cpu%d fork pid %d from %d", e.Cycle, e.CPU, e.PID, e.PPID)
	case EventMap:
		return fmt.Sprintf("%d cpu%d map pid %d %s at %#x+%#x %s", e.Cycle, e.CPU, e.PID, e.Path, e.Base, e.Size, e.ImageID)
	case EventExec:
		return fmt.Sprintf("%d cpu%d exec pid %d %s", e.Cycle, e.CPU, e.PID, e.Path)
	case EventExit:
		return fmt.Sprintf("%d cpu%d exit pid %d status %#x", e.Cycle, e.CPU, e.PID, e.Status)
	case EventThread, EventThreadExit:
		return fmt.Sprintf("%d cpu%d %s pid %d tid %d", e.Cycle, e.CPU, e.Kind, e.PID, e.TID)
	}
	return e.Kind.String()
}

// EventSink receives process events. It is called synchronously from the
// simulation, so it must not block for long.
type EventSink interface {
	ProcessEvent(Event)
}

// EventFunc adapts a function to EventSink.
type EventFunc func(Event)

// ProcessEvent calls f.
func (f EventFunc) ProcessEvent(e Event) { f(e) }
