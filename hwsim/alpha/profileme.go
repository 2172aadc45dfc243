package alpha

import (
	"fmt"
	"math/rand/v2"
)

// ProfileMe (ProfileMe paper, sec. 4.1-4.3): a fetched-instruction
// counter chooses one instruction in a random interval, the instruction's
// tag makes the pipeline record what happened to it in the profile
// registers, and an interrupt is raised once the record is complete.
// Neither the 21164 nor the 21264 had ProfileMe; this is the paper's
// hardware, one unit (ProfileMe) for both timing models: the 21164's
// issue model (pipeline.go, Run) feeds it here, the 21264 core (package
// ev6) through its observer, which package hwsim wires to Fetch and
// Complete.
//
// What the counter counts. On the 21264 core: every instruction fetched
// on the predicted path, wrong-path ones included (they are recorded as
// squashed, TrapSquash). The 21164 model executes only the correct path:
// a mispredicted branch costs its refetch cycles, but the wrong-path
// instructions are never fetched in the model, so the counter decrements
// once per instruction that issues. On both, an instruction aborted by an
// interrupt (the one the interrupt is taken at: it was fetched, is
// flushed and is fetched again afterwards) is counted and may be sampled;
// an instruction the simulator stops before at a quantum boundary has not
// been fetched yet in the model and is counted when it is. With
// SetCountSlots the counter counts fetch opportunities instead, four a
// cycle (sec. 4.1.1).
//
// What a record holds (MeRecord): the context (the OS's process tag), the
// PC, the effective address of a load or store or the target of a jump,
// the event bits, whether the instruction retired or why it aborted, the
// path history, the cycles it was fetched and finished, and latencies:
// on the 21164 the cycles the instruction spent at the head of the issue
// queue, split by stall cause as the issue model charges them, and a
// load's issue-to-data latency; on the 21264 Table 1's stages. Neither
// model's latencies are invented for the other.
//
// Paired sampling (sec. 4.2, SetPaired): the interval is the major one
// and chooses a pair's first instruction; a minor interval uniform in
// [1, W] chooses the second. The first's record waits in the unit until
// the second's completes, and the two go into consecutive register
// copies, or are lost together.
//
// Delivery (sec. 4.1.4, 4.3): the record is copied into one of N register
// copies once all activity of the instruction is over (for a load, when
// its data has returned); the counter keeps counting meanwhile, reloaded
// from the unit's own pseudo-random generator, since with several copies
// software does not see every interval. When the copies cannot take
// another sample, an interrupt is raised; a record that completes while
// they are full is lost and counted in Lost, so software can tell samples
// generated from samples delivered. The interrupt is deferred at IPL >= 6
// like the counters'.

// MeEvents is the profiled event register: what happened to one profiled
// instruction.
type MeEvents uint16

// The event bits.
const (
	MeRetired    MeEvents = 1 << iota // the instruction retired (else it aborted: MeRecord.Abort)
	MeTaken                           // a branch or jump that transferred control
	MeMispredict                      // a branch, jump or return whose target was mispredicted
	MeIMiss                           // its fetch missed the I-cache
	MeITBMiss                         // its fetch missed the ITB
	MeDMiss                           // a load that missed the D-cache
	MeDTBMiss                         // a load or store that missed the DTB
	MeSMiss                           // its access (fetch or data) missed the S-cache
	MeBMiss                           // and the board cache
	MeWBFull                          // a store replayed on a full write buffer (a resource conflict)
	NumMeEvents  = 10
)

var meEventNames = [NumMeEvents]string{"retired", "taken", "mispredict", "imiss", "itbmiss",
	"dmiss", "dtbmiss", "smiss", "bmiss", "wbfull"}

// MeEventName is the name of event bit i (0 to NumMeEvents-1).
func MeEventName(i int) string {
	if i < 0 || i >= NumMeEvents {
		return fmt.Sprintf("meevent(%d)", i)
	}
	return meEventNames[i]
}

