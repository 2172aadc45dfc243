package unwind

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"
)

// x86-64 DWARF registers.
const (
	rsp = 7
	rbp = 6
)

// amd64Program is a program compiled without frame pointers, as gcc -O2
// does on x86-64: main (0x000-0x100: CFA rsp+8 at entry, rsp+32 after
// its sub at 0x004), f (0x100-0x200: pushed rbx, CFA rsp+16), leaf
// (0x200-0x300: no frame, CFA rsp+8), then 0x300-0x400 without call
// frame information (a procedure with a frame pointer) and _start
// (0x400-0x500: the return address undefined).
func amd64Program(t *testing.T) *Space {
	t.Helper()
	tab, err := NewTableFor(AMD64, []Row{
		{Start: 0x000, CFAReg: rsp, CFAOff: 8, RA: AtCFA, RAOff: -8},
		{Start: 0x004, CFAReg: rsp, CFAOff: 32, RA: AtCFA, RAOff: -8},
		{Start: 0x100, CFAReg: rsp, CFAOff: 16, RA: AtCFA, RAOff: -8},
		{Start: 0x200, CFAReg: rsp, CFAOff: 8, RA: AtCFA, RAOff: -8},
		{Start: 0x300},
		{Start: 0x400, CFAReg: rsp, CFAOff: 8, RA: Undefined},
		{Start: 0x500},
	}, []Range{{0, 0x500}})
	if err != nil {
		t.Fatal(err)
	}
	return NewSpace([]Image{{Base: base, Size: 0x1000, Table: tab}})
}

// quads lays out a stack copy from sp: addr -> value.
func stackAt(sp uint64, size int, vals map[uint64]uint64) StackCopy {
	b := make([]byte, size)
	for a, v := range vals {
		binary.LittleEndian.PutUint64(b[a-sp:], v)
	}
	return StackCopy{SP: sp, Data: b}
}

// amd64Stack: leaf at 0x210 called from f at 0x140, f from main at
// 0x44, main from the frame-pointer procedure at 0x350 (its frame record
// at rbp 0x1040), which _start called at 0x410.
func amd64Stack() StackCopy {
	return stackAt(0x1000, 0x60, map[uint64]uint64{
		0x1000: base + 0x140, // leaf's RA (CFA 0x1008)
		0x1010: base + 0x44,  // f's RA (CFA 0x1018)
		0x1030: base + 0x350, // main's RA (CFA 0x1038)
		0x1040: 0x1070,       // the frame record: _start's rbp
		0x1048: base + 0x410, // and the return address
	})
}

func TestWalkNativeFollowsCFI(t *testing.T) {
	s := amd64Program(t)
	var out [16]uint64
	r := s.walkNative(NativeRegs{PC: base + 0x210, SP: 0x1000, FP: 0x1040}, amd64Stack(), out[:])
	want := []uint64{base + 0x210, base + 0x140, base + 0x44, base + 0x350, base + 0x410}
	if !slices.Equal(out[:r.N], want) || r.Truncated {
		t.Fatalf("chain %#x truncated %v, want %#x complete", out[:r.N], r.Truncated, want)
	}
	if r.Steps != 5 || r.FramePointer != 1 || r.Reads != 5 {
		t.Errorf("%+v: want 5 steps, 1 by frame pointer, 5 reads", r)
	}
	// The same stack, the frame-pointer way only (no tables): the
	// procedures without a frame are skipped, the chain is wrong.
	fpOnly := NewSpace([]Image{{Base: base, Size: 0x1000}})
	r = fpOnly.walkNative(NativeRegs{PC: base + 0x210, SP: 0x1000, FP: 0x1040}, amd64Stack(), out[:])
	if slices.Equal(out[:r.N], want) {
		t.Errorf("the frame pointer alone found the whole chain %#x", out[:r.N])
	}
}

func (s *Space) walkNative(r NativeRegs, mem Memory, out []uint64) Result {
	return WalkNative(AMD64, s, r, mem, out)
}

