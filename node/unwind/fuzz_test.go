package unwind

import (
	"encoding/binary"
	"slices"
	"testing"
)

// The fuzzed process: image A at base, with the unwind table the input
// spells; image B at base2, without one (the heuristic does every frame);
// both map the input's code, and its stack lies at stackBase.
const (
	base2     = 0x140000000
	imageSize = 0x1000
	stackBase = 0x1000
	rowBytes  = 10
)

var (
	cfaRegs = []uint8{0, RegSP, RegFP, 5}
	raRegs  = []uint8{RegRA, RegT9, RegFP, 3}
)

// fuzzRows spells rows for FuzzWalk: 10 bytes a row (Start/4, CFAOff,
// RAOff, FPOff, then CFAReg, RA, FP and RAReg indices packed in two
// bytes). Where values out of range make NewTable refuse the table.
func fuzzRows(b []byte) []Row {
	le := binary.LittleEndian
	var rows []Row
	for ; len(b) >= rowBytes; b = b[rowBytes:] {
		rows = append(rows, Row{Start: uint64(le.Uint16(b)) * 4, CFAOff: int32(int16(le.Uint16(b[2:]))), RAOff: int32(int16(le.Uint16(b[4:]))),
			FPOff: int32(int16(le.Uint16(b[6:]))), CFAReg: cfaRegs[b[8]&3], RA: Where(b[8] >> 2 & 7), FP: Where(b[8] >> 5), RAReg: raRegs[b[9]&3]})
	}
	return rows
}

// spellRows is fuzzRows's inverse, for the seeds.
func spellRows(rows []Row) []byte {
	le := binary.LittleEndian
	var b []byte
	index := func(list []uint8, v uint8) byte {
		for i, x := range list {
			if x == v {
				return byte(i)
			}
		}
		return 0 // a register the row does not use (RAReg 0)
	}
	for _, r := range rows {
		b = le.AppendUint16(b, uint16(r.Start/4))
		b = le.AppendUint16(b, uint16(int16(r.CFAOff)))
		b = le.AppendUint16(b, uint16(int16(r.RAOff)))
		b = le.AppendUint16(b, uint16(int16(r.FPOff)))
		b = append(b, index(cfaRegs, r.CFAReg)|byte(r.RA)<<2|byte(r.FP)<<5, index(raRegs, r.RAReg))
	}
	return b
}

// fuzzMem is the process's memory: the code at both images' bases, the
// stack, nothing else; it counts the reads.
type fuzzMem struct {
	code, stack []byte
	reads       int
}

func (m *fuzzMem) Read8(a uint64) (uint64, bool) {
	m.reads++
	for _, r := range []struct {
		lo uint64
		b  []byte
	}{{base, m.code}, {base2, m.code}, {stackBase, m.stack}} {
		if a >= r.lo && a-r.lo < uint64(len(r.b)) {
			var q [8]byte
			copy(q[:], r.b[a-r.lo:])
			return binary.LittleEndian.Uint64(q[:]), true
		}
	}
	return 0, false
}

