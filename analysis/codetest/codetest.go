// Package codetest is the analysis packages' test kit of hand-written Alpha
// code: instruction encoders, the DCPI paper's copy loop (Figures 2 and 7)
// and an image that holds words as named procedures, for cfg.NewCode; and
// runs of the committed workloads on hwsim with their ground truth
// (RunWorkload). It is for tests only.
package codetest

import (
	"encoding/binary"
	"sort"

	"dcpi/hwsim/elfimage"
)

// Encoders in the Alpha Architecture Handbook's instruction formats.

// Mem encodes a memory-format instruction: opc ra, disp(rb).
func Mem(opc, ra, rb uint32, disp int16) uint32 {
	return opc<<26 | ra<<21 | rb<<16 | uint32(uint16(disp))
}

// Op encodes an operate-format instruction with register operands.
func Op(opc, fn, ra, rb, rc uint32) uint32 { return opc<<26 | ra<<21 | rb<<16 | fn<<5 | rc }

// OpLit encodes an operate-format instruction with an 8-bit literal.
func OpLit(opc, fn, ra, lit, rc uint32) uint32 {
	return opc<<26 | ra<<21 | lit<<13 | 1<<12 | fn<<5 | rc
}

// Br encodes a branch with a displacement in instructions.
func Br(opc, ra uint32, disp int32) uint32 { return opc<<26 | ra<<21 | uint32(disp)&0x1fffff }

// Named instructions the tests use.
var (
	Ldq      = func(ra, rb uint32, d int16) uint32 { return Mem(0x29, ra, rb, d) }
	Stq      = func(ra, rb uint32, d int16) uint32 { return Mem(0x2d, ra, rb, d) }
	Lda      = func(ra, rb uint32, d int16) uint32 { return Mem(0x08, ra, rb, d) }
	Addq     = func(a, b, c uint32) uint32 { return Op(0x10, 0x20, a, b, c) }
	Addqi    = func(a, lit, c uint32) uint32 { return OpLit(0x10, 0x20, a, lit, c) }
	Cmpult   = func(a, b, c uint32) uint32 { return Op(0x10, 0x1d, a, b, c) }
	Mulq     = func(a, b, c uint32) uint32 { return Op(0x13, 0x20, a, b, c) }
	Bne      = func(ra uint32, disp int32) uint32 { return Br(0x3d, ra, disp) }
	Beq      = func(ra uint32, disp int32) uint32 { return Br(0x39, ra, disp) }
	BrAlways = func(disp int32) uint32 { return Br(0x30, 31, disp) }
	Nop      = Op(0x11, 0x20, 31, 31, 31) // bis r31, r31, r31
	Ret      = uint32(0x1a<<26 | 31<<21 | 26<<16 | 2<<14)
	Mb       = uint32(0x18<<26 | 0x4000)
)

// CopyLoopPC is the copy loop's address in the paper.
const CopyLoopPC = 0x9810

// CopyLoop returns the loop of the paper's Figures 2 and 7, at 0x9810 in
// the paper (registers: t0 r1, t1 r2, t2 r3, t4 r5, t5 r6, t6 r7, a0 r16,
// v0 r0).
func CopyLoop() []uint32 {
	return []uint32{
		Ldq(5, 2, 0),    // 009810 ldq t4, 0(t1)
		Addqi(1, 4, 1),  // 009814 addq t0, 0x4, t0
		Ldq(6, 2, 8),    // 009818 ldq t5, 8(t1)
		Ldq(7, 2, 16),   // 00981c ldq t6, 16(t1)
		Ldq(16, 2, 24),  // 009820 ldq a0, 24(t1)
		Lda(2, 2, 32),   // 009824 lda t1, 32(t1)
		Stq(5, 3, 0),    // 009828 stq t4, 0(t2)
		Cmpult(1, 0, 5), // 00982c cmpult t0, v0, t4
		Stq(6, 3, 8),    // 009830 stq t5, 8(t2)
		Stq(7, 3, 16),   // 009834 stq t6, 16(t2)
		Stq(16, 3, 24),  // 009838 stq a0, 24(t2)
		Lda(3, 3, 32),   // 00983c lda t2, 32(t2)
		Bne(5, -13),     // 009840 bne t4, 0x009810
	}
}

// Image lays words out at base as one executable segment (its .text),
// with a function symbol per entry of procs (name to word index).
func Image(base uint64, words []uint32, procs map[string]int) *elfimage.Image {
	text := make([]byte, 4*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint32(text[4*i:], w)
	}
	im := &elfimage.Image{Path: "codetest",
		Segments: []elfimage.Segment{{Vaddr: base, Memsz: uint64(len(text)), Filesz: uint64(len(text)),
			Flags: elfimage.PermR | elfimage.PermX, Data: text}},
		Sections:  []elfimage.Section{{Name: ".text", Flags: 0x6, Addr: base, Size: uint64(len(text))}},
		TextStart: base, TextEnd: base + uint64(len(text)),
	}
	for name, i := range procs {
		im.Symbols = append(im.Symbols, elfimage.Symbol{Name: name, Addr: base + 4*uint64(i), Kind: elfimage.SymFunc})
	}
	sort.Slice(im.Symbols, func(i, j int) bool { return im.Symbols[i].Addr < im.Symbols[j].Addr })
	return im
}
