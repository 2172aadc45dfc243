package mepaths

import (
	"slices"
	"testing"

	"dcpi/analysis/cfg"
	. "dcpi/analysis/codetest"
)

// diamondLoop is a procedure with a diamond inside a loop:
//
//	0x1000 A: beq r1, C      (taken: C, not taken: B)
//	0x1004 B: addq; br D
//	0x100c C: addq
//	0x1010 D: addq; bne r2, A (the loop's backedge)
//	0x1018    ret
func diamondLoop(t *testing.T) *Graph {
	t.Helper()
	words := []uint32{Beq(1, 2), Addq(1, 1, 1), BrAlways(1), Addq(2, 2, 2), Addq(3, 3, 3), Bne(2, -6), Ret}
	code, err := cfg.NewCode(Image(0x1000, words, map[string]int{"f": 0}), cfg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := code.BuildNamed("f")
	if err != nil {
		t.Fatal(err)
	}
	return NewGraph(p)
}

func starts(g *Graph, paths []Path) [][]uint64 {
	var out [][]uint64
	for _, p := range paths {
		var s []uint64
		for _, b := range p {
			s = append(s, g.Proc.Blocks[b].Start)
		}
		out = append(out, s)
	}
	slices.SortFunc(out, slices.Compare)
	return out
}

// TestReconstruct: at D with no bits, both sides of the diamond are
// candidates (A starts the path from the entry or from the backedge); the
// newest bit (the beq's direction) picks one; a wrong-way bit leaves the
// other; a partner PC in B narrows the bitless case to B's side; more bits
// (the backedge's direction, taken) keep the candidates that agree; a PC
// outside the procedure is an error.
func TestReconstruct(t *testing.T) {
	g := diamondLoop(t)
	viaB, viaC := []uint64{0x1010, 0x1004, 0x1000}, []uint64{0x1010, 0x100c, 0x1000}
	for _, tc := range []struct {
		name    string
		q       Query
		want    [][]uint64
		narrows bool
	}{
		{"no bits", Query{PC: 0x1014}, [][]uint64{viaB, viaC}, false},
		{"taken: via C", Query{PC: 0x1014, History: 1, Bits: 1}, [][]uint64{viaC}, false},
		{"not taken: via B", Query{PC: 0x1014, History: 0, Bits: 1}, [][]uint64{viaB}, false},
		{"partner in B", Query{PC: 0x1014, Partner: 0x1008}, [][]uint64{viaB}, true},
		{"two bits, the second the backedge taken", Query{PC: 0x1014, History: 0b11, Bits: 2}, [][]uint64{viaC}, false},
	} {
		r, err := g.Reconstruct(tc.q)
		if err != nil {
			t.Fatal(err)
		}
		if got := starts(g, r.Paths); !slices.EqualFunc(got, tc.want, slices.Equal) || r.Narrowed != tc.narrows {
			t.Errorf("%s: %x (narrowed %v), want %x", tc.name, got, r.Narrowed, tc.want)
		}
	}
	if _, err := g.Reconstruct(Query{PC: 0x2000}); err == nil {
		t.Error("a PC outside the procedure was accepted")
	}
	if r, _ := g.Reconstruct(Query{PC: 0x1014, Limit: 1}); !r.Truncated {
		t.Errorf("two candidates under a limit of one: %+v", r)
	}
}
