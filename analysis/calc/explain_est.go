package calc

import (
	"container/heap"
	"errors"
	"fmt"
	"math"

	"dcpi/analysis/cfg"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/timing"
)

// ExplainOptions change how Explain judges culprits. The zero value means
// every default.
type ExplainOptions struct {
	// Timing holds the facts of the machine profiled: the fetch block
	// (IcacheLine; hwsim's issue model fetches 32-byte blocks), the page
	// size, what each miss costs at most (IcacheMissMemory, ITBMissCycles,
	// MemoryLatency, DTBMissCycles, the write buffer's size and retire
	// interval, ReplayTrapCycles, MispredictPenalty). The zero value
	// (ClockMHz 0) means timing.DefaultParams(), hwsim's 21164.
	Timing timing.Params
	// RareEdge: the I-cache and ITB rules ignore a predecessor edge
	// executed fewer than 1/RareEdge times as often as the block it enters
	// ("much less frequently", sec. 6.3). An edge without an estimate is
	// never rare. Default 20.
	RareEdge float64
	// Margin is the sampling error allowed, in standard deviations: an
	// event count of n samples is taken as at most the Poisson score
	// interval's upper end (sqrt(n + Margin²/4) + Margin/2)², 4 samples
	// for none at the default, and a difference S − F·M within
	// Margin·sqrt(max(S, F·M, 1)) of 0 is sampling error in the summary.
	// Default 2.
	Margin float64
	// Negligible rules out a candidate whose bound is below this share of
	// the instruction's dynamic stall. Default 0.02.
	Negligible float64
	// Skid is how many cycles after the instruction that caused an event
	// its sample is taken (alpha.InterruptSkid, 6). Default that.
	Skid int
}

// Defaults of ExplainOptions.
const (
	DefaultRareEdge   = 20
	DefaultMargin     = 2
	DefaultNegligible = 0.02
)

// ErrExplain is wrapped by Explain's input errors.
var ErrExplain = errors.New("calc: cannot explain")

func (o ExplainOptions) withDefaults() (ExplainOptions, error) {
	if o.Timing.ClockMHz == 0 {
		o.Timing = timing.DefaultParams()
	} else if err := o.Timing.Validate(); err != nil {
		return o, fmt.Errorf("%w: %w", ErrExplain, err)
	}
	bad := func(name string, v float64) error {
		return fmt.Errorf("%w: %s = %v: want a positive number or 0 for the default", ErrExplain, name, v)
	}
	switch {
	case o.RareEdge < 0 || math.IsNaN(o.RareEdge) || math.IsInf(o.RareEdge, 0):
		return o, bad("RareEdge", o.RareEdge)
	case o.Margin < 0 || math.IsNaN(o.Margin) || math.IsInf(o.Margin, 0):
		return o, bad("Margin", o.Margin)
	case o.Negligible < 0 || o.Negligible >= 1 || math.IsNaN(o.Negligible):
		return o, fmt.Errorf("%w: Negligible = %v: want [0, 1)", ErrExplain, o.Negligible)
	case o.Skid < 0:
		return o, bad("Skid", float64(o.Skid))
	}
	if o.RareEdge == 0 {
		o.RareEdge = DefaultRareEdge
	}
	if o.Margin == 0 {
		o.Margin = DefaultMargin
	}
	if o.Negligible == 0 {
		o.Negligible = DefaultNegligible
	}
	if o.Skid == 0 {
		o.Skid = alpha.InterruptSkid
	}
	return o, nil
}

