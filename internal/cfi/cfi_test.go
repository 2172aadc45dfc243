package cfi

import (
	"slices"
	"testing"

	"dcpi/hwsim/elfimage"
	"dcpi/node/unwind"
)

// TestTableAMD64: x86-64 rows (CFA rsp+8 at entry, rsp+16 after a
// push of rbp, then rbp+16) compile into a table the native walk
// follows; a CFA expression (a PLT's) and a CFA on another register stop
// the walk where they hold.
func TestTableAMD64(t *testing.T) {
	const base = 0x400000
	ra := elfimage.RegRule{Kind: elfimage.RuleOffset, Offset: -8}
	fdes := []elfimage.FDE{
		{Start: base + 0x100, End: base + 0x140, RAColumn: 16, Rows: []elfimage.FrameRow{
			{Addr: base + 0x100, CFA: elfimage.CFARule{Reg: 7, Offset: 8}, RA: ra},
			{Addr: base + 0x101, CFA: elfimage.CFARule{Reg: 7, Offset: 16}, RA: ra, FP: elfimage.RegRule{Kind: elfimage.RuleOffset, Offset: -16}},
			{Addr: base + 0x104, CFA: elfimage.CFARule{Reg: 6, Offset: 16}, RA: ra, FP: elfimage.RegRule{Kind: elfimage.RuleOffset, Offset: -16}},
		}},
		{Start: base + 0x200, End: base + 0x210, RAColumn: 16, Rows: []elfimage.FrameRow{
			{Addr: base + 0x200, CFA: elfimage.CFARule{Expr: true}, RA: ra},
		}},
		{Start: base + 0x300, End: base + 0x310, RAColumn: 16, Rows: []elfimage.FrameRow{
			{Addr: base + 0x300, CFA: elfimage.CFARule{Reg: 3, Offset: 8}, RA: ra},
		}},
	}
	tab, err := Table(unwind.AMD64, fdes, base, []unwind.Range{{Lo: 0, Hi: 0x1000}})
	if err != nil {
		t.Fatal(err)
	}
	if tab.Rows() != 3+1+1+1+1+1 {
		t.Errorf("%d rows", tab.Rows())
	}
	s := unwind.NewSpace([]unwind.Image{{Base: 0x7f0000000000, Size: 0x1000, Table: tab}})
	// In the body of the procedure at 0x100: rbp 0x1010 holds the frame.
	stack := unwind.StackCopy{SP: 0x1000, Data: make([]byte, 0x40)}
	stack.Data[0x10] = 0x40 // the caller's rbp: 0x1040
	stack.Data[0x18], stack.Data[0x19] = 0x05, 0x01
	stack.Data[0x1d] = 0x7f // RA 0x7f0000000105 (in the procedure again: a recursion)
	var out [3]uint64
	r := unwind.WalkNative(unwind.AMD64, s, unwind.NativeRegs{PC: 0x7f0000000120, SP: 0x1000, FP: 0x1010}, stack, out[:])
	if want := []uint64{0x7f0000000120, 0x7f0000000105}; !slices.Equal(out[:2], want) || r.N < 2 {
		t.Errorf("chain %#x (%+v), want it to begin %#x", out[:r.N], r, want)
	}
	for _, pc := range []uint64{0x7f0000000200, 0x7f0000000300} {
		r := unwind.WalkNative(unwind.AMD64, s, unwind.NativeRegs{PC: pc, SP: 0x1000, FP: 0x1010}, stack, out[:])
		if r.N != 1 || !r.Truncated || r.FramePointer != 0 {
			t.Errorf("PC %#x under a rule the walk cannot follow: %+v", pc, r)
		}
	}
}
