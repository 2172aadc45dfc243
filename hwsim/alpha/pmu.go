package alpha

import (
	"fmt"
	"math/bits"
	"strings"
)

// Event is something a 21164 performance counter can count
// (ALPHA-NOTES.md, "Performance counters"; oprofile's ev5 event list).
type Event uint8

// Events the timing model produces.
const (
	EvCycles   Event = iota // processor cycles
	EvIssues                // instructions issued
	EvIMiss                 // I-cache misses
	EvDMiss                 // D-cache load misses
	EvBranchMP              // branch mispredictions (conditional, jumps, returns)
	EvDTBMiss               // data TLB misses
	EvITBMiss               // instruction TLB misses
	EvSMiss                 // S-cache misses
	EvBMiss                 // board-cache misses
	EvLoads                 // load instructions
	EvStores                // store instructions
	EvWBFull                // stores replayed on a full write buffer
	NumEvents
)

var eventNames = [NumEvents]string{"cycles", "issues", "imiss", "dmiss", "branchmp", "dtbmiss",
	"itbmiss", "smiss", "bmiss", "loads", "stores", "wbfull"}

func (e Event) String() string {
	if e < NumEvents {
		return eventNames[e]
	}
	return fmt.Sprintf("event(%d)", e)
}

// EventByName finds an event by its name (case-sensitive, as listed).
func EventByName(name string) (Event, error) {
	for i, n := range eventNames {
		if n == name {
			return Event(i), nil
		}
	}
	return 0, fmt.Errorf("unknown event %q (known: %s)", name, strings.Join(eventNames[:], ", "))
}

// EventSet is a set of events that one instruction caused.
type EventSet uint32

// Has reports whether e is in the set.
func (s EventSet) Has(e Event) bool { return s&(1<<e) != 0 }

// With returns the set with e added.
func (s EventSet) With(e Event) EventSet { return s | 1<<e }

// InterruptSkid is how many cycles after a counter overflows the 21164
// delivers its interrupt (DCPI paper, sec. 4.1.2).
const InterruptSkid = 6

// NumCounters is how many events the 21164 counts at once.
const NumCounters = 3

// counter is one performance counter: the event it counts, how many events
// remain before it overflows, and, once it has, the cycle its interrupt is
// due.
type counter struct {
	enabled   bool
	event     Event
	left      uint64 // events until overflow
	deliverAt uint64 // cycle the pending interrupt is due; 0 if none
	overflow  uint64 // cycle of the pending overflow
	// causePC and causeIndex are the instruction whose event overflowed
	// the counter (its PC and CPU.Retired when it completed), kept for
	// the skid's ground truth (Cause); a CYCLES counter has none.
	causePC, causeIndex uint64
}

// PMU is a CPU's performance counters. The simulator (package hwsim)
// configures them and reloads a counter at the end of each interrupt, as
// DCPI's driver wrote a new random period into the 16-bit counter.
type PMU struct {
	c [NumCounters]counter
	// nextDeliver is the earliest deliverAt of any counter, or of the
	// ProfileMe interrupt (meDeliver, 0: none), or ^0.
	nextDeliver uint64
	meDeliver   uint64
	// Totals counts every event the CPU has seen, counted or not, except
	// cycles and issues, which the caller knows.
	Totals [NumEvents]uint64
}

// SetCounter programs counter i to count event e and overflow after period
// events; period 0 disables it.
func (p *PMU) SetCounter(i int, e Event, period uint64, cycle uint64) {
	p.c[i] = counter{enabled: period > 0, event: e, left: period}
	if e == EvCycles && period > 0 {
		// Cycles are not counted one by one: the overflow cycle is known.
		p.c[i].overflow = cycle + period
		p.c[i].deliverAt = p.c[i].overflow + InterruptSkid
	}
	p.update()
}

// Left returns how many events counter i still counts before it
// overflows, and whether its interrupt is already pending.
func (p *PMU) Left(i int) (left uint64, pending bool) {
	return p.c[i].left, p.c[i].deliverAt != 0
}

// Counter reports counter i's event and whether it is enabled.
func (p *PMU) Counter(i int) (Event, bool) { return p.c[i].event, p.c[i].enabled }

// Pending returns the counter whose interrupt is due by cycle, if any.
func (p *PMU) Pending(cycle uint64) (int, bool) {
	best := -1
	for i := range p.c {
		if d := p.c[i].deliverAt; d != 0 && d <= cycle && (best < 0 || d < p.c[best].deliverAt) {
			best = i
		}
	}
	return best, best >= 0
}

// OverflowCycle returns the cycle counter i overflowed at.
func (p *PMU) OverflowCycle(i int) uint64 { return p.c[i].overflow }

// Cause returns the instruction whose event overflowed counter i: its PC
// and its dynamic index (CPU.Retired as it completed, so the instruction
// an interrupt is then taken at has index CPU.Retired). ok is false for a
// CYCLES counter, which overflows at a cycle, not at an instruction, and
// for a counter with no pending overflow.
func (p *PMU) Cause(i int) (pc, index uint64, ok bool) {
	c := &p.c[i]
	if c.deliverAt == 0 || c.event == EvCycles {
		return 0, 0, false
	}
	return c.causePC, c.causeIndex, true
}

// record counts the events of the instruction at pc, the CPU's index'th
// (CPU.Retired), issued (the 21264: retired) at cycle.
func (p *PMU) record(ev EventSet, cycle, pc, index uint64) {
	for s := ev &^ (1 << EvIssues); s != 0; s &= s - 1 {
		p.Totals[bits.TrailingZeros32(uint32(s))]++
	}
	for i := range p.c {
		c := &p.c[i]
		if !c.enabled || c.event == EvCycles || !ev.Has(c.event) || c.deliverAt != 0 {
			continue
		}
		c.left--
		if c.left == 0 {
			c.overflow = cycle
			c.deliverAt = cycle + InterruptSkid
			c.causePC, c.causeIndex = pc, index
			p.update()
		}
	}
}

func (p *PMU) update() {
	p.nextDeliver = ^uint64(0)
	for i := range p.c {
		if d := p.c[i].deliverAt; p.c[i].enabled && d != 0 && d < p.nextDeliver {
			p.nextDeliver = d
		}
	}
	if p.meDeliver != 0 && p.meDeliver < p.nextDeliver {
		p.nextDeliver = p.meDeliver
	}
}

// NextDelivery returns the cycle the earliest pending counter interrupt is
// due, or ^0.
func (p *PMU) NextDelivery() uint64 { return p.nextDeliver }
