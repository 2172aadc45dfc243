package alpha

import (
	"fmt"
	"math/rand/v2"
)

// ProfileMe on the 21164 (ProfileMe paper, sec. 4.1 and 4.3): a fetched
// instruction counter chooses one instruction in a random interval, the
// instruction's tag makes the pipeline record what happened to it in the
// profile registers, and an interrupt is raised once the record is
// complete. The 21164 never had ProfileMe; this is the paper's hardware
// fitted to the in-order issue model of pipeline.go, with only the stages
// that model has.
//
// What the counter counts. hwsim executes only the predicted-and-correct
// path: a mispredicted branch costs its refetch cycles, but the wrong-path
// instructions are never fetched in the model. So the counter decrements
// once per instruction that issues, and once per instruction an interrupt
// aborts before it issues (the instruction at the head of the queue when a
// performance interrupt is taken: it was fetched, is flushed and is
// fetched again afterwards). An instruction the simulator stops before at
// a quantum boundary has not been fetched yet in the model; it is counted
// when it issues. Every sample is therefore of a good-path instruction.
//
// What a record holds (MeRecord): the context (the OS's process tag), the
// PC, the effective address of a load or store or the target of a jump,
// the event bits, whether the instruction retired or why it aborted (the
// trap it raised, or an interrupt), and the 21164's latencies: the cycles
// the instruction spent at the head of the issue queue, split by stall
// cause as the issue model charges them, and a load's issue-to-data
// latency. The 21264's Table 1 stages (map, data ready, retire ready) do
// not exist on an in-order machine and are not invented here.
//
// Delivery (sec. 4.1.4, 4.3): the record is copied into one of N register
// copies once all activity of the instruction is over (for a load, when
// its data has returned); the counter keeps counting meanwhile, reloaded
// from the unit's own pseudo-random generator, since with several copies
// software does not see every interval. When the N-th copy fills, an
// interrupt is raised; a record that completes while every copy is full
// is lost and counted in Lost, so software can tell samples generated from
// samples delivered. The interrupt is deferred at IPL >= 6 like the
// counters'.

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
	// it raised (a fault), or TrapEvent for an interrupt taken while it
	// waited to issue. TrapNone for a retired instruction.
	Abort TrapKind
	// Head is the cycles the instruction spent at the head of the issue
	// queue (its issue cycle less the previous instruction's; 0 when it
	// dual-issued), Stall the part of them each cause accounts for; for
	// an aborted instruction, the cycles it waited before the interrupt,
	// with no causes. LoadLatency is a load's cycles from issue to data.
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
// SetInterval and writes Context at every context switch.
type ProfileMe struct {
	// Context is the context register the OS writes: it tags each record.
	Context uint64

	min, max uint64
	left     uint64 // fetches until the next tag
	rng      *rand.Rand
	copies   int
	buf      []MeRecord
	// deliverAt is the cycle the pending interrupt is due (0: none).
	deliverAt uint64

	// Tags counts instructions tagged, Lost the records that found every
	// register copy full. Tags = delivered + Lost + Buffered().
	Tags, Lost uint64
}

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

func (p *ProfileMe) reload() {
	p.left = p.min
	if p.max > p.min {
		p.left += p.rng.Uint64N(p.max - p.min + 1)
	}
}

// Stop stops the counter: no instruction is tagged after it (the count
// is set 2^64-1 fetches away), and the records in the register copies
// stay there for the OS to read with Take.
func (p *ProfileMe) Stop() { p.left = ^uint64(0) }

// fetched counts one fetched instruction and reports whether it is the
// one to tag.
func (p *ProfileMe) fetched() bool {
	p.left--
	if p.left != 0 {
		return false
	}
	p.reload()
	p.Tags++
	return true
}

// complete copies a finished record into a free register copy, raising
// the interrupt when the last copy fills.
func (p *ProfileMe) complete(r *MeRecord, pmu *PMU) {
	if len(p.buf) == p.copies {
		p.Lost++
		return
	}
	p.buf = append(p.buf, *r)
	if len(p.buf) == p.copies {
		p.deliverAt = max(p.deliverAt, r.Done, 1)
		for _, b := range p.buf {
			p.deliverAt = max(p.deliverAt, b.Done)
		}
		pmu.meDeliver = p.deliverAt
		pmu.update()
	}
}

// Due returns the cycle the pending interrupt is due, or 0.
func (p *ProfileMe) Due() uint64 { return p.deliverAt }

// Buffered is how many records wait in the register copies.
func (p *ProfileMe) Buffered() int { return len(p.buf) }

// Take hands the interrupt handler every buffered record (appended to
// dst) and clears the copies and the pending interrupt. The OS also calls
// it with no interrupt pending to read a partial set, as when profiling
// stops.
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

// meStart tags instruction d, about to issue; the effective address is
// taken before it executes, since a load may overwrite its base register.
func (c *CPU) meStart(d *Decoded) {
	c.meTag.on = true
	c.meTag.rec = MeRecord{Context: c.Me.Context, Kernel: c.Kernel}
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
	r.PC, r.Events, r.Done = pc, MeRetired, at
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
		}
	}
	c.Me.complete(r, &c.PMU)
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
	r.PC, r.Done = c.Trap.PC, c.Cycle
	switch c.Trap.Kind {
	case TrapSyscall, TrapSimcall, TrapReturn, TrapWait:
		r.Events |= MeRetired
	default:
		r.Abort = c.Trap.Kind
	}
	c.Me.complete(r, &c.PMU)
}

// meInterrupted counts the instruction at pc, aborted by the interrupt
// due at cycle due after it waited head cycles, as fetched, and records it
// if it is the one tagged.
func (c *CPU) meInterrupted(pc, due, head uint64) {
	if !c.Me.fetched() {
		return
	}
	c.Me.complete(&MeRecord{Context: c.Me.Context, Kernel: c.Kernel, PC: pc, Abort: TrapEvent,
		Head: uint32(min(head, 1<<32-1)), Done: due}, &c.PMU)
}
