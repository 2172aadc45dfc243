package alpha

import "math/bits"

// GroundTruth is what the simulator knows and the profiler must estimate,
// per instruction address: how often it executed, the cycles it spent at
// the head of the issue queue, and why (DCPI's authors had dcpix for this).
// It is kept apart from the profile path: nothing in the sampling reads it.
type GroundTruth struct {
	PCs map[uint64]*PCTruth
}

// PCTruth is the ground truth of one instruction address.
type PCTruth struct {
	Executed   uint64
	HeadCycles uint64 // cycles at the head of the issue queue, issue cycle included
	Stall      [NumStallCauses]uint64
	Events     [NumEvents]uint64
}

// NewGroundTruth returns an empty collection.
func NewGroundTruth() *GroundTruth { return &GroundTruth{PCs: make(map[uint64]*PCTruth)} }

func (g *GroundTruth) record(pc, head uint64, why *[NumStallCauses]uint32, ev EventSet) {
	e := g.PCs[pc]
	if e == nil {
		e = &PCTruth{}
		g.PCs[pc] = e
	}
	e.Executed++
	e.HeadCycles += head
	for i, w := range why {
		e.Stall[i] += uint64(w)
	}
	for s := ev; s != 0; s &= s - 1 {
		e.Events[bits.TrailingZeros32(uint32(s))]++
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

// Add adds o's counts to g's, instruction by instruction.
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
}