// TestWalkNativeEndsCleanly: a CFA whose slots lie outside the copy, a
// rule the walk cannot follow, a return address outside the image's
// code, and the depth cap all end the walk Truncated, with the frames
// found so far.
func TestWalkNativeEndsCleanly(t *testing.T) {
	s := amd64Program(t)
	regs := NativeRegs{PC: base + 0x210, SP: 0x1000, FP: 0x1040}
	var out [16]uint64
	short := amd64Stack()
	short.Data = short.Data[:0x30] // main's return address at 0x1030 is past the copy
	if r := s.walkNative(regs, short, out[:]); r.N != 3 || !r.Truncated {
		t.Errorf("copy cut at 0x1030: %+v %#x, want 3 frames, truncated", r, out[:r.N])
	}
	above := amd64Stack()
	above.SP = 0x2000 // the copy is of some other stack: the first read fails
	if r := s.walkNative(regs, above, out[:]); r.N != 1 || !r.Truncated {
		t.Errorf("copy elsewhere: %+v", r)
	}
	if r := s.walkNative(regs, amd64Stack(), out[:2]); r.N != 2 || !r.Truncated {
		t.Errorf("capped at 2: %+v", r)
	}
	bad := amd64Stack()
	binary.LittleEndian.PutUint64(bad.Data[0x10:], base+0x800) // f's RA in the image, not in its code
	if r := s.walkNative(regs, bad, out[:]); r.N != 2 || !r.Truncated {
		t.Errorf("return address outside the code: %+v %#x", r, out[:r.N])
	}
	tab, err := NewTableFor(AMD64, []Row{{Start: 0, CFAReg: rsp, CFAOff: 8, RA: Unknown}, {Start: 0x100}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	unk := NewSpace([]Image{{Base: base, Size: 0x1000, Table: tab}})
	if r := unk.walkNative(NativeRegs{PC: base + 0x10, SP: 0x1000}, amd64Stack(), out[:]); r.N != 1 || !r.Truncated {
		t.Errorf("an unsupported rule: %+v", r)
	}
	// A PC in no image with no frame record: the PC alone.
	if r := s.walkNative(NativeRegs{PC: 0x7000, SP: 0x1000, FP: 0x10}, amd64Stack(), out[:]); r.N != 1 || !r.Truncated {
		t.Errorf("PC in no image, FP below SP: %+v", r)
	}
}

// TestWalkNativeRefusesLoops: frames that do not move up the stack end
// the walk, whether their rule (a CFA at SP, reading the same slot again)
// or their frame records (a record pointing at itself) say so.
func TestWalkNativeRefusesLoops(t *testing.T) {
	tab, err := NewTableFor(AMD64, []Row{
		{Start: 0, CFAReg: rsp, CFAOff: 0, RA: AtCFA, RAOff: 0}, // RA at SP, CFA at SP
		{Start: 0x100},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	loop := NewSpace([]Image{{Base: base, Size: 0x1000, Table: tab}})
	stack := stackAt(0x1000, 0x40, map[uint64]uint64{0x1000: base + 0x11})
	var out [64]uint64
	if r := loop.walkNative(NativeRegs{PC: base + 0x10, SP: 0x1000}, stack, out[:]); r.N != 1 || !r.Truncated {
		t.Errorf("CFA at SP: %+v %#x", r, out[:r.N])
	}
	// Frame records pointing at themselves, in code without tables.
	fpOnly := NewSpace([]Image{{Base: base, Size: 0x1000}})
	self := stackAt(0x1000, 0x40, map[uint64]uint64{0x1010: 0x1010, 0x1018: base + 0x20})
	r := fpOnly.walkNative(NativeRegs{PC: base + 0x10, SP: 0x1000, FP: 0x1010}, self, out[:])
	if !r.Truncated || r.N > 2 {
		t.Errorf("a frame record pointing at itself: %+v %#x", r, out[:r.N])
	}
}

// TestWalkNativeARM64: a leaf without a frame (its return address in
// x30) under a procedure that saved x29 and x30 at the bottom of its
// frame (gcc's stp x29, x30, [sp, -32]!); a signed return address is
// stripped to its 48 bits.
func TestWalkNativeARM64(t *testing.T) {
	tab, err := NewTableFor(ARM64, []Row{
		{Start: 0x000, CFAReg: 31, CFAOff: 32, RA: AtCFA, RAOff: -24, FP: AtCFA, FPOff: -32}, // caller
		{Start: 0x100, CFAReg: 31, CFAOff: 0, RA: Same, RAReg: 30},                           // leaf
		{Start: 0x200, CFAReg: 31, RA: Undefined},
		{Start: 0x300},
	}, []Range{{0, 0x300}})
	if err != nil {
		t.Fatal(err)
	}
	s := NewSpace([]Image{{Base: base, Size: 0x1000, Table: tab}})
	stack := stackAt(0x1000, 0x40, map[uint64]uint64{0x1000: 0x2000, 0x1008: 0x002a<<48 | (base + 0x208)})
	var out [8]uint64
	r := WalkNative(ARM64, s, NativeRegs{PC: base + 0x110, SP: 0x1000, FP: 0x1000, LR: base + 0x44}, stack, out[:])
	want := []uint64{base + 0x110, base + 0x44, base + 0x208}
	if !slices.Equal(out[:r.N], want) || r.Truncated {
		t.Fatalf("chain %#x %+v, want %#x complete", out[:r.N], r, want)
	}
	// An Alpha table is no table for an arm64 walk: the frame pointer
	// does the frame.
	alphaTab, _ := NewTable([]Row{{Start: 0, CFAReg: RegSP, RA: Same, RAReg: RegRA}}, nil)
	r = WalkNative(ARM64, NewSpace([]Image{{Base: base, Size: 0x1000, Table: alphaTab}}), NativeRegs{PC: base + 0x110, SP: 0x1000, FP: 0x1000}, stack, out[:])
	if r.FramePointer == 0 {
		t.Errorf("an Alpha table served an arm64 walk: %+v", r)
	}
}

// TestNewTableForRefusesOtherRegisters: rows naming registers the
// architecture's walk does not track are refused, as Alpha's are.
func TestNewTableForRefusesOtherRegisters(t *testing.T) {
	for _, rows := range [][]Row{
		{{Start: 0, CFAReg: 3, CFAOff: 8, RA: AtCFA, RAOff: -8}},     // CFA on rbx
		{{Start: 0, CFAReg: rsp, CFAOff: 8, RA: Same, RAReg: RegRA}}, // RA in a register: none on x86-64
		{{Start: 0, CFAReg: RegSP, CFAOff: 8, RA: AtCFA}},            // Alpha's r30
	} {
		if _, err := NewTableFor(AMD64, rows, nil); !errors.Is(err, ErrTable) {
			t.Errorf("rows %+v: err %v, want ErrTable", rows, err)
		}
	}
}
