package alpha

import (
	"reflect"
	"testing"
)

// TestGroundTruthAdd: adding two hosts' truth sums every count, keyed
// entries present in one only included.
func TestGroundTruthAdd(t *testing.T) {
	a, b := NewGroundTruth(), NewGroundTruth()
	a.PCs[0x100] = &PCTruth{Executed: 2, HeadCycles: 5, Stall: [NumStallCauses]uint64{StallRa: 1}, Events: [NumEvents]uint64{EvDMiss: 1}}
	b.PCs[0x100] = &PCTruth{Executed: 3, HeadCycles: 7, Stall: [NumStallCauses]uint64{StallRa: 2, StallDTB: 4}}
	b.PCs[0x104] = &PCTruth{Executed: 1, HeadCycles: 1}
	w := RegWait{PC: 0x100, Producer: 0xfc, Reg: 3, Operand: OperandRb, Cause: StallDCache}
	a.Edges[Edge{0x100, 0x200}] = 4
	b.Edges[Edge{0x100, 0x200}] = 6
	b.Edges[Edge{0x104, 0x100}] = 1
	a.RegWaits[w] = WaitTotal{Count: 1, Cycles: 10}
	b.RegWaits[w] = WaitTotal{Count: 2, Cycles: 5}
	sum := NewGroundTruth()
	sum.Add(a)
	sum.Add(b)
	want := &GroundTruth{
		PCs: map[uint64]*PCTruth{
			0x100: {Executed: 5, HeadCycles: 12, Stall: [NumStallCauses]uint64{StallRa: 3, StallDTB: 4}, Events: [NumEvents]uint64{EvDMiss: 1}},
			0x104: {Executed: 1, HeadCycles: 1},
		},
		Edges:    map[Edge]uint64{{0x100, 0x200}: 10, {0x104, 0x100}: 1},
		RegWaits: map[RegWait]WaitTotal{w: {Count: 3, Cycles: 15}},
	}
	if !reflect.DeepEqual(sum, want) {
		t.Errorf("sum %+v, want %+v", sum, want)
	}
	if a.PCs[0x100].Executed != 2 || a.Edges[Edge{0x100, 0x200}] != 4 {
		t.Error("Add changed its argument")
	}
}