// MeEventByName finds an event bit's index by name.
func MeEventByName(name string) (int, error) {
	for i, n := range meEventNames {
		if n == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown ProfileMe event %q (known: %v)", name, meEventNames)
}

// Has reports whether bit i is set.
func (e MeEvents) Has(i int) bool { return e&(1<<i) != 0 }

// MeRecord is one set of profile registers.
type MeRecord struct {
	Context uint64 // the OS's context tag (ProfileMe.Context when the instruction was tagged)
	Kernel  bool   // the instruction ran in kernel mode
	PC      uint64
	// Addr is a load's or store's effective address, or an indirect
	// jump's target; 0 for other instructions.
	Addr   uint64
	Events MeEvents
	// Abort is why an instruction that did not retire aborted: the trap
	// it raised (a fault), TrapEvent for an interrupt taken while it
	// waited to issue (or, on the 21264, to retire), or TrapSquash for a
	// 21264 wrong-path instruction. TrapNone for a retired instruction.
	Abort TrapKind
	// Head is the cycles the instruction spent at the head of the issue
	// queue (its issue cycle less the previous instruction's; 0 when it
	// dual-issued), Stall the part of them each cause accounts for; for
	// an aborted instruction, the cycles it waited before the interrupt,
	// with no causes. Both are the 21164's: zero on the 21264 (Stages).
	// LoadLatency is a load's cycles from issue to data.
	Head        uint32
	Stall       [NumStallCauses]uint32
	LoadLatency uint32
	// Done is the cycle all activity of the instruction was over: the
	// earliest the interrupt may be delivered.
	Done uint64
	// History is the path-history register (sec. 4.1.3, 5.3): the
	// directions of the most recent conditional branches fetched before
	// this instruction on its (predicted) path, newest in bit 0, 1 =
	// taken. MeHistoryBits bits are kept.
	History uint16
	// Stages are the 21264's Table 1 latencies in cycles, indexed by
	// MeFetchToMap to MeRetReadyToRetire. Zero on the 21164, which has no
	// such stages (Head and Stall are its honest latencies).
	Stages [NumMeStages]uint32
	// Fetched and Finished are the cycles the instruction was fetched and
	// retired (or was squashed or aborted): the pair estimators compute
	// overlap from them.
	Fetched, Finished uint64
	// Pair is the record's role in paired sampling (sec. 4.2). A pair is
	// delivered as two consecutive records, first then second, in one
	// interrupt.
	Pair MePairRole
	// PairDistance is the fetch distance from the first to the second
	// instruction of a pair (fetched instructions, or fetch opportunities
	// when the counter counts those), set in both records; 0 for MeSingle.
	PairDistance uint32
}

// MeHistoryBits is the length of the path-history register.
const MeHistoryBits = 16

// The Table 1 stage latencies, as indices into MeRecord.Stages.
const (
	MeFetchToMap       = iota // stalls for physical registers or issue-queue slots
	MeMapToReady              // stalls on data dependences
	MeReadyToIssue            // stalls on execution resources
	MeIssueToRetReady         // execution latency
	MeRetReadyToRetire        // stalls behind older unretired instructions
	NumMeStages
)

var meStageNames = [NumMeStages]string{"fetch-map", "map-ready", "ready-issue", "issue-retready", "retready-retire"}

// MeStageName is the name of stage latency i (0 to NumMeStages-1).
func MeStageName(i int) string {
	if i < 0 || i >= NumMeStages {
		return fmt.Sprintf("mestage(%d)", i)
	}
	return meStageNames[i]
}

// MePairRole is a record's place in paired sampling.
type MePairRole uint8

// The roles.
const (
	MeSingle MePairRole = iota // single-instruction sampling
	MeFirst                    // the first instruction of a pair
	MeSecond                   // the second, PairDistance fetches after the first
)

func (r MePairRole) String() string {
	switch r {
	case MeSingle:
		return "single"
	case MeFirst:
		return "first"
	case MeSecond:
		return "second"
	}
	return fmt.Sprintf("pair(%d)", uint8(r))
}

// Retired reports whether the instruction retired.
func (r *MeRecord) Retired() bool { return r.Events&MeRetired != 0 }

// ProfileMe is one CPU's ProfileMe hardware. The OS programs it with
// NewProfileMe, SetPaired and SetCountSlots, and writes Context at every
// context switch.
type ProfileMe struct {
	// Context is the context register the OS writes: it tags each record.
	Context uint64

	min, max uint64
	left     uint64 // fetches (or fetch opportunities) until the next tag
	rng      *rand.Rand
	copies   int
	buf      []MeRecord
	// deliverAt is the cycle the pending interrupt is due (0: none).
	deliverAt uint64

	// Paired sampling (sec. 4.2): window is W (0: off); minor counts the
	// fetches to a pair's second while pending, and dist is that pair's
	// distance. held is the pair's first record, complete, waiting for
	// its second: a pair is delivered whole or lost whole.
	window  uint64
	minor   uint64
	pending bool
	dist    uint32
	held    MeRecord
	holding bool

	// Counting fetch opportunities (sec. 4.1.1): slotCycle is the cycle of
	// the last opportunity counted and slot its index in that cycle.
	slots     bool
	slotCycle uint64
	slot      uint64

	// Tags counts instructions tagged, Lost the records that found no
	// free register copy (or whose pair partner was never recorded).
	// Tags = delivered + Lost + Buffered(). LostPairs counts the pairs
	// among the losses, Empty the fetch opportunities chosen that held no
	// instruction (not tags: there is no record).
	Tags, Lost, LostPairs, Empty uint64
}

// MeFetchSlots is the fetch opportunities a cycle when the counter counts
// them: the 21264 fetches four instructions a cycle, and the 21164 issues
// up to four.
const MeFetchSlots = 4

// NewProfileMe returns a unit choosing one instruction every [min, max]
// fetched instructions (uniformly), with copies register copies, seeded.
func NewProfileMe(min, max uint64, copies int, seed uint64) (*ProfileMe, error) {
	if min < 1 || max < min || max > 1<<32 {
		return nil, fmt.Errorf("alpha: ProfileMe interval [%d, %d]: want 1 <= min <= max <= %d", min, max, uint64(1)<<32)
	}
	if copies < 1 || copies > 64 {
		return nil, fmt.Errorf("alpha: ProfileMe with %d register copies: want 1 to 64", copies)
	}
	p := &ProfileMe{min: min, max: max, copies: copies, rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)),
		buf: make([]MeRecord, 0, copies)}
	p.reload()
	return p, nil
}

