package unwind

import (
	"errors"
	"slices"
	"testing"
)

// mem is a sparse memory of quadwords.
type mem map[uint64]uint64

func (m mem) Read8(a uint64) (uint64, bool) { v, ok := m[a]; return v, ok }

const base = 0x120000000

// A three-procedure program: main (0x000-0x100, 32-byte frame, RA at
// CFA-32, FP at CFA-8), f (0x100-0x200, 16-byte frame, RA at CFA-16),
// leaf (0x200-0x300, no frame); _start (0x300-0x400) whose RA is in fp,
// zero; a millicode routine (0x400-0x500, RA in t9, no frame).
func program(t *testing.T) *Space {
	t.Helper()
	tab, err := NewTable([]Row{
		{Start: 0x000, CFAReg: RegSP, CFAOff: 32, RA: AtCFA, RAOff: -32, FP: AtCFA, FPOff: -8},
		{Start: 0x100, CFAReg: RegSP, CFAOff: 16, RA: AtCFA, RAOff: -16},
		{Start: 0x200, CFAReg: RegSP, RA: Same, RAReg: RegRA},
		{Start: 0x300, CFAReg: RegFP, RA: Same, RAReg: RegFP},
		{Start: 0x400, CFAReg: RegSP, RA: Same, RAReg: RegT9},
		{Start: 0x500}, // gap
	}, []Range{{0, 0x500}})
	if err != nil {
		t.Fatal(err)
	}
	return NewSpace([]Image{{Base: base, Size: 0x1000, Table: tab}})
}

func TestWalkFollowsRules(t *testing.T) {
	s := program(t)
	// leaf called from f at 0x140, f called from main at 0x40, main from
	// _start at 0x320; SP of leaf = SP of f = 0x1000.
	m := mem{
		0x1000: base + 0x44,  // f's saved RA (CFA 0x1010 - 16)
		0x1010: base + 0x324, // main's saved RA (CFA 0x1030 - 32)
		0x1028: 0,            // main's saved FP: _start's fp, zero
	}
	var out [8]uint64
	r := s.Walk(Regs{PC: base + 0x210, SP: 0x1000, RA: base + 0x144, FP: 77}, m, out[:])
	want := []uint64{base + 0x210, base + 0x144, base + 0x44, base + 0x324}
	if !slices.Equal(out[:r.N], want) || r.Truncated {
		t.Fatalf("chain %#x truncated %v, want %#x complete", out[:r.N], r.Truncated, want)
	}
	if r.Steps != 4 || r.Reads != 3 {
		t.Errorf("steps %d reads %d, want 4 and 3", r.Steps, r.Reads)
	}
	// The depth cap truncates.
	r = s.Walk(Regs{PC: base + 0x210, SP: 0x1000, RA: base + 0x144}, m, out[:2])
	if r.N != 2 || !r.Truncated {
		t.Errorf("capped walk: %+v", r)
	}
	// A failed read truncates.
	delete(m, 0x1010)
	if r = s.Walk(Regs{PC: base + 0x210, SP: 0x1000, RA: base + 0x144}, m, out[:]); r.N != 3 || !r.Truncated {
		t.Errorf("walk with a missing saved RA: %+v %#x", r, out[:r.N])
	}
	// A return address outside executable code truncates.
	m[0x1010] = base + 0x900
	if r = s.Walk(Regs{PC: base + 0x210, SP: 0x1000, RA: base + 0x144}, m, out[:]); r.N != 3 || !r.Truncated {
		t.Errorf("walk to a non-executable RA: %+v %#x", r, out[:r.N])
	}
	// A leaf row above frame 0 (r26 is no longer the caller's) truncates.
	m[0x1000] = base + 0x204
	if r = s.Walk(Regs{PC: base + 0x110, SP: 0x1000, RA: base + 0x144}, m, out[:]); !r.Truncated || r.N != 2 {
		t.Errorf("leaf row above frame 0: %+v %#x", r, out[:r.N])
	}
}

func TestWalkMillicode(t *testing.T) {
	s := program(t)
	// millicode called (t9) from leaf, which f called (r26 still live).
	m := mem{0x1000: base + 0x44, 0x1010: base + 0x324, 0x1028: 0}
	var out [8]uint64
	r := s.Walk(Regs{PC: base + 0x410, SP: 0x1000, RA: base + 0x144, T9: base + 0x220}, m, out[:])
	want := []uint64{base + 0x410, base + 0x220, base + 0x144, base + 0x44, base + 0x324}
	if !slices.Equal(out[:r.N], want) || r.Truncated {
		t.Fatalf("chain %#x truncated %v, want %#x", out[:r.N], r.Truncated, want)
	}
}

func TestWalkCFAMustIncrease(t *testing.T) {
	tab, err := NewTable([]Row{{Start: 0, CFAReg: RegSP, CFAOff: 0, RA: AtCFA, RAOff: 0}}, []Range{{0, 0x100}})
	if err != nil {
		t.Fatal(err)
	}
	s := NewSpace([]Image{{Base: base, Size: 0x100, Table: tab}})
	m := mem{0x1000: base + 0x14} // a frame that returns into itself with the same CFA
	var out [64]uint64
	if r := s.Walk(Regs{PC: base + 0x10, SP: 0x1000}, m, out[:]); !r.Truncated || r.N != 2 {
		t.Fatalf("loop not stopped: %+v", r)
	}
}

