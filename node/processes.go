package node

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	pathpkg "path"
	"slices"
	"strings"
	"sync"
	"time"

	"dcpi/hwsim/alpha"
	"dcpi/wire"
)

// ProcessPublisher is a Publisher that also takes process records
// (wire.ProcessRecord): the node publishes one per process it sees, with
// the binary the process runs and its process labels, if pub implements
// it. A local database's sink, MemPublisher and the cluster agent's
// publisher (to the coordinator, which binds the record to the host of
// the agent's credentials) do.
type ProcessPublisher interface {
	PublishProcess(r *wire.ProcessRecord) error
}

// ErrProcessLabels: a Config.ProcessLabels entry names no binary or
// carries a bad label.
var ErrProcessLabels = errors.New("bad process labels")

// CheckProcessLabels checks Config.ProcessLabels: each key a binary path
// ("/usr/bin/db") or base name ("db"), as Config.PerProcess names
// images, and each label set valid by wire.CheckLabels.
func CheckProcessLabels(labels map[string]map[string]string) error {
	for _, bin := range slices.Sorted(maps.Keys(labels)) {
		if bin == "" || strings.ContainsRune(bin, 0) || strings.HasSuffix(bin, "/") {
			return fmt.Errorf("%w: %q (want a binary's path or file name)", ErrProcessLabels, bin)
		}
		if err := wire.CheckLabels(labels[bin]); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrProcessLabels, bin, err)
		}
	}
	return nil
}

// processBook learns each process's binary from the loader events — the
// path an exec names (or, failing that, the first image mapped below the
// kernel after it), inherited at fork — and its labels: those it
// inherits (a child its parent's at fork, a process its own across exec,
// as an environment variable would be) with those Config.ProcessLabels
// gives its binary over them. It queues a record when a PID is first
// seen running a binary, and when the binary or labels change (an exec);
// an exit forgets the PID, so a reused PID is a new process. Events come
// on the host's goroutine, take on the daemon's.
type processBook struct {
	cfg map[string]map[string]string // Config.ProcessLabels
	// perThread (Config.PerThread) publishes a record per thread too,
	// and every record names its process (wire.ProcessThreadVersion).
	perThread bool

	mu      sync.Mutex
	byInc   map[uint32]*procInfo
	known   map[int]*procInfo // the last record queued per live PID
	pending []*procInfo
}

type procInfo struct {
	pid    int // the PID, or a thread's TID
	binary string
	labels map[string]string
	// process is a thread's process's PID (perThread); 0 for a process.
	process int
}

func newProcessBook(cfg map[string]map[string]string) *processBook {
	return &processBook{cfg: cfg, byInc: map[uint32]*procInfo{}, known: map[int]*procInfo{}}
}

// labelsOf is inherited with the labels configured for binary over it:
// its base name's, then its path's.
func (b *processBook) labelsOf(binary string, inherited map[string]string) map[string]string {
	base, path := b.cfg[pathpkg.Base(binary)], b.cfg[binary]
	if len(base) == 0 && len(path) == 0 {
		return inherited
	}
	out := maps.Clone(inherited)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, base)
	maps.Copy(out, path)
	return out
}

// ProcessEvent follows a loader event (it is a LoaderSink).
func (b *processBook) ProcessEvent(e Event) {
	if e.Kind == EventMap && e.Base >= alpha.KernelBase {
		return // the kernel's, in every process
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e.Kind {
	case EventFork:
		child := &procInfo{pid: e.PID}
		if parent := b.byInc[e.ParentIncarnation]; parent != nil {
			child.binary, child.labels = parent.binary, parent.labels
		}
		b.byInc[e.Incarnation] = child
		b.note(child)
	case EventExec:
		p := &procInfo{pid: e.PID}
		if old := b.byInc[e.ParentIncarnation]; old != nil {
			p.labels = old.labels
			delete(b.byInc, e.ParentIncarnation)
		}
		if e.Path != "" {
			p.binary = e.Path
			p.labels = b.labelsOf(p.binary, p.labels)
		}
		b.byInc[e.Incarnation] = p
		b.note(p)
	case EventMap:
		p := b.byInc[e.Incarnation]
		if p == nil {
			p = &procInfo{pid: e.PID}
			b.byInc[e.Incarnation] = p
		}
		if p.binary == "" && e.Path != "" {
			p.binary = e.Path
			p.labels = b.labelsOf(p.binary, p.labels)
			b.note(p)
		}
	case EventExit:
		delete(b.byInc, e.Incarnation)
		delete(b.known, e.PID)
	case EventThread:
		// A thread runs its process's binary with its labels; its TID
		// comes from the PID space, so it cannot be a live process's.
		if p := b.byInc[e.ParentIncarnation]; p != nil && b.perThread {
			b.note(&procInfo{pid: e.TID, binary: p.binary, labels: p.labels, process: e.PID})
		}
	case EventThreadExit:
		delete(b.known, e.TID)
	}
}

// note queues p's record unless its PID's last one said the same. The
// caller holds b.mu.
func (b *processBook) note(p *procInfo) {
	if p.binary == "" || p.pid <= 0 {
		return
	}
	if k := b.known[p.pid]; k != nil && k.binary == p.binary && maps.Equal(k.labels, p.labels) {
		return
	}
	b.known[p.pid] = p
	b.pending = append(b.pending, p)
}

// take returns the records queued since the last call, first seen in
// epoch at now.
func (b *processBook) take(epoch uint64, now time.Time) []*wire.ProcessRecord {
	b.mu.Lock()
	ps := b.pending
	b.pending = nil
	b.mu.Unlock()
	out := make([]*wire.ProcessRecord, 0, len(ps))
	for _, p := range ps {
		r := &wire.ProcessRecord{Version: wire.ProcessVersion, PID: uint32(p.pid), Epoch: epoch,
			Start: now.UnixNano(), Binary: p.binary, Labels: p.labels}
		if b.perThread {
			// Every record of a per-thread node names its process, its
			// first thread's too: the tools then know that the samples
			// under its PID are that thread's alone.
			r.Version, r.Process = wire.ProcessThreadVersion, uint32(cmp.Or(p.process, p.pid))
		}
		out = append(out, r)
	}
	return out
}

// publishProcesses publishes the process records queued since the last
// publish, on the daemon's goroutine, before the batch whose samples may
// be theirs: a record's epoch is never after its process's first
// samples'.
func (n *Node) publishProcesses() error {
	if n.procs == nil {
		return nil
	}
	var published, refused uint64
	for _, r := range n.procs.take(n.Epoch(), time.Now()) {
		if r.Validate() != nil {
			refused++
			continue
		}
		if err := n.procPub.PublishProcess(r); err != nil {
			return err
		}
		published++
	}
	if published+refused > 0 {
		n.count(func(s *DaemonStats) { s.Processes += published; s.ProcessesRefused += refused })
	}
	return nil
}

// PublishProcess keeps r.
func (p *MemPublisher) PublishProcess(r *wire.ProcessRecord) error {
	if err := r.Validate(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.processes = append(p.processes, r)
	return nil
}

// Processes returns the process records published so far, in order.
func (p *MemPublisher) Processes() []*wire.ProcessRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.processes)
}
