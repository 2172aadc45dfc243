package node

import (
	"maps"
	"sync"
	"sync/atomic"

	"dcpi/hwsim/alpha"
	"dcpi/node/unwind"
)

// stackSpaces gives the interrupt handler each process incarnation's
// unwind space (its images and their tables) without a lock: the map from
// incarnation to space is immutable once published, and every loader
// event publishes a new one through an atomic pointer (a plain load on the
// handler's side). Loader events arrive on the host's goroutine, as the
// handler does, but nothing here relies on that. An incarnation's space
// is dropped when it ends: no sample can be taken in it afterwards.
type stackSpaces struct {
	cur atomic.Pointer[map[uint32]*unwind.Space]

	mu         sync.Mutex // writers
	src        UnwindSource
	kernelBase uint64                   // Config.KernelBase: map events from here up are the kernel's
	tables     map[string]*unwind.Table // by image identity: compiled once
	errs       uint64                   // tables the source failed to compile (walked by heuristic)
}

func newStackSpaces(src UnwindSource) *stackSpaces {
	s := &stackSpaces{src: src, tables: map[string]*unwind.Table{}, kernelBase: alpha.KernelBase}
	empty := map[uint32]*unwind.Space{}
	s.cur.Store(&empty)
	return s
}

// space is the handler's lookup (CPU side): nil for an unknown
// incarnation.
func (s *stackSpaces) space(inc uint32) *unwind.Space { return (*s.cur.Load())[inc] }

// ProcessEvent follows a loader event (it is a LoaderSink).
func (s *stackSpaces) ProcessEvent(e Event) {
	if e.Kind == EventMap && e.Base >= s.kernelBase {
		return // vmunix: no chain is walked in it
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := *s.cur.Load()
	next := maps.Clone(old)
	switch e.Kind {
	case EventFork:
		next[e.Incarnation] = old[e.ParentIncarnation]
	case EventExec:
		delete(next, e.ParentIncarnation)
		next[e.Incarnation] = nil
	case EventMap:
		m := Mapping{Base: e.Base, Size: e.Size, Image: e.ImageID, Path: e.Path, Bias: e.Bias}
		next[e.Incarnation] = next[e.Incarnation].With(unwind.Image{Base: e.Base, Size: e.Size, Table: s.table(m)})
	case EventExit:
		delete(next, e.Incarnation)
	default:
		return
	}
	s.cur.Store(&next)
}

// table compiles m's table once per image (s.mu held).
func (s *stackSpaces) table(m Mapping) *unwind.Table {
	if s.src == nil {
		return nil
	}
	if t, ok := s.tables[m.Image]; ok {
		return t
	}
	t, err := s.src.UnwindTable(m)
	if err != nil {
		s.errs++
		t = nil
	}
	s.tables[m.Image] = t
	return t
}

// loaderSinks hands each event to several sinks, in order.
type loaderSinks []LoaderSink

func (l loaderSinks) ProcessEvent(e Event) {
	for _, s := range l {
		s.ProcessEvent(e)
	}
}