// Explain gives every instruction of p its CPI, static stalls and the
// dynamic causes that survive for its dynamic stall, and summarizes the
// procedure (Figure 4). f must be p's frequencies; prof holds p's samples
// (samples at addresses outside p are ignored) and must give the CYCLES
// period. docs/dcpicalc.md ("Culprits") states every rule.
func Explain(p *Procedure, f *Frequencies, prof *Profile, opt ExplainOptions) (*Explanation, error) {
	if err := checkExplainInput(p, f, prof); err != nil {
		return nil, err
	}
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	x := newExplainer(p, f, prof, opt)
	out := &Explanation{Proc: p, Freq: f, Insns: make([]InsnExplanation, 0, len(p.CFG.Insns))}
	for b := range p.CFG.Blocks {
		est := f.Block(b)
		for k := range p.Sched[b].Insns {
			in := &p.Sched[b].Insns[k]
			e := InsnExplanation{PC: in.PC, Word: in.Word, Block: b, S: prof.At(in.PC, alpha.EvCycles), M: in.M,
				F: est.F, Known: est.Known(), Confidence: est.Confidence, Static: in.Stalls}
			if e.Known && e.F > 0 {
				e.CPI = e.S / e.F
				e.Dynamic = e.CPI - float64(e.M)
				if e.Dynamic > 0 {
					e.Candidates = x.candidates(b, k, e.F, e.Dynamic)
				}
			}
			out.Insns = append(out.Insns, e)
		}
	}
	out.Summary = x.summarize(out.Insns)
	out.Summary.Trust = trust(p, f, out.Insns)
	return out, nil
}

func checkExplainInput(p *Procedure, f *Frequencies, prof *Profile) error {
	switch {
	case p == nil || p.CFG == nil || len(p.CFG.Blocks) == 0:
		return fmt.Errorf("%w: no procedure", ErrExplain)
	case len(p.Sched) != len(p.CFG.Blocks) || len(p.Pred) != len(p.CFG.Blocks) ||
		len(p.Classes.Node) != p.CFG.NumNodes() || len(p.Classes.Edge) != len(p.CFG.Edges):
		return fmt.Errorf("%w: %s: procedure not made by NewProcedure", ErrExplain, p.CFG.Name)
	case f == nil:
		return fmt.Errorf("%w: %s: no frequencies", ErrExplain, p.CFG.Name)
	case f.p != p:
		return fmt.Errorf("%w: %s: the frequencies are of another procedure", ErrExplain, p.CFG.Name)
	case len(f.Class) != p.Classes.Count:
		return fmt.Errorf("%w: %s: %d class estimates for %d classes", ErrExplain, p.CFG.Name, len(f.Class), p.Classes.Count)
	case prof == nil:
		return fmt.Errorf("%w: %s: no profile", ErrExplain, p.CFG.Name)
	}
	for i := range p.CFG.Blocks {
		if s := p.Sched[i]; s == nil || len(s.Insns) != p.CFG.Blocks[i].Len() {
			return fmt.Errorf("%w: %s: block %d has no schedule of its instructions", ErrExplain, p.CFG.Name, i)
		}
	}
	for i, c := range f.Class {
		if c.F < 0 || math.IsNaN(c.F) || math.IsInf(c.F, 0) {
			return fmt.Errorf("%w: %s: class %d frequency %v", ErrExplain, p.CFG.Name, i, c.F)
		}
	}
	for e, per := range prof.Periods {
		if per < 0 || math.IsNaN(per) || math.IsInf(per, 0) {
			return fmt.Errorf("%w: %s: %v period %v", ErrExplain, p.CFG.Name, alpha.Event(e), per)
		}
	}
	if prof.Periods[alpha.EvCycles] <= 0 {
		return fmt.Errorf("%w: %s: no CYCLES period: S cannot be turned into cycles", ErrExplain, p.CFG.Name)
	}
	for pc, c := range prof.Samples {
		if c == nil {
			continue
		}
		for e, n := range c {
			if n < 0 || math.IsNaN(n) || math.IsInf(n, 0) {
				return fmt.Errorf("%w: %s: %v samples %v at %#x", ErrExplain, p.CFG.Name, alpha.Event(e), n, pc)
			}
		}
	}
	return nil
}

// explainer holds what the rules read: the code, where calls are, the
// samples and the options.
type explainer struct {
	p    *Procedure
	f    *Frequencies
	prof *Profile
	opt  ExplainOptions
	tp   *timing.Params
	// call marks the instructions after which control is elsewhere
	// before it comes back: bsr, jsr and callsys.
	call map[uint64]bool
	// lineShift and pageShift give an address's fetch block and page.
	lineShift, pageShift uint
	// maxLat is the longest result latency of any operation (a cached
	// load's included); unitBusy the longest busy time of each unit.
	maxLat   int
	unitBusy [alpha.NumUnits]int
}