// The heuristic on code: a procedure with a gp prologue, a 48-byte frame
// and RA saved at 8(sp); one without a frame after it.
func TestHeuristic(t *testing.T) {
	words := []uint32{
		0x27bb0000, // ldah gp,0(t12)          0x00
		0x23bd0000, // lda gp,0(gp)            0x04
		0x23deffd0, // lda sp,-48(sp)          0x08
		0xb75e0008, // stq ra,8(sp)            0x0c
		0xb5fe0010, // stq fp,16(sp)           0x10
		0x47de040f, // mov sp,fp (bis sp,sp,fp) 0x14
		0x47ff041f, // nop                     0x18
		0x47ff041f, // nop                     0x1c
		0x6bfa8001, // ret                     0x20
		0x2ffe0000, // unop                    0x24
		0x2ffe0000, // unop                    0x28
		0x2ffe0000, // unop                    0x2c
		0x40220403, // addq t0,t1,t2           0x30 (next procedure, no prologue)
		0x47ff041f, // nop                     0x34
	}
	m := mem{}
	for i := 0; i < len(words); i += 2 {
		m[base+uint64(i)*4] = uint64(words[i]) | uint64(words[i+1])<<32
	}
	im := &Image{Base: base, Size: 0x100}
	var res Result
	row, ok := heuristic(im, base+0x18, true, m, &res)
	want := Row{CFAReg: RegFP, CFAOff: 48, RA: AtCFA, RAOff: 8 - 48, FP: AtCFA, FPOff: 16 - 48, RAReg: RegRA}
	if !ok || row != want {
		t.Fatalf("row %+v ok %v, want %+v", row, ok, want)
	}
	// Before the stq ra has run, RA is still in r26.
	row, ok = heuristic(im, base+0x0c, true, m, &res)
	if !ok || row.RA != Same || row.CFAOff != 48 || row.CFAReg != RegSP {
		t.Fatalf("at the save: %+v", row)
	}
	// At the allocation itself nothing has run: no frame.
	row, ok = heuristic(im, base+0x08, true, m, &res)
	if !ok || row.CFAOff != 0 || row.RA != Same {
		t.Fatalf("at the allocation: %+v", row)
	}
	// After a ret and padding: a frameless procedure.
	row, ok = heuristic(im, base+0x34, true, m, &res)
	if !ok || row.CFAOff != 0 || row.RA != Same || row.CFAReg != RegSP {
		t.Fatalf("frameless procedure: %+v ok %v", row, ok)
	}
	if res.Reads == 0 {
		t.Error("no reads counted")
	}
	// Unreadable code: no row.
	if _, ok := heuristic(im, base+0x80, true, mem{}, &res); ok {
		t.Error("row from unreadable code")
	}
}

// TestHeuristicAtEntry: sampled at a procedure's gp prologue, nothing of
// it has run; scanning back would take the frame of the procedure before,
// which here ends in a noreturn call (no ret, no padding).
func TestHeuristicAtEntry(t *testing.T) {
	words := []uint32{
		0x23deffe0, // lda sp,-32(sp)          0x00
		0xb75e0000, // stq ra,0(sp)            0x04
		0xd3400010, // bsr ra,abort            0x08 (noreturn)
		0x27bb0000, // ldah gp,0(t12)          0x0c (the next procedure)
		0x23bd0000, // lda gp,0(gp)            0x10
		0x47ff041f, // nop                     0x14
	}
	m := mem{}
	for i := 0; i < len(words); i += 2 {
		m[base+uint64(i)*4] = uint64(words[i]) | uint64(words[i+1])<<32
	}
	im := &Image{Base: base, Size: 0x100}
	var res Result
	row, ok := heuristic(im, base+0x0c, true, m, &res)
	if want := (Row{CFAReg: RegSP, RA: Same, RAReg: RegRA, FP: Same}); !ok || row != want {
		t.Fatalf("at the entry: row %+v ok %v, want %+v", row, ok, want)
	}
	// Above frame 0 the instruction at look is a call that has run: the
	// entry rule is frame 0's alone.
	if row, ok = heuristic(im, base+0x08, false, m, &res); !ok || row.CFAOff != 32 || row.RA != AtCFA {
		t.Fatalf("at the noreturn call: %+v ok %v", row, ok)
	}
}

func TestNewTableRejects(t *testing.T) {
	for _, rows := range [][]Row{
		{{CFAReg: 5}},
		{{CFAReg: RegSP, RA: Same, RAReg: 3}},
		{{CFAReg: RegSP, RA: 9}},
	} {
		if _, err := NewTable(rows, nil); !errors.Is(err, ErrTable) {
			t.Errorf("%+v: err %v", rows, err)
		}
	}
	if _, err := NewTable(nil, []Range{{Lo: 5, Hi: 1}}); !errors.Is(err, ErrTable) {
		t.Errorf("inverted range: err %v", err)
	}
}

func TestWalkAllocatesNothing(t *testing.T) {
	s := program(t)
	m := mem{0x1000: base + 0x44, 0x1010: base + 0x324, 0x1028: 0}
	var out [8]uint64
	var mm Memory = m
	if n := testing.AllocsPerRun(100, func() {
		s.Walk(Regs{PC: base + 0x210, SP: 0x1000, RA: base + 0x144}, mm, out[:])
	}); n != 0 {
		t.Fatalf("%v allocations a walk", n)
	}
}