// FuzzWalk feeds the interrupt handler's stack walk what a guest controls:
// its registers, its stack's contents and its code (which the heuristic
// scans), with unwind tables spelled by the input. The walk must end (it
// runs in the handler), never panic, write at most len(out) frames with
// out[0] the PC and every return address after it aligned and inside an
// image, and count every memory read it makes, within its bound.
func FuzzWalk(f *testing.F) {
	le := binary.LittleEndian
	quads := func(vs ...uint64) []byte {
		var b []byte
		for _, v := range vs {
			b = le.AppendUint64(b, v)
		}
		return b
	}
	words := func(ws ...uint32) []byte {
		var b []byte
		for _, w := range ws {
			b = le.AppendUint32(b, w)
		}
		return b
	}
	program := spellRows([]Row{
		{Start: 0x000, CFAReg: RegSP, CFAOff: 32, RA: AtCFA, RAOff: -32, FP: AtCFA, FPOff: -8},
		{Start: 0x100, CFAReg: RegSP, CFAOff: 16, RA: AtCFA, RAOff: -16},
		{Start: 0x200, CFAReg: RegSP, RA: Same, RAReg: RegRA},
		{Start: 0x300, CFAReg: RegFP, RA: Same, RAReg: RegFP},
		{Start: 0x400, CFAReg: RegSP, RA: Same, RAReg: RegT9},
		{Start: 0x500},
	})
	// TestWalkFollowsRules's stack: f's saved RA at 0x1000, main's at 0x1010, main's saved FP (0) at 0x1028.
	stack := quads(base+0x44, 0, base+0x324, 0, 0, 0)
	code := words(0x27bb0000, 0x23bd0000, 0x23deffd0, 0xb75e0008, 0xb5fe0010, 0x47de040f, 0x47ff041f, 0x47ff041f,
		0x6bfa8001, 0x2ffe0000, 0x2ffe0000, 0x2ffe0000, 0x40220403, 0x47ff041f)
	f.Add(uint64(base+0x210), uint64(0x1000), uint64(77), uint64(base+0x144), uint64(0), program, code, stack, uint8(8))
	f.Add(uint64(base+0x410), uint64(0x1000), uint64(0), uint64(base+0x144), uint64(base+0x220), program, code, stack, uint8(8))
	f.Add(uint64(base2+0x18), uint64(0x1000), uint64(0), uint64(base2+0x34), uint64(0), []byte(nil), code, stack, uint8(8))
	f.Add(uint64(base2+0x34), uint64(0x1008), uint64(0), uint64(base2+0x8), uint64(0), []byte(nil), code, stack, uint8(63))
	f.Add(uint64(base+0x10), uint64(0x1000), uint64(0), uint64(0), uint64(0),
		spellRows([]Row{{Start: 0, CFAReg: RegSP, RA: AtCFA}}), code, quads(base+0x14), uint8(63))
	f.Fuzz(func(t *testing.T, pc, sp, fp, ra, t9 uint64, rows, code, stack []byte, depth uint8) {
		if len(code) > imageSize || len(stack) > 1<<16 {
			return
		}
		tab, err := NewTable(fuzzRows(rows), []Range{{0, uint64(len(code))}})
		if err != nil {
			tab = nil
		}
		s := NewSpace([]Image{{Base: base, Size: imageSize, Table: tab}, {Base: base2, Size: imageSize}})
		m := &fuzzMem{code: code, stack: stack}
		out := make([]uint64, 1+int(depth)%64)
		res := s.Walk(Regs{PC: pc, SP: sp, FP: fp, RA: ra, T9: t9}, m, out)
		if res.N < 1 || res.N > len(out) || out[0] != pc {
			t.Fatalf("%d frames of %d, out[0] %#x for PC %#x", res.N, len(out), out[0], pc)
		}
		for i, a := range out[1:res.N] {
			if a&3 != 0 || s.find(a-4) == nil {
				t.Fatalf("frame %d: return address %#x", i+1, a)
			}
		}
		if res.Reads != m.reads || res.Steps > len(out) || res.Heuristic > res.Steps || res.Reads > res.Steps*(3*maxScan+8) {
			t.Fatalf("%+v with %d reads made", res, m.reads)
		}
	})
}

// fuzzNativeRows spells rows of arch as fuzzRows does Alpha's, the CFA
// register among none, arch's SP and FP and another, the register
// holding the return address among x30, rbp and another.
func fuzzNativeRows(arch *Arch, b []byte) []Row {
	rows := fuzzRows(b)
	for i := range rows {
		rows[i].CFAReg = []uint8{0, arch.SP, arch.FP, 5}[slices.Index(cfaRegs, rows[i].CFAReg)]
		rows[i].RAReg = []uint8{30, 6, 29, 3}[slices.Index(raRegs, rows[i].RAReg)]
	}
	return rows
}