func newExplainer(p *Procedure, f *Frequencies, prof *Profile, opt ExplainOptions) *explainer {
	x := &explainer{p: p, f: f, prof: prof, opt: opt, tp: &opt.Timing, call: map[uint64]bool{}}
	for _, c := range p.CFG.Calls {
		x.call[c.PC] = true
	}
	for _, in := range p.CFG.Insns {
		if in.Dec.Op == alpha.OpCallPal && in.Dec.Imm == 0x83 { // callsys: the kernel runs, fetch restarts
			x.call[in.PC] = true
		}
	}
	for n := 1; n < opt.Timing.IcacheLine; n <<= 1 {
		x.lineShift++
	}
	x.pageShift = opt.Timing.PageShift
	x.maxLat = int(opt.Timing.DcacheLatency)
	// ClassOf gives the zero class past the last operation; 1024 is far
	// beyond it.
	for op := alpha.Op(0); op < 1024; op++ {
		cl := alpha.ClassOf(op)
		x.maxLat = max(x.maxLat, int(cl.Lat))
		x.unitBusy[cl.Unit] = max(x.unitBusy[cl.Unit], int(cl.Busy))
	}
	return x
}

// insn returns the decoded instruction at (b, k).
func (x *explainer) insn(b, k int) cfg.Insn { return x.p.CFG.BlockInsns(b)[k] }

// cycle returns the schedule's issue cycle of (b, k) counted from the
// block's start.
func (x *explainer) cycle(b, k int) int { return x.p.Sched[b].Insns[k].Cycle }

// blockCycles is block b's best-case time.
func (x *explainer) blockCycles(b int) int { return x.p.Sched[b].Cycles }

