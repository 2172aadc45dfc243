package mepaths

import (
	"fmt"
	"slices"
	"testing"

	. "dcpi/analysis/codetest"
)

// program is f, a diamond and a call to g inside a loop; g, a branch
// around one instruction; h, f's only caller, behind a branch of its own;
// k, a call through a register (an unknown callee):
//
//	0x1000 f: A: beq r1, C           (taken: C)
//	0x1004    B: addq; br D
//	0x100c    C: addq
//	0x1010    D: bsr g
//	0x1014    E: bne r2, A           (the loop's backedge)
//	0x1018    F: ret
//	0x101c       nop
//	0x1020 g: G0: beq r3, G2
//	0x1024    G1: addq
//	0x1028    G2: ret
//	0x102c h: H0: beq r4, H2
//	0x1030    H1: addq
//	0x1034    H2: bsr f
//	0x1038    H3: ret
//	0x103c k: K0: jsr (r5)
//	0x1040    K1: ret
func program(t *testing.T) *Program {
	t.Helper()
	bsr := func(disp int32) uint32 { return Br(0x34, 26, disp) }
	jsr := uint32(0x1a<<26 | 26<<21 | 5<<16 | 1<<14)
	words := []uint32{
		Beq(1, 2), Addq(1, 1, 1), BrAlways(1), Addq(2, 2, 2), bsr(3), Bne(2, -6), Ret, Nop,
		Beq(3, 1), Addq(3, 3, 3), Ret,
		Beq(4, 1), Addq(4, 4, 4), bsr(-14), Ret,
		jsr, Ret,
	}
	pr, err := NewProgram(Image(0x1000, words, map[string]int{"f": 0, "g": 8, "h": 11, "k": 15}))
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

const (
	A, B, C, D, E = 0x1000, 0x1004, 0x100c, 0x1010, 0x1014
	G0, G1, G2    = 0x1020, 0x1024, 0x1028
	H0, H1, H2    = 0x102c, 0x1030, 0x1034
)

func starts(p Path) []uint64 {
	var s []uint64
	for _, n := range p {
		s = append(s, n.Start)
	}
	return s
}

func show(paths []Path) string {
	var s []string
	for _, p := range paths {
		s = append(s, fmt.Sprintf("%x", starts(p)))
	}
	slices.Sort(s)
	return fmt.Sprint(s)
}

// TestReconstruct walks back from the loop's backedge E: the newest bit is
// g's branch (the walk runs back over the call into g's return, and at
// g's entry back to the call site D); the next f's diamond; the third the
// backedge of an earlier iteration, or — at f's entry — nothing
// intraprocedurally and h's branch interprocedurally (f's only caller).
// Where the entry and the backedge both agree with the bits, both
// segments are candidates; a partner fetched 7 instructions earlier in h
// rules out the earlier iteration.
func TestReconstruct(t *testing.T) {
	pr := program(t)
	for _, tc := range []struct {
		name string
		q    Query
		want string
	}{
		{"g's branch taken", Query{PC: E, History: 1, Bits: 1}, show([]Path{{{E, 0}, {G2, 0}, {G0, 0}}})},
		{"g's branch not taken", Query{PC: E, History: 0, Bits: 1}, show([]Path{{{E, 0}, {G2, 0}, {G1, 0}, {G0, 0}}})},
		{"then f's diamond through B", Query{PC: E, History: 0b01, Bits: 2}, fmt.Sprintf("[%x]", []uint64{E, G2, G0, D, B, A})},
		{"third bit 0: only f's entry", Query{PC: E, History: 0b001, Bits: 3}, fmt.Sprintf("[%x]", []uint64{E, G2, G0, D, B, A})},
		{"third bit 1: the entry or the backedge", Query{PC: E, History: 0b101, Bits: 3},
			fmt.Sprintf("[%x %x]", []uint64{E, G2, G0, D, B, A, E}, []uint64{E, G2, G0, D, B, A})},
		{"interprocedural: on into h", Query{PC: E, History: 0b001, Bits: 3, Mode: Interprocedural},
			fmt.Sprintf("[%x]", []uint64{E, G2, G0, D, B, A, H2, H1, H0})},
		{"partner in h, 7 back", Query{PC: E, History: 0b101, Bits: 3, Partner: 0x1038, Distance: 7},
			fmt.Sprintf("[%x]", []uint64{E, G2, G0, D, B, A})},
	} {
		r, err := pr.Reconstruct(tc.q)
		if err != nil {
			t.Fatal(err)
		}
		if got := show(r.Paths); got != tc.want || r.Truncated || r.Blocked > 0 {
			t.Errorf("%s: %s (truncated %v, blocked %d), want %s", tc.name, got, r.Truncated, r.Blocked, tc.want)
		}
		if _, ok := r.Unique(); ok != (len(r.Paths) == 1) {
			t.Errorf("%s: Unique %v with %d paths", tc.name, ok, len(r.Paths))
		}
	}
	if r, err := pr.Reconstruct(Query{PC: 0x1040, Bits: 1}); err != nil || r.Blocked == 0 {
		t.Errorf("a return from an unknown callee: %+v, %v; want blocked", r, err)
	}
	if _, err := pr.Reconstruct(Query{PC: 0x2000, Bits: 1}); err == nil {
		t.Error("a PC outside the code was accepted")
	}
	if _, err := pr.Reconstruct(Query{PC: E, Bits: 0}); err == nil {
		t.Error("0 history bits were accepted")
	}
	if r, _ := pr.Reconstruct(Query{PC: E, History: 0b101, Bits: 3, Limit: 1}); !r.Truncated {
		t.Errorf("two candidates under a limit of one: %+v", r)
	}
}

type mapCounts map[[2]uint64]uint64

func (m mapCounts) Entered(start uint64) uint64 {
	var n uint64
	for k, v := range m {
		if k[1] == start {
			n += v
		}
	}
	return n
}
func (m mapCounts) Edge(from, to uint64) uint64 { return m[[2]uint64{from, to}] }

// TestLikeliest: the execution-count scheme follows the heavier edge at
// g's merge whatever the bits say, and stops at f's entry when calls into
// f outnumber the backedge; restricted to the history's candidates, it
// chooses among them only.
func TestLikeliest(t *testing.T) {
	pr := program(t)
	c := mapCounts{{0x1020, G2}: 10, {0x1024, G2}: 90, {0x1020, G1}: 90, {0x100c, D}: 5, {0x1008, D}: 95,
		{0x1000, B}: 95, {0x1000, C}: 5, {0x1014, A}: 20, {0x1034, A}: 80}
	for _, tc := range []struct {
		bits int
		want []uint64
	}{
		{1, []uint64{E, G2, G1, G0}},
		{3, []uint64{E, G2, G1, G0, D, B, A}},
	} {
		p, ok, err := pr.Likeliest(Query{PC: E, History: 0xffff, Bits: tc.bits}, c, nil)
		if err != nil || !ok || fmt.Sprint(starts(p)) != fmt.Sprint(tc.want) {
			t.Errorf("%d bits: %x (%v, %v), want %x", tc.bits, starts(p), ok, err, tc.want)
		}
	}
	c[[2]uint64{0x1014, A}] = 500
	if p, ok, _ := pr.Likeliest(Query{PC: E, Bits: 3}, c, nil); !ok || fmt.Sprint(starts(p)) != fmt.Sprint([]uint64{E, G2, G1, G0, D, B, A, E}) {
		t.Errorf("a heavier backedge: %x, want the earlier iteration", starts(p))
	}
	// Restricted to the history's candidates (g's branch taken), the
	// counts choose among them: the earlier iteration (the heavier
	// backedge) where both the entry and the backedge agree with the bits.
	q := Query{PC: E, History: 0b101, Bits: 3}
	r, _ := pr.Reconstruct(q)
	if p, ok, _ := pr.Likeliest(q, c, r.Paths); !ok || fmt.Sprint(starts(p)) != fmt.Sprint([]uint64{E, G2, G0, D, B, A, E}) {
		t.Errorf("among the history's candidates: %x (%v), want the earlier iteration through G0", starts(p), ok)
	}
	c[[2]uint64{0x1014, A}] = 20
	if p, ok, _ := pr.Likeliest(q, c, r.Paths); !ok || fmt.Sprint(starts(p)) != fmt.Sprint([]uint64{E, G2, G0, D, B, A}) {
		t.Errorf("among the history's candidates, calls heavier: %x (%v), want the segment from f's entry", starts(p), ok)
	}
	if _, ok, _ := pr.Likeliest(q, c, []Path{}); ok {
		t.Error("a walk among no candidates succeeded")
	}
	if _, _, err := pr.Likeliest(Query{PC: E, Bits: 1}, nil, nil); err == nil {
		t.Error("no counts accepted")
	}
}
