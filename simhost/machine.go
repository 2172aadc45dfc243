package simhost

import (
	"fmt"
	"sync"

	"dcpi/hwsim"
	"dcpi/hwsim/elfimage"
	"dcpi/hwsim/vmunix"
	"dcpi/node"
	"dcpi/wire"
)

// machine is the node.Host of an hwsim.Machine: it programs the counters
// with profile and translates samples and loader events to node's.
type machine struct {
	m       *hwsim.Machine
	profile hwsim.ProfileConfig
	me      hwsim.ProfileMeConfig
}

var _ node.MeHost = machine{}

func (a machine) CPUs() int { return a.m.Config().CPUs }

func (a machine) StartProfiling(h node.InterruptHandler) error {
	return a.m.StartProfiling(a.profile, interrupts{h})
}

func (a machine) SendIPI(cpu int, fn func() uint64) error {
	return a.m.SendIPI(cpu, func(int) uint64 { return fn() })
}

func (a machine) Now() uint64 { return a.m.Now() }

func (a machine) SetIPISync(sync func()) { a.m.SetIPISync(sync) }

func (a machine) Subscribe(s node.LoaderSink) { a.m.Subscribe(loaderEvents{s}) }

// interrupts hands the machine's counter interrupts to a node's handler.
type interrupts struct{ h node.InterruptHandler }

func (i interrupts) CounterInterrupt(s hwsim.Sample) uint64 {
	ns := node.Sample{CPU: s.CPU, Incarnation: s.Incarnation, ThreadIncarnation: s.ThreadIncarnation, PC: s.PC, Event: uint8(s.Event),
		SP: s.SP, FP: s.FP, RA: s.RA, T9: s.T9}
	if s.Mem != nil { // a nil hwsim.UserMemory must stay a nil unwind.Memory
		ns.Mem = s.Mem
	}
	if s.Context != nil { // likewise a nil *hwsim.Interrupted
		ns.Ctx = s.Context
	}
	return i.h.CounterInterrupt(ns)
}

// StartProfileMe programs the machine's ProfileMe hardware with a.me and
// hands its interrupts to h.
func (a machine) StartProfileMe(h node.MeHandler) error {
	return a.m.StartProfileMe(a.me, &meInterrupts{h: h})
}

// meInterrupts hands the machine's ProfileMe interrupts to a node's
// handler, translating the records in a slice it reuses (the interrupts
// all come on the machine's goroutine).
type meInterrupts struct {
	h    node.MeHandler
	recs []node.MeRecord
}

func (i *meInterrupts) ProfileMeInterrupt(cpu int, samples []hwsim.MeSample, lost uint64) uint64 {
	i.recs = i.recs[:0]
	for k := range samples {
		i.recs = append(i.recs, node.MeRecord{MeRecord: samples[k].MeRecord, Incarnation: samples[k].Incarnation})
	}
	return i.h.ProfileMeInterrupt(cpu, i.recs, lost)
}

// loaderEvents hands the machine's process events to a node's image maps.
type loaderEvents struct{ s node.LoaderSink }

func (l loaderEvents) ProcessEvent(e hwsim.Event) {
	var k node.EventKind
	switch e.Kind {
	case hwsim.EventFork:
		k = node.EventFork
	case hwsim.EventMap:
		k = node.EventMap
	case hwsim.EventExec:
		k = node.EventExec
	case hwsim.EventExit:
		k = node.EventExit
	case hwsim.EventThread:
		k = node.EventThread
	case hwsim.EventThreadExit:
		k = node.EventThreadExit
	default:
		return // nothing a profiler follows
	}
	l.s.ProcessEvent(node.Event{Kind: k, PID: e.PID, TID: e.TID, Incarnation: e.Incarnation, ParentIncarnation: e.ParentIncarnation,
		ImageID: e.ImageID, Path: e.Path, Base: e.Base, Size: e.Size, Bias: e.Bias})
}

// Images describes the images of a simulated host for the daemon's image
// records: the programs in its file system, the shared objects of its
// sysroot (hwsim.Config.Sysroot) and vmunix. It parses each file with
// elfimage the first time the daemon asks; it is safe for concurrent use.
type Images struct {
	files   map[string][]byte
	sysroot hwsim.Sysroot
	mu      sync.Mutex
	facts   map[string]node.ImageFacts // by path
}

var _ node.UnwindSource = (*Images)(nil)

// NewImages describes files, by path (hwsim.Config.Files), the files of
// the host directory sysroot (hwsim.Config.Sysroot; "" for none) and
// vmunix.
func NewImages(files map[string][]byte, sysroot string) *Images {
	return &Images{files: files, sysroot: hwsim.Sysroot{Dir: sysroot}, facts: map[string]node.ImageFacts{}}
}

// file returns the bytes of the simulated path name: a program of the
// host's file system, else a file of its sysroot (a shared object).
func (s *Images) file(name string) ([]byte, bool) {
	if d, ok := s.files[name]; ok {
		return d, true
	}
	d, _, err := s.sysroot.ReadFile(name)
	return d, err == nil
}

// DescribeImage returns the size, text range and symbols of the file m
// maps; ok is false for a path the host does not have.
func (s *Images) DescribeImage(m node.Mapping) (node.ImageFacts, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.facts[m.Path]; ok {
		return f, true, nil
	}
	var im *elfimage.Image
	var data []byte
	var err error
	if m.Path == vmunix.Path {
		data = vmunix.Image()
		im, err = elfimage.ParseKernel(data, vmunix.Path)
	} else if d, ok := s.file(m.Path); ok {
		data = d
		im, err = elfimage.ParseObject(data, m.Path)
	} else {
		return node.ImageFacts{}, false, nil
	}
	if err != nil {
		return node.ImageFacts{}, false, fmt.Errorf("simhost: image %s: %w", m.Path, err)
	}
	f := node.ImageFacts{Size: uint64(len(data)), TextStart: im.TextStart, TextEnd: im.TextEnd}
	for _, sym := range im.ProcedureSymbols() { // a stripped library's unnamed procedures too
		f.Symbols = append(f.Symbols, wire.Symbol{Name: sym.Name, Addr: sym.Addr, Size: sym.Size})
	}
	s.facts[m.Path] = f
	return f, true, nil
}