// candidates tests every dynamic cause for the stall of (b, k), which
// executes F times per CYCLES period and stalls dynamic cycles.
func (x *explainer) candidates(b, k int, F, dynamic float64) []Candidate {
	var out []Candidate
	add := func(c Cause, culprit uint64, bound float64) {
		if bound < x.opt.Negligible*dynamic {
			return // the event samples rule it out
		}
		for i := range out {
			if out[i].Cause == c && out[i].Culprit == culprit {
				out[i].Bound = max(out[i].Bound, bound)
				return
			}
		}
		out = append(out, Candidate{Cause: c, Culprit: culprit, Bound: bound})
	}
	in := x.insn(b, k)
	cl := alpha.ClassOf(in.Dec.Op)
	tp := x.tp
	pc := in.PC
	afterCall := k > 0 && x.call[pc-4]

	// Fetch: an I-cache or ITB miss can stall only an instruction that
	// enters a new fetch block, and an ITB miss only one that enters a new
	// page.
	newLine, newPage := x.fetchChange(b, k, F, afterCall)
	if newLine {
		add(ICache, 0, x.bound(alpha.EvIMiss, F, float64(tp.IcacheMissMemory), x.after(b, k, F)))
	}
	if newPage {
		add(ITB, 0, x.bound(alpha.EvITBMiss, F, float64(tp.ITBMissCycles+tp.IcacheMissMemory), x.after(b, k, F)))
	}

	// The instruction's own memory access: a DTB miss (PALcode refill),
	// a load replayed on a full miss address file, a store on a full
	// write buffer, a barrier draining both.
	if isLoad(in.Dec.Op) || cl.Store {
		add(DTB, 0, x.bound(alpha.EvDTBMiss, F, float64(tp.DTBMissCycles), x.after(b, k, F)))
	}
	if isLoad(in.Dec.Op) {
		add(DCache, 0, x.bound(alpha.EvDMiss, F, float64(x.replay(tp.MemoryLatency)), x.after(b, k, F)))
	}
	if cl.Store {
		wait := x.replay(uint64(tp.WriteBufferEntries) * tp.WriteBufferRetire)
		add(WriteBuffer, 0, x.bound(alpha.EvWBFull, F, float64(wait), x.after(b, k, F)))
	}
	if cl.Barrier {
		add(Sync, 0, math.Inf(1))
	}

	// Values: a source register loaded within a memory latency before,
	// or produced before the block by code its schedule did not see. One
	// execution of the producer (or call, or entry) can stall at most one
	// execution of the consumer (the register is ready after that wait),
	// so its frequency bounds the stall: a producer before a loop that
	// runs many times per entry is ruled out.
	for _, r := range sources(in.Dec, cl) {
		for _, h := range x.walkBack(b, k, int(tp.MemoryLatency), func(w cfg.Insn) bool { return writes(w.Dec, r) }) {
			switch h.kind {
			case hitMatch:
				wcl := alpha.ClassOf(h.in.Dec.Op)
				lat := int(wcl.Lat)
				hb, hk := x.locate(h.in.PC)
				if isLoad(h.in.Dec.Op) {
					lat = int(tp.DcacheLatency)
					miss := float64(tp.MemoryLatency)
					add(DCache, h.in.PC, min(x.bound(alpha.EvDMiss, F, miss, x.after(hb, hk, F)), x.once(x.blockFreq(hb), F, miss)))
				}
				if !h.inRegion && h.d < lat {
					add(Other, h.in.PC, x.once(x.blockFreq(hb), F, float64(lat-h.d)))
				}
			case hitCall, hitEntry:
				fw := x.entryFreq()
				if h.kind == hitCall {
					cb, _ := x.locate(h.pc)
					fw = x.blockFreq(cb)
				}
				add(DCache, h.pc, x.once(fw, F, float64(tp.MemoryLatency)))
				if h.d < x.maxLat {
					add(Other, h.pc, x.once(fw, F, float64(x.maxLat-h.d)))
				}
			}
		}
	}

	// A non-pipelined unit left busy by code before the block's schedule.
	if cl.Unit != alpha.UnitNone {
		cause := IMULBusy
		if cl.Unit == alpha.UnitFDiv {
			cause = FDIVBusy
		}
		u := cl.Unit
		for _, h := range x.walkBack(b, k, x.unitBusy[u], func(w cfg.Insn) bool { return alpha.ClassOf(w.Dec.Op).Unit == u }) {
			switch h.kind {
			case hitMatch:
				if busy := int(alpha.ClassOf(h.in.Dec.Op).Busy); !h.inRegion && h.d < busy {
					hb, _ := x.locate(h.in.PC)
					add(cause, h.in.PC, x.once(x.blockFreq(hb), F, float64(busy-h.d)))
				}
			case hitCall, hitEntry:
				fw := x.entryFreq()
				if h.kind == hitCall {
					cb, _ := x.locate(h.pc)
					fw = x.blockFreq(cb)
				}
				add(cause, h.pc, x.once(fw, F, float64(x.unitBusy[u]-h.d)))
			}
		}
	}

	// A mispredicted branch, jump or return: the instruction control
	// reaches after it waits for the refetch.
	for _, culprit := range x.mispredictCulprits(b, k, afterCall) {
		add(Mispredict, culprit, x.bound(alpha.EvBranchMP, F, float64(tp.MispredictPenalty), x.from(b, k, F)))
	}
	return out
}

func isLoad(op alpha.Op) bool {
	return alpha.ClassOf(op).Load && op != alpha.OpFETCH && op != alpha.OpWH64 && op != alpha.OpECB
}

// reg is a register: 0-31 integer, 32-63 FP (SinkReg folded onto 31, as
// the issue model's &63 does).
type reg uint8

func sources(d alpha.Decoded, cl alpha.IssueClass) []reg {
	var out []reg
	if cl.ReadsA {
		out = append(out, regOf(d.Ra, cl.FPA))
	}
	if cl.ReadsB && !d.Lit {
		out = append(out, regOf(d.Rb, cl.FPB))
	}
	return out
}

