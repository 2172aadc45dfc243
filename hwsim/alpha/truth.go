package alpha

import "math/bits"

// GroundTruth is what the simulator knows and the profiler must estimate,
// per instruction address: how often it executed, the cycles it spent at
// the head of the issue queue, and why (DCPI's authors had dcpix for this);
// the control transfers taken, from which the control-flow graph's edge
// counts follow; and, for every wait for a register, which register and
// which instruction produced it. It is kept apart from the profile path:
// nothing in the sampling reads it. docs/groundtruth.md describes it.
type GroundTruth struct {
	PCs map[uint64]*PCTruth
	// Edges counts the control transfers executed whose next PC is not
	// From+4, by (From, To). A branch's fall-throughs are its executions
	// less its transfers.
	Edges map[Edge]uint64
	// RegWaits totals the waits for registers, by waiting instruction,
	// register, operand, producer and cause.
	RegWaits map[RegWait]WaitTotal
}

// PCTruth is the ground truth of one instruction address.
type PCTruth struct {
	Executed   uint64
	HeadCycles uint64 // cycles at the head of the issue queue, issue cycle included
	Stall      [NumStallCauses]uint64
	Events     [NumEvents]uint64
}

// Edge is a control transfer from the instruction at From to To.
type Edge struct{ From, To uint64 }

// Operand is the source register field an instruction waits for.
type Operand uint8

// The operands: Ra (a store's data, a branch's condition, an operate's
// first source) and Rb (an address base, an operate's second source, a
// jump's target).
const (
	OperandRa Operand = iota
	OperandRb
)

func (o Operand) String() string {
	if o == OperandRa {
		return "ra"
	}
	return "rb"
}

// RegWait is one kind of wait for a register: the instruction at PC waited
// for register Reg (0-31 integer, 32-63 FP), its operand Operand, written by
// the instruction at Producer, for Cause (StallRa, StallRb, or StallDCache
// when the producer was a load that missed). Producer is the last
// instruction that wrote the register on this CPU, which may be in another
// image (vmunix, for a value a system call returned).
type RegWait struct {
	PC, Producer uint64
	Reg          uint8
	Operand      Operand
	Cause        StallCause
}

// WaitTotal is how often a RegWait happened and the cycles it cost.
type WaitTotal struct{ Count, Cycles uint64 }

// NewGroundTruth returns an empty collection.
func NewGroundTruth() *GroundTruth {
	return &GroundTruth{PCs: make(map[uint64]*PCTruth), Edges: make(map[Edge]uint64), RegWaits: make(map[RegWait]WaitTotal)}
}

// record adds one execution of the instruction at pc that t has just
// committed, after head cycles at the head of the issue queue; next is the
// PC that follows it.
func (g *GroundTruth) record(pc, next, head uint64, t *Timing, transfer bool) {
	e := g.PCs[pc]
	if e == nil {
		e = &PCTruth{}
		g.PCs[pc] = e
	}
	e.Executed++
	e.HeadCycles += head
	for i, w := range &t.why {
		e.Stall[i] += uint64(w)
	}
	for s := t.events; s != 0; s &= s - 1 {
		e.Events[bits.TrailingZeros32(uint32(s))]++
	}
	for i := range min(t.nRegWaits, 2) {
		k := t.regWaits[i]
		k.PC = pc
		w := g.RegWaits[k]
		w.Count++
		w.Cycles += t.regCycles[i]
		g.RegWaits[k] = w
	}
	if transfer && next != pc+4 {
		g.Edges[Edge{pc, next}]++
	}
}

// wait adds head-of-queue cycles to pc without an execution: the time an
// instruction waited before an interrupt took the CPU.
func (g *GroundTruth) wait(pc, cycles uint64) {
	e := g.PCs[pc]
	if e == nil {
		e = &PCTruth{}
		g.PCs[pc] = e
	}
	e.HeadCycles += cycles
}

// Add adds o's counts to g's: executions, cycles, stalls and events per
// instruction, transfers and register waits.
func (g *GroundTruth) Add(o *GroundTruth) {
	for pc, t := range o.PCs {
		e := g.PCs[pc]
		if e == nil {
			e = &PCTruth{}
			g.PCs[pc] = e
		}
		e.Executed += t.Executed
		e.HeadCycles += t.HeadCycles
		for i, v := range t.Stall {
			e.Stall[i] += v
		}
		for i, v := range t.Events {
			e.Events[i] += v
		}
	}
	for k, n := range o.Edges {
		g.Edges[k] += n
	}
	for k, w := range o.RegWaits {
		t := g.RegWaits[k]
		t.Count += w.Count
		t.Cycles += w.Cycles
		g.RegWaits[k] = t
	}
}