// SetPaired turns on paired sampling with window w: the interval chooses
// a pair's first instruction (the major interval), and the second is
// chosen a minor interval uniform in [1, w] fetches later. w must be
// below the major interval's minimum, so that a pair is complete before
// the next one starts, and two copies must hold a pair.
func (p *ProfileMe) SetPaired(w uint64) error {
	if w < 1 || w >= p.min {
		return fmt.Errorf("alpha: ProfileMe pair window %d: want 1 <= W < the major interval's minimum %d", w, p.min)
	}
	if p.copies < 2 {
		return fmt.Errorf("alpha: paired ProfileMe with %d register copy: a pair needs 2", p.copies)
	}
	p.window = w
	return nil
}

// SetCountSlots makes the counter count fetch opportunities,
// MeFetchSlots a cycle, instead of fetched instructions; the callers
// then say the cycle each instruction was fetched in.
func (p *ProfileMe) SetCountSlots(on bool) { p.slots = on }

// Paired reports whether paired sampling is on, and its window.
func (p *ProfileMe) Paired() (w uint64, on bool) { return p.window, p.window != 0 }

func (p *ProfileMe) reload() {
	p.left = p.min
	if p.max > p.min {
		p.left += p.rng.Uint64N(p.max - p.min + 1)
	}
}

// Stop stops the counter: no instruction is tagged after it (the count
// is set 2^64-1 fetches away), a pair whose second is not tagged yet is
// lost, and the records in the register copies stay there for the OS to
// read with Take.
func (p *ProfileMe) Stop() {
	p.left = ^uint64(0)
	p.AbandonPair()
}

// AbandonPair loses the pair under way, whose first is recorded and whose
// second is not tagged yet, as the OS does when it reads the copies to
// stop profiling: its partner will never be recorded.
func (p *ProfileMe) AbandonPair() {
	if p.pending {
		p.pending = false
		p.minor = 0
	}
	if p.holding {
		p.holding = false
		p.Lost++
		p.LostPairs++
	}
}