func regOf(r uint8, fp bool) reg {
	r &= 63
	if r == alpha.SinkReg {
		r = 31
	}
	if fp {
		return reg(r) + 32
	}
	return reg(r)
}

// writes reports whether d writes r.
func writes(d alpha.Decoded, r reg) bool {
	cl := alpha.ClassOf(d.Op)
	switch cl.Writes {
	case 'a':
		return regOf(d.Ra, cl.FPDst) == r
	case 'c':
		return regOf(d.Rc, cl.FPDst) == r
	}
	return false
}

// replay rounds a wait up to whole replay traps, as the hierarchy does.
func (x *explainer) replay(wait uint64) uint64 {
	r := x.tp.ReplayTrapCycles
	return (wait + r - 1) / r * r
}

// locate returns the block and index of pc.
func (x *explainer) locate(pc uint64) (int, int) {
	b, _ := x.p.CFG.BlockOf(pc)
	return b, int((pc - x.p.CFG.Blocks[b].Start) / 4)
}

// rare reports whether edge e is executed much less often than F.
func (x *explainer) rare(e int, F float64) bool {
	ee := x.f.Edge(e)
	return ee.Known() && ee.F*x.opt.RareEdge < F
}

// fetchChange reports whether the instruction at (b, k) may enter a new
// fetch block and a new page: the instruction executed before it lies in
// another (hwsim fetches when the 32-byte block changes, and looks the ITB
// up when the page does). Inside a block that is the instruction after
// pc-4, unless pc-4 called elsewhere; at a block head, the last
// instruction of every predecessor that is not rare (Entry's are the
// callers', unknown).
func (x *explainer) fetchChange(b, k int, F float64, afterCall bool) (line, page bool) {
	pc := x.p.CFG.Blocks[b].Start + 4*uint64(k)
	if afterCall {
		return true, true
	}
	if k > 0 {
		return pc>>x.lineShift != (pc-4)>>x.lineShift, pc>>x.pageShift != (pc-4)>>x.pageShift
	}
	for _, e := range x.p.CFG.Blocks[b].Preds {
		if x.rare(e, F) {
			continue
		}
		from := x.p.CFG.Edges[e].From
		if from < 0 || from >= len(x.p.CFG.Blocks) {
			return true, true // from the caller
		}
		last := x.p.CFG.Blocks[from].End - 4
		line = line || last>>x.lineShift != pc>>x.lineShift
		page = page || last>>x.pageShift != pc>>x.pageShift
	}
	return line, page
}

// once bounds, per execution of an instruction executing F times per
// CYCLES period, a stall of at most cost cycles that each execution of a
// culprit executing fw times per period can cause once: fw·cost/F
// (+Inf when fw is unknown, a negative number). Only a culprit that runs
// less often than the instruction gets a bound this way: a culprit as
// frequent bounds nothing the stall itself does not.
func (x *explainer) once(fw, F, cost float64) float64 {
	if fw < 0 || fw >= F {
		return math.Inf(1)
	}
	return fw * cost / F
}

// blockFreq is block b's estimated frequency, or -1 if it has none.
func (x *explainer) blockFreq(b int) float64 {
	if est := x.f.Block(b); est.Known() {
		return est.F
	}
	return -1
}

// entryFreq is how often the procedure is entered: the sum of the edges
// into it from outside, or -1 if one has no estimate.
func (x *explainer) entryFreq() float64 {
	sum := 0.0
	for b := range x.p.CFG.Blocks {
		for _, e := range x.p.CFG.Blocks[b].Preds {
			if from := x.p.CFG.Edges[e].From; from >= 0 && from < len(x.p.CFG.Blocks) {
				continue
			}
			est := x.f.Edge(e)
			if !est.Known() {
				return -1
			}
			sum += est.F
		}
	}
	return sum
}

