package oracle

import (
	"fmt"
	"sort"

	"dcpi/analysis/cct"
	"dcpi/analysis/cfg"
	"dcpi/analysis/paths"
	"dcpi/hwsim"
)

// Resolver returns the code of the image at path (the simulated file
// system's path, as hwsim's events name it) and its content identity
// (the build ID, "buildid:..." as hwsim.Event.ImageID spells it).
type Resolver func(path string) (code *cfg.Code, imageID string, err error)

// The CCT's metrics, in this order.
const (
	MetricCalls        = "calls"
	MetricInstructions = paths.MetricInstructions
	MetricCycles       = "cycles"
	MetricIMiss        = "imiss" // I-cache misses (hwsim's PMU totals)
	MetricDMiss        = "dmiss" // D-cache load misses
)

const (
	mCalls = iota
	mInsns
	mCycles
	mIMiss
	mDMiss
)

// Counters are the named events the oracle could not turn into paths, and
// the ones worth knowing about. A test of a workload expects the
// Inconsistent, UnmatchedReturns and UnexpectedResumes counters at zero.
type Counters struct {
	KernelEntries uint64 `json:"kernel_entries"` // user->kernel switches (their cycles are charged to nobody)
	// UnknownActivations: activations whose paths are unknown (procedure
	// not numbered, entered mid-procedure, or tracking lost).
	UnknownActivations uint64 `json:"unknown_activations"`
	// EnteredMidProcedure: calls or jumps to an address with no entry edge.
	EnteredMidProcedure uint64 `json:"entered_mid_procedure"`
	// UnknownCode counts instructions run outside every known procedure.
	UnknownCode uint64 `json:"unknown_code"`
	// UnmatchedReturns: a ret whose target no frame's return address
	// matches; the frame is replaced as for a jump.
	UnmatchedReturns uint64 `json:"unmatched_returns"`
	// Unwound: frames popped without returning (a return to a frame
	// further down: longjmp-like).
	Unwound uint64 `json:"unwound"`
	// Longjmps: returns that landed mid-procedure in a frame further
	// down (its path is cut there; it walks on to its next backedge).
	Longjmps uint64 `json:"longjmps"`
	// UnexpectedResumes: the kernel resumed a process somewhere other
	// than where it left (signal delivery); its stack is restarted.
	UnexpectedResumes uint64 `json:"unexpected_resumes"`
	// RestartedSyscalls: a blocked system call resumed at its CALL_PAL
	// to run it again.
	RestartedSyscalls uint64 `json:"restarted_syscalls"`
	// Inconsistent: a transfer the block layout cannot explain (a bug in
	// the CFG or the oracle); the activation's tracking stops.
	Inconsistent uint64 `json:"inconsistent"`
	// UnresolvedImages: processes running an image the resolver refused.
	UnresolvedImages uint64 `json:"unresolved_images"`
}

// PathStat is one path's ground truth.
type PathStat struct {
	Count        uint64
	Instructions uint64
	Cycles       uint64
	IMiss, DMiss uint64
}

// Proc is one procedure's ground truth.
type Proc struct {
	Name       string
	Entry      uint64 // the procedure's start (the CCT's key)
	CFG        *cfg.Proc
	Numbering  *paths.Numbering // nil when the paths cannot be numbered
	NumberErr  error            // why not
	Paths      map[uint64]*PathStat
	Unknown    uint64 // activations whose paths are unknown
	UnknownIns uint64 // their instructions
}

// Partial is a stretch of a procedure's blocks that is no whole path: a
// path cut short when the process exited, exec'd, forked or unwound, or
// the blocks a frame ran after a longjmp landed in it until its next
// backedge or exit. The first block ran from From (0: its start), the last
// up to, not including, Upto; Out is the edge that ended it (-1: none).
type Partial struct {
	Proc   *Proc
	Blocks []int
	From   uint64
	Upto   uint64
	Out    int
	Reason string // "exit", "exec", "unwind", "restart", "longjmp", "fork"
}

// Image is the ground truth of one image, over every process that ran it.
type Image struct {
	Path     string
	ID       string // content identity from the resolver
	Code     *cfg.Code
	Tree     *cct.Tree // metrics: calls, instructions, cycles, imiss, dmiss
	Procs    map[uint64]*Proc
	Partials []Partial
	// Forked are the prefixes of paths open at a fork: the path ends in
	// parent and child alike, so both count it, but its prefix ran once.
	Forked []Partial
}

// SortedProcs returns the image's procedures in address order.
func (im *Image) SortedProcs() []*Proc {
	out := make([]*Proc, 0, len(im.Procs))
	for _, p := range im.Procs {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Entry < out[j].Entry })
	return out
}

// procAt returns the procedure holding addr, building and numbering it the
// first time; nil when addr is in no procedure.
func (im *Image) procAt(addr uint64) *Proc {
	r, err := im.Code.At(addr)
	if err != nil {
		return nil
	}
	if p := im.Procs[r.Start]; p != nil {
		return p
	}
	p := &Proc{Name: r.Name, Entry: r.Start, Paths: map[uint64]*PathStat{}}
	cp, err := im.Code.Build(r)
	if err != nil {
		p.NumberErr = err
	} else {
		p.CFG = cp
		p.Numbering, p.NumberErr = paths.Number(cp)
	}
	im.Procs[r.Start] = p
	return p
}

const maxNotes = 16

// Oracle follows a machine's transfers. Attach it, run the machine, then
// read Images and Counters. It is not safe for concurrent use (hwsim calls
// it from its one simulation goroutine).
type Oracle struct {
	resolve  Resolver
	Images   map[string]*Image
	Counters Counters
	// Notes describe the first inconsistencies (at most maxNotes).
	Notes  []string
	procs  map[int]*process
	failed map[string]error
}

// New returns an oracle that finds images' code through resolve.
func New(resolve Resolver) *Oracle {
	return &Oracle{resolve: resolve, Images: map[string]*Image{}, procs: map[int]*process{}, failed: map[string]error{}}
}

// Attach subscribes o to m's process events and installs it as m's
// transfer observer. Call it before m.Run.
func (o *Oracle) Attach(m *hwsim.Machine) {
	m.Subscribe(o)
	m.SetTransferObserver(o)
}

// ResolveErrors returns the images the resolver refused, by path.
func (o *Oracle) ResolveErrors() map[string]error { return o.failed }

func (o *Oracle) image(path string) *Image {
	if im := o.Images[path]; im != nil {
		return im
	}
	if _, bad := o.failed[path]; bad {
		return nil
	}
	code, id, err := o.resolve(path)
	if err == nil && code == nil {
		err = fmt.Errorf("oracle: resolver returned no code for %s", path)
	}
	if err != nil {
		o.failed[path] = err
		return nil
	}
	im := &Image{Path: path, ID: id, Code: code, Procs: map[uint64]*Proc{},
		Tree: cct.New(MetricCalls, MetricInstructions, MetricCycles, MetricIMiss, MetricDMiss)}
	o.Images[path] = im
	return im
}

// Finish closes what is still open (processes the machine did not see
// exit, e.g. when a run was cut short), as an exit would.
func (o *Oracle) Finish() {
	pids := make([]int, 0, len(o.procs))
	for pid := range o.procs {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	for _, pid := range pids {
		o.procs[pid].abandon(o, "exit")
		delete(o.procs, pid)
	}
}