// Fetch counts one instruction fetched at cycle (the cycle matters only
// when counting fetch opportunities) and reports whether it is tagged,
// and if so its role in a pair and the pair's distance. A core that
// times instructions itself (the 21264's, through its observer) calls it
// for every instruction it fetches, in fetch order.
func (p *ProfileMe) Fetch(cycle uint64) (tagged bool, role MePairRole, dist uint32) {
	n := uint64(1)
	if p.slots {
		n = p.opportunities(cycle)
	}
	// The opportunities before the instruction's own held nothing: a tag
	// that falls on one is spent (and a pair whose second falls on one
	// loses its first).
	for empty := n - 1; empty > 0; {
		step := p.left
		if p.pending {
			step = min(step, p.minor)
		}
		if step > empty {
			p.left -= empty
			if p.pending {
				p.minor -= empty
			}
			break
		}
		empty -= step
		p.left -= step
		if p.pending {
			if p.minor -= step; p.minor == 0 {
				p.Empty++
				p.pending = false
				p.AbandonPair()
			}
		}
		if p.left == 0 {
			p.Empty++
			p.reload()
		}
	}
	if p.pending {
		if p.minor--; p.minor == 0 {
			p.pending = false
			p.left-- // the major interval counts on: it cannot end here (W < min)
			p.Tags++
			return true, MeSecond, p.dist
		}
	}
	p.left--
	if p.left != 0 {
		return false, MeSingle, 0
	}
	p.reload()
	p.Tags++
	if p.window == 0 {
		return true, MeSingle, 0
	}
	p.minor = 1 + p.rng.Uint64N(p.window)
	p.dist = uint32(p.minor)
	p.pending = true
	return true, MeFirst, p.dist
}

// opportunities returns how many fetch opportunities go by up to and
// including the one of an instruction fetched at cycle: the rest of the
// last counted cycle's, MeFetchSlots for every cycle in between, and one.
func (p *ProfileMe) opportunities(cycle uint64) uint64 {
	if cycle <= p.slotCycle && p.slotCycle != 0 {
		if p.slot+1 < MeFetchSlots {
			p.slot++
			return 1
		}
		cycle = p.slotCycle + 1 // a fifth in one cycle: the next cycle's
	}
	var n uint64
	if p.slotCycle != 0 {
		n = MeFetchSlots - 1 - p.slot + MeFetchSlots*(cycle-p.slotCycle-1)
	}
	p.slotCycle, p.slot = cycle, 0
	return n + 1
}

// fetched counts one fetched instruction at cycle and, when it is tagged,
// starts its record: context, mode, pair role and distance.
func (p *ProfileMe) fetched(cycle uint64, r *MeRecord, kernel bool) bool {
	tagged, role, dist := p.Fetch(cycle)
	if !tagged {
		return false
	}
	*r = MeRecord{Context: p.Context, Kernel: kernel, Pair: role, PairDistance: dist, Fetched: cycle}
	return true
}

// Complete hands the unit a tagged instruction's finished record: a
// single one goes to a free register copy, a pair's first waits for its
// second, and a pair goes to two consecutive copies or is lost whole. The
// interrupt is raised when the copies cannot take another sample.
func (p *ProfileMe) Complete(r *MeRecord, pmu *PMU) {
	switch r.Pair {
	case MeFirst:
		if p.holding { // cannot happen: a second always completes first
			p.Lost++
			p.LostPairs++
		}
		p.held, p.holding = *r, true
		return
	case MeSecond:
		if !p.holding { // its first was abandoned
			p.Lost++
			return
		}
		p.holding = false
		if len(p.buf)+2 > p.copies {
			p.Lost += 2
			p.LostPairs++
			return
		}
		p.buf = append(p.buf, p.held, *r)
	default:
		if len(p.buf) == p.copies {
			p.Lost++
			return
		}
		p.buf = append(p.buf, *r)
	}
	unit := 1
	if p.window != 0 {
		unit = 2
	}
	if len(p.buf)+unit > p.copies {
		p.deliverAt = max(p.deliverAt, 1)
		for _, b := range p.buf {
			p.deliverAt = max(p.deliverAt, b.Done)
		}
		pmu.meDeliver = p.deliverAt
		pmu.update()
	}
}

// Due returns the cycle the pending interrupt is due, or 0.
func (p *ProfileMe) Due() uint64 { return p.deliverAt }

// Buffered is how many records wait in the unit: in the register copies,
// and a pair's first waiting for its second.
func (p *ProfileMe) Buffered() int {
	if p.holding {
		return len(p.buf) + 1
	}
	return len(p.buf)
}

// Take hands the interrupt handler every buffered record (appended to
// dst) and clears the copies and the pending interrupt. The OS also calls
// it with no interrupt pending to read a partial set, as when profiling
// stops. A pair's first waiting for its second stays.
func (p *ProfileMe) Take(dst []MeRecord, pmu *PMU) []MeRecord {
	dst = append(dst, p.buf...)
	p.buf = p.buf[:0]
	p.deliverAt = 0
	pmu.meDeliver = 0
	pmu.update()
	return dst
}

// meTag is the record of the tagged instruction in flight in Run.
type meTag struct {
	on  bool
	rec MeRecord
}