// mispredictCulprits returns the predicted control transfers that may
// have sent control to (b, k) late: at a block head, the conditional
// branch or jump ending each predecessor (0 for a caller's jsr); after a
// call, the call (the callee's return).
func (x *explainer) mispredictCulprits(b, k int, afterCall bool) []uint64 {
	if afterCall {
		return []uint64{x.p.CFG.Blocks[b].Start + 4*uint64(k) - 4}
	}
	if k > 0 {
		return nil
	}
	var out []uint64
	for _, e := range x.p.CFG.Blocks[b].Preds {
		from := x.p.CFG.Edges[e].From
		if from < 0 || from >= len(x.p.CFG.Blocks) {
			out = append(out, 0)
			continue
		}
		last := x.insn(from, x.p.CFG.Blocks[from].Len()-1)
		if cl := alpha.ClassOf(last.Dec.Op); cl.Branch || cl.Jump && !x.call[last.PC] {
			out = append(out, last.PC)
		}
	}
	return out
}

// upper is the most events n samples can stand for, sampling error
// allowed: the upper end of the Poisson score interval.
func (x *explainer) upper(n float64) float64 {
	z := x.opt.Margin
	r := math.Sqrt(n+z*z/4) + z/2
	return r * r
}

// bound returns the most cycles per execution (of an instruction
// executing F times per CYCLES period) that events of kind e can explain
// at cost cycles each, given the samples in the window where they land;
// +Inf when e was not sampled or the window leaves the procedure.
func (x *explainer) bound(e alpha.Event, F, cost float64, w window) float64 {
	per := x.prof.Periods[e]
	if per == 0 || !w.ok {
		return math.Inf(1)
	}
	n := 0.0
	for _, pc := range w.pcs {
		n += x.prof.At(pc, e)
	}
	return x.upper(n)*per*cost/(F*x.prof.Periods[alpha.EvCycles]) + w.leak*cost/F
}

// window is where the samples of an event land: the instructions at the
// head of the issue queue Skid cycles after the instruction that caused
// it. ok is false when some of them may lie outside the procedure.
type window struct {
	pcs []uint64
	ok  bool
	// leak is the frequency of the rare edges by which the window leaves
	// the procedure: at most one event per execution of them is lost.
	leak float64
}

// after is the window of an event caused by (b, k) itself: the
// instructions after it up to and including the first one the schedule
// puts Skid or more cycles after it, along every successor. Dynamic
// stalls only bring that instruction earlier.
func (x *explainer) after(b, k int, F float64) window { return x.forward(b, k+1, -x.cycle(b, k), F) }

// from is the window of an event caused just before (b, k), by the
// control transfer that reached it: the instruction itself and on.
func (x *explainer) from(b, k int, F float64) window { return x.forward(b, k, 1-x.cycle(b, k), F) }

// forward collects, from instruction k of block b on, every instruction
// whose best-case distance from the event is below Skid and the first
// one at or past it, where the distance of instruction j of a block is
// base + its schedule cycle. Crossing into a successor, the base is the
// distance of the block's last instruction less one (the successor's
// first may issue with it). An edge out of the procedure that is rare
// next to F, the frequency of the instruction the window is for, adds its
// frequency to the leak; any other makes the window unknown.
func (x *explainer) forward(b, k, base int, F float64) window {
	skid := x.opt.Skid
	seen := map[uint64]bool{}
	var w window
	best := map[int]int{}
	type item struct{ b, k, base int }
	work := []item{{b, k, base}}
	for len(work) > 0 {
		it := work[len(work)-1]
		work = work[:len(work)-1]
		n := x.p.CFG.Blocks[it.b].Len()
		j := it.k
		for ; j < n; j++ {
			in := x.insn(it.b, j)
			if !seen[in.PC] {
				seen[in.PC] = true
				w.pcs = append(w.pcs, in.PC)
			}
			d := it.base + x.cycle(it.b, j)
			if d >= skid {
				break
			}
			if x.call[in.PC] {
				return window{} // the next instruction is the callee's
			}
		}
		if j < n {
			continue
		}
		last := it.base + x.blockCycles(it.b)
		succs := x.p.CFG.Blocks[it.b].Succs
		if len(succs) == 0 {
			return window{} // a jmp whose targets are unknown
		}
		for _, e := range succs {
			to := x.p.CFG.Edges[e].To
			if to < 0 || to >= len(x.p.CFG.Blocks) {
				if !x.rare(e, F) {
					return window{} // a return or a jump out
				}
				w.leak += x.f.Edge(e).F
				continue
			}
			nb := last - 1
			if old, ok := best[to]; ok && old <= nb {
				continue
			}
			best[to] = nb
			work = append(work, item{to, 0, nb})
		}
	}
	w.ok = true
	return w
}