// FuzzWalkNative feeds the native walk what a sampled process controls:
// its registers and its stack's copy, with unwind tables spelled by the
// input, on x86-64 or arm64. The walk must end, never panic, write at
// most len(out) frames with out[0] the PC and every return address after
// it inside an image, read only the copy, and count its reads.
func FuzzWalkNative(f *testing.F) {
	le := binary.LittleEndian
	quads := func(vs ...uint64) []byte {
		var b []byte
		for _, v := range vs {
			b = le.AppendUint64(b, v)
		}
		return b
	}
	amd := spellRows([]Row{
		{Start: 0x000, CFAReg: RegSP, CFAOff: 8, RA: AtCFA, RAOff: -8},
		{Start: 0x100, CFAReg: RegSP, CFAOff: 16, RA: AtCFA, RAOff: -8},
		{Start: 0x200, CFAReg: RegFP, CFAOff: 16, RA: AtCFA, RAOff: -8, FP: AtCFA, FPOff: -16},
		{Start: 0x300},
		{Start: 0x400, CFAReg: RegSP, CFAOff: 8, RA: Undefined},
	})
	arm := spellRows([]Row{
		{Start: 0x000, CFAReg: RegSP, CFAOff: 32, RA: AtCFA, RAOff: -24, FP: AtCFA, FPOff: -32},
		{Start: 0x100, CFAReg: RegSP, RA: Same, RAReg: RegRA},
	})
	stack := quads(base+0x140, 0, base+0x350, 0, 0x1040, base+0x410, 0x1000, base+0x10)
	f.Add(uint64(base+0x10), uint64(0x1000), uint64(0x1020), uint64(0), amd, stack, uint8(16), false)
	f.Add(uint64(base+0x310), uint64(0x1000), uint64(0x1020), uint64(0), amd, stack, uint8(16), false)
	f.Add(uint64(base+0x110), uint64(0x1000), uint64(0x1000), uint64(base+0x44), arm, stack, uint8(8), true)
	f.Add(uint64(base2+0x10), uint64(0x1000), uint64(0x1030), uint64(0), []byte(nil), stack, uint8(63), true)
	f.Fuzz(func(t *testing.T, pc, sp, fp, lr uint64, rows, stack []byte, depth uint8, arm64 bool) {
		if len(stack) > 1<<16 {
			return
		}
		arch := AMD64
		if arm64 {
			arch = ARM64
		}
		tab, err := NewTableFor(arch, fuzzNativeRows(arch, rows), []Range{{0, 0x800}})
		if err != nil {
			tab = nil
		}
		s := NewSpace([]Image{{Base: base, Size: imageSize, Table: tab}, {Base: base2, Size: imageSize}})
		m := &countingCopy{StackCopy: StackCopy{SP: stackBase, Data: stack}}
		out := make([]uint64, 1+int(depth)%64)
		res := WalkNative(arch, s, NativeRegs{PC: pc, SP: sp, FP: fp, LR: lr}, m, out)
		if res.N < 1 || res.N > len(out) || out[0] != pc {
			t.Fatalf("%d frames of %d, out[0] %#x for PC %#x", res.N, len(out), out[0], pc)
		}
		for i, a := range out[1:res.N] {
			if s.find(a-1) == nil {
				t.Fatalf("frame %d: return address %#x in no image", i+1, a)
			}
		}
		if res.Reads != m.reads || res.Steps > len(out) || res.FramePointer > res.Steps || res.Reads > 2*res.Steps {
			t.Fatalf("%+v with %d reads made", res, m.reads)
		}
	})
}

// countingCopy is a stack copy that counts its reads.
type countingCopy struct {
	StackCopy
	reads int
}

func (c *countingCopy) Read8(a uint64) (uint64, bool) {
	c.reads++
	return c.StackCopy.Read8(a)
}