// meStart counts instruction d, about to issue at cycle at, as fetched
// and tags it if it is chosen; the effective address is taken before it
// executes, since a load may overwrite its base register. On the 21164
// the issue cycle stands for the fetch cycle: the model has no fetch
// stage of its own.
func (c *CPU) meStart(d *Decoded, at uint64) {
	if !c.Me.fetched(at, &c.meTag.rec, c.Kernel) {
		return
	}
	c.meTag.on = true
	c.meTag.rec.History = c.meHist
	if cl := &classOf[d.Op]; cl.Load || cl.Store {
		c.meTag.rec.Addr = uint64(d.Imm) + c.R[d.Rb&63]
	}
}

// meRetire fills the record of the tagged instruction d at pc, which
// issued at cycle at after head cycles at the head of the queue and has
// just committed, and completes it.
func (c *CPU) meRetire(d *Decoded, pc, at, head uint64) {
	r := &c.meTag.rec
	c.meTag.on = false
	r.PC, r.Events, r.Done, r.Finished = pc, MeRetired, at, at
	cl := &classOf[d.Op]
	if cl.Jump {
		r.Addr = c.PC
	}
	if (cl.Branch || cl.Jump || d.Op == OpBR) && c.PC != pc+4 {
		r.Events |= MeTaken
	}
	if tm := c.Timing; tm != nil {
		r.Head = uint32(min(head, 1<<32-1))
		r.Stall = tm.why
		ev := tm.events
		for _, m := range meFromEvent {
			if ev.Has(m.ev) {
				r.Events |= m.bit
			}
		}
		if cl.Load && d.Op != OpFETCH && d.Op != OpWH64 && d.Op != OpECB {
			r.LoadLatency = uint32(min(tm.lat, 1<<32-1))
			r.Done = at + tm.lat
			r.Finished = r.Done
		}
	}
	c.Me.Complete(r, &c.PMU)
}

// MeFromEvents maps a set of the counters' events to event bits.
func MeFromEvents(ev EventSet) MeEvents {
	var e MeEvents
	for _, m := range meFromEvent {
		if ev.Has(m.ev) {
			e |= m.bit
		}
	}
	return e
}

// meBranch shifts the direction of the conditional branch d at pc, whose
// successor is next, into the path-history register. The 21164 model
// fetches only the correct path, so the register holds the branches'
// outcomes; a real 21164-class front end would shift predictions in and
// repair them, which comes to the same on the path the model runs.
func (c *CPU) meBranch(d *Decoded, pc, next uint64) {
	if classOf[d.Op].Branch {
		c.meHist <<= 1
		if next != pc+4 {
			c.meHist |= 1
		}
	}
}

// meFromEvent maps the counters' events to event bits.
var meFromEvent = [...]struct {
	ev  Event
	bit MeEvents
}{
	{EvBranchMP, MeMispredict}, {EvIMiss, MeIMiss}, {EvITBMiss, MeITBMiss}, {EvDMiss, MeDMiss},
	{EvDTBMiss, MeDTBMiss}, {EvSMiss, MeSMiss}, {EvBMiss, MeBMiss}, {EvWBFull, MeWBFull},
}

// meEnd finishes a tagged instruction still in flight when Run returns:
// a PAL call that completed and handed the CPU to the OS (system call,
// return from the kernel, wtint, a simulator call) retired; one that
// trapped (a fault, an illegal instruction) aborted with its trap.
func (c *CPU) meEnd() {
	if !c.meTag.on {
		return
	}
	r := &c.meTag.rec
	c.meTag.on = false
	r.PC, r.Done, r.Finished = c.Trap.PC, c.Cycle, c.Cycle
	switch c.Trap.Kind {
	case TrapSyscall, TrapSimcall, TrapReturn, TrapWait:
		r.Events |= MeRetired
	default:
		r.Abort = c.Trap.Kind
	}
	c.Me.Complete(r, &c.PMU)
}

// meInterrupted counts the instruction at pc, aborted by the interrupt
// due at cycle due after it waited head cycles, as fetched, and records it
// if it is the one tagged.
func (c *CPU) meInterrupted(pc, due, head uint64) {
	var r MeRecord
	if !c.Me.fetched(due, &r, c.Kernel) {
		return
	}
	r.PC, r.Abort, r.History = pc, TrapEvent, c.meHist
	r.Head = uint32(min(head, 1<<32-1))
	r.Done, r.Finished = due, due
	c.Me.Complete(&r, &c.PMU)
}