// hitKind is what a backward walk found.
type hitKind uint8

const (
	hitMatch hitKind = iota // an instruction that matched
	hitCall                 // a call (or callsys): the callee may have done it
	hitEntry                // the procedure's entry: the caller may have
)

// hit is one find of walkBack: d is the best-case cycles from it to the
// instruction walked from; inRegion says it lies in the code that
// instruction's schedule saw (its block, and the predecessor it was
// scheduled after).
type hit struct {
	kind     hitKind
	in       cfg.Insn
	pc       uint64 // the call's, or 0 for the entry
	d        int
	inRegion bool
}

// walkBack searches backwards from (b, k), along every path, for the
// nearest instruction that matches, a call, or the entry, within budget
// best-case cycles: on each path the first of them is a hit. Blocks are
// visited in order of their least distance (Dijkstra), once each.
func (x *explainer) walkBack(b, k, budget int, match func(cfg.Insn) bool) []hit {
	var out []hit
	c0 := x.cycle(b, k)
	// In b itself, before k.
	for j := k - 1; j >= 0; j-- {
		d := c0 - x.cycle(b, j)
		if d >= budget {
			return out
		}
		in := x.insn(b, j)
		if x.call[in.PC] {
			return append(out, hit{kind: hitCall, pc: in.PC, d: d, inRegion: true})
		}
		if match(in) {
			return append(out, hit{kind: hitMatch, in: in, d: d, inRegion: true})
		}
	}
	// The distance from the last instruction of a predecessor to (b, k).
	dist := map[int]int{}
	q := &distHeap{}
	entrySeen := false
	relax := func(to int, d int) {
		if d >= budget {
			return
		}
		if to < 0 || to >= len(x.p.CFG.Blocks) {
			if !entrySeen {
				entrySeen = true
				out = append(out, hit{kind: hitEntry, d: d})
			}
			return
		}
		if old, ok := dist[to]; ok && old <= d {
			return
		}
		dist[to] = d
		heap.Push(q, distItem{to, d})
	}
	for _, e := range x.p.CFG.Blocks[b].Preds {
		relax(x.p.CFG.Edges[e].From, max(c0-1, 0))
	}
	done := map[int]bool{}
	for q.Len() > 0 {
		it := heap.Pop(q).(distItem)
		if done[it.b] || dist[it.b] != it.d {
			continue
		}
		done[it.b] = true
		region := it.b == x.p.Pred[b] && it.b != b
		n := x.p.CFG.Blocks[it.b].Len()
		end := x.blockCycles(it.b)
		found := false
		for j := n - 1; j >= 0; j-- {
			d := it.d + end - x.cycle(it.b, j)
			if d >= budget {
				found = true // nothing further back on this path counts
				break
			}
			in := x.insn(it.b, j)
			if x.call[in.PC] {
				out = append(out, hit{kind: hitCall, pc: in.PC, d: d, inRegion: region})
				found = true
				break
			}
			if match(in) {
				out = append(out, hit{kind: hitMatch, in: in, d: d, inRegion: region})
				found = true
				break
			}
		}
		if found {
			continue
		}
		for _, e := range x.p.CFG.Blocks[it.b].Preds {
			relax(x.p.CFG.Edges[e].From, it.d+max(end-1, 0))
		}
	}
	return out
}

type distItem struct{ b, d int }

type distHeap []distItem

func (h distHeap) Len() int           { return len(h) }
func (h distHeap) Less(i, j int) bool { return h[i].d < h[j].d }
func (h distHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *distHeap) Push(v any)        { *h = append(*h, v.(distItem)) }
func (h *distHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}
