package cfg

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"

	"dcpi/hwsim/elfimage"
)

// Hand encoders (Alpha Architecture Handbook, "Instruction Formats").
func br(opc, ra uint32, disp int32) uint32 { return opc<<26 | ra<<21 | uint32(disp)&0x1fffff }
func mem(opc, ra, rb uint32, disp int16) uint32 {
	return opc<<26 | ra<<21 | rb<<16 | uint32(uint16(disp))
}
func opr(opc, fn, ra, rb, rc uint32) uint32 { return opc<<26 | ra<<21 | rb<<16 | fn<<5 | rc }
func opl(opc, fn, ra, lit, rc uint32) uint32 {
	return opc<<26 | ra<<21 | lit<<13 | 1<<12 | fn<<5 | rc
}
func jump(kind, ra, rb uint32) uint32 { return 0x1a<<26 | ra<<21 | rb<<16 | kind<<14 }

const (
	opBEQ, opBR, opBSR       = 0x39, 0x30, 0x34
	opLDA, opLDAH, opLDL     = 0x08, 0x09, 0x28
	rA0, rA1, rT0, rT1, rGP  = 16, 17, 1, 2, 29
	rRA, rPV, rZero, textLo  = 26, 27, 31, 0x10000
	roLo                     = 0x20000
	fnADDQ, fnS4ADDQ, fnSUBQ = 0x20, 0x22, 0x29
	fnCMPULE, fnBIS          = 0x3d, 0x20
)

var (
	nop  = opr(0x11, fnBIS, rZero, rZero, rZero)
	ret  = jump(2, rZero, rRA)
	halt = uint32(0)
)

// handImage lays out words at textLo as procedures named by syms (name,
// first word index), with ro as read-only data at roLo.
func handImage(t *testing.T, words []uint32, syms map[string]int, ro []byte) *elfimage.Image {
	t.Helper()
	text := make([]byte, 4*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint32(text[4*i:], w)
	}
	im := &elfimage.Image{Path: "hand",
		Segments: []elfimage.Segment{
			{Vaddr: textLo, Memsz: uint64(len(text)), Filesz: uint64(len(text)), Flags: elfimage.PermR | elfimage.PermX, Data: text},
			{Vaddr: roLo, Memsz: uint64(len(ro)), Filesz: uint64(len(ro)), Flags: elfimage.PermR, Data: ro},
		},
		Sections: []elfimage.Section{
			{Name: ".text", Flags: 0x6, Addr: textLo, Size: uint64(len(text))},
			{Name: ".rodata", Flags: 0x2, Addr: roLo, Size: uint64(len(ro))},
		},
		TextStart: textLo, TextEnd: textLo + uint64(len(text)),
	}
	for name, i := range syms {
		im.Symbols = append(im.Symbols, elfimage.Symbol{Name: name, Addr: textLo + 4*uint64(i), Kind: elfimage.SymFunc})
	}
	// Symbols sorted by address, as Parse leaves them.
	for i := range im.Symbols {
		for j := i + 1; j < len(im.Symbols); j++ {
			if im.Symbols[j].Addr < im.Symbols[i].Addr {
				im.Symbols[i], im.Symbols[j] = im.Symbols[j], im.Symbols[i]
			}
		}
	}
	return im
}

func pcAt(i int) uint64 { return textLo + 4*uint64(i) }

// edgeSet lists a proc's edges as "from->to kind" with blocks by start
// index, "E" and "X" for Entry and Exit.
func edgeSet(p *Proc) map[string]bool {
	name := func(n int) string {
		switch n {
		case p.Entry():
			return "E"
		case p.Exit():
			return "X"
		}
		return itoa(int((p.Blocks[n].Start - textLo) / 4))
	}
	m := map[string]bool{}
	for _, e := range p.Edges {
		m[name(e.From)+"->"+name(e.To)+" "+e.Kind.String()] = true
	}
	return m
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

func TestHandBranchesCallsLoops(t *testing.T) {
	words := []uint32{
		// f: 0..6
		br(opBEQ, rA0, 2),                // 0: beq a0, 3
		opr(0x10, fnADDQ, rA0, rA0, rA0), // 1
		br(opBR, rZero, 1),               // 2: br 4
		opr(0x10, fnSUBQ, rA0, rA0, rA0), // 3
		br(opBR, rGP, 0),                 // 4: br gp, 5 (get the PC): no block end
		br(opBSR, rRA, 1),                // 5: bsr ra, g (7)
		ret,                              // 6
		br(opBR, rZero, -1),              // 7: g: br 7, an infinite loop
		br(opBR, rZero, -9),              // 8: h: br 0, a tail call to f
		br(opBEQ, rA0, 1),                // 9: k: beq a0, 11
		jump(0, rZero, rA1),              // 10: jmp (a1): unknown
		mem(0x29, rPV, rA0, 0),           // 11: ldq pv,0(a0): an unknown callee
		jump(0, rZero, rPV),              // 12: jmp (pv): a tail call
		opr(0x10, fnADDQ, rA0, rA0, rA0), // 13: m: runs off into n
		halt,                             // 14: n: halt
	}
	im := handImage(t, words, map[string]int{"f": 0, "g": 7, "h": 8, "k": 9, "m": 13, "n": 14}, nil)
	c, err := NewCode(im, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.BuildNamed("f")
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, c, f)
	var starts []int
	for _, b := range f.Blocks {
		starts = append(starts, int((b.Start-textLo)/4))
	}
	if want := []int{0, 1, 3, 4}; !slices.Equal(starts, want) {
		t.Errorf("f blocks start at %v, want %v", starts, want)
	}
	want := []string{"E->0 entry", "0->1 fallthrough", "0->3 taken", "1->4 taken", "3->4 fallthrough", "4->X return"}
	got := edgeSet(f)
	for _, w := range want {
		if !got[w] {
			t.Errorf("f lacks edge %s; has %v", w, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("f has %d edges %v, want %d", len(got), got, len(want))
	}
	if len(f.Calls) != 1 || f.Calls[0].PC != pcAt(5) || f.Calls[0].Target != pcAt(7) || !f.Calls[0].Known || !f.Calls[0].NoReturn {
		t.Errorf("f calls = %+v, want the bsr to g at %#x, known and never returning", f.Calls, pcAt(5))
	}
	if b, ok := f.BlockOf(pcAt(5)); !ok || f.Blocks[b].Start != pcAt(4) {
		t.Errorf("BlockOf(%#x) = %d, %v", pcAt(5), b, ok)
	}

	split, _ := NewCode(im, Options{SplitAtCalls: true})
	fs, _ := split.BuildNamed("f")
	if len(fs.Blocks) != 5 {
		t.Errorf("with SplitAtCalls f has %d blocks, want 5 (the ret in its own)", len(fs.Blocks))
	}

	g, _ := c.BuildNamed("g")
	if nb := g.NoExitBlocks(); len(nb) != 1 || len(g.In(g.Exit())) != 0 {
		t.Errorf("g: no-exit blocks %v, exit in-edges %v; want the loop with no way out", nb, g.In(g.Exit()))
	}
	if !edgeSet(g)["7->7 taken"] {
		t.Errorf("g lacks its self loop: %v", edgeSet(g))
	}
	h, _ := c.BuildNamed("h")
	if e := h.Edges[h.In(h.Exit())[0]]; e.Kind != TailCall || e.Target != pcAt(0) {
		t.Errorf("h's exit edge = %+v, want a tail call to f", e)
	}
	k, _ := c.BuildNamed("k")
	if !k.MissingEdges || len(k.Jumps) != 2 || k.Jumps[0].Resolved || k.Jumps[0].Note == "" || k.Jumps[1].Resolved {
		t.Errorf("k: missing %v jumps %+v, want the jmp (a1) unresolved with a note", k.MissingEdges, k.Jumps)
	}
	if !edgeSet(k)["11->X tailcall"] {
		t.Errorf("k: jmp (pv) is not a tail call: %v", edgeSet(k))
	}
	m, _ := c.BuildNamed("m")
	if !edgeSet(m)["13->X fallout"] {
		t.Errorf("m does not fall out: %v", edgeSet(m))
	}
	n, _ := c.BuildNamed("n")
	if !edgeSet(n)["14->X halt"] {
		t.Errorf("n does not halt: %v", edgeSet(n))
	}
}

// TestHandJumpTable builds gcc's switch: a gp prologue, a bounds check,
// s4addq, ldl of a gp-relative entry, addq gp, jmp.
func TestHandJumpTable(t *testing.T) {
	const gpOff = 0x100 // gp = f + 0x10100
	gp := uint64(textLo + 0x10000 + gpOff)
	targets := []int{9, 10, 11, 9}
	ro := make([]byte, 4*len(targets)+4)
	for i, tg := range targets {
		binary.LittleEndian.PutUint32(ro[4*i:], uint32(int32(int64(pcAt(tg))-int64(gp))))
	}
	binary.LittleEndian.PutUint32(ro[4*len(targets):], 0x7fff0000) // past the table: garbage
	tableOff := int16(int64(roLo) - int64(gp))
	words := []uint32{
		mem(opLDAH, rGP, rPV, 1),                              // 0: ldah gp,1(pv)
		mem(opLDA, rGP, rGP, gpOff),                           // 1: lda gp,0x100(gp)
		mem(opLDA, 9, rGP, tableOff),                          // 2: lda s0,table(gp)
		opl(0x10, fnCMPULE, rA0, uint32(len(targets)-1), rT0), // 3: cmpule a0,3,t0
		br(opBEQ, rT0, 8),                                     // 4: beq t0, 13 (default)
		opr(0x10, fnS4ADDQ, rA0, 9, rT1),                      // 5: s4addq a0,s0,t1
		mem(opLDL, rT1, rT1, 0),                               // 6: ldl t1,0(t1)
		opr(0x10, fnADDQ, rGP, rT1, rT1),                      // 7: addq gp,t1,t1
		jump(0, rZero, rT1),                                   // 8: jmp (t1)
		ret,                                                   // 9
		ret,                                                   // 10
		nop,                                                   // 11
		ret,                                                   // 12
		ret,                                                   // 13
	}
	im := handImage(t, words, map[string]int{"f": 0}, ro)
	c, err := NewCode(im, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.BuildNamed("f")
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, c, p)
	if p.MissingEdges || len(p.Jumps) != 1 {
		t.Fatalf("jumps %+v missing %v", p.Jumps, p.MissingEdges)
	}
	j := p.Jumps[0]
	want := []uint64{pcAt(9), pcAt(10), pcAt(11)}
	if !j.Resolved || j.Entries != 4 || j.Table != roLo || len(j.Targets) != 3 || j.Targets[0] != want[0] || j.Targets[1] != want[1] || j.Targets[2] != want[2] {
		t.Errorf("jump = %+v, want the 4-entry table at %#x to %#x", j, roLo, want)
	}
	es := edgeSet(p)
	for _, w := range []string{"5->9 jumptable", "5->10 jumptable", "5->11 jumptable", "0->13 taken"} {
		if !es[w] {
			t.Errorf("missing edge %s: %v", w, es)
		}
	}

	// Without the bounds check the table's length is unknown: missing edges.
	words[4] = nop
	im = handImage(t, words, map[string]int{"f": 0}, ro)
	c, _ = NewCode(im, Options{})
	p, _ = c.BuildNamed("f")
	if !p.MissingEdges || p.Jumps[0].Resolved || !strings.Contains(p.Jumps[0].Note, "bounds check") {
		t.Errorf("unbounded table: missing %v jump %+v", p.MissingEdges, p.Jumps[0])
	}
}

func TestBadInput(t *testing.T) {
	if _, err := NewCode(nil, Options{}); err == nil {
		t.Error("NewCode(nil) succeeded")
	}
	im := handImage(t, []uint32{ret, ret}, map[string]int{"f": 0}, nil)
	c, err := NewCode(im, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.BuildNamed("nope"); !errors.Is(err, ErrNoProcedure) {
		t.Errorf("BuildNamed(nope) = %v, want ErrNoProcedure", err)
	}
	if _, err := c.At(0x999); !errors.Is(err, ErrNoProcedure) {
		t.Errorf("At(0x999) = %v, want ErrNoProcedure", err)
	}
	for _, r := range []Range{{Start: textLo + 2, End: textLo + 8}, {Start: textLo, End: textLo}, {Start: textLo, End: textLo + 64}, {Start: roLo, End: roLo + 4}} {
		if _, err := c.Build(r); err == nil {
			t.Errorf("Build(%+v) succeeded", r)
		}
	}
	empty := &elfimage.Image{Path: "empty"}
	if _, err := NewCode(empty, Options{}); err == nil {
		t.Error("NewCode of an image without code succeeded")
	}
}

// checkInvariants checks what every graph must satisfy: blocks partition
// the procedure in address order, every in-procedure branch target starts
// a block, edges are listed consistently at both ends, at most one edge
// joins two nodes, only Entry leaves Entry and only Exit is entered by
// exit edges.
func checkInvariants(t *testing.T, c *Code, p *Proc) {
	t.Helper()
	if len(p.Insns) != int((p.End-p.Start)/4) || len(p.Blocks) == 0 {
		t.Fatalf("%s: %d insns, %d blocks", p.Name, len(p.Insns), len(p.Blocks))
	}
	at := p.Start
	starts := map[uint64]int{}
	for i, b := range p.Blocks {
		if b.Start != at || b.End <= b.Start {
			t.Fatalf("%s: block %d is [%#x, %#x), want it to start at %#x", p.Name, i, b.Start, b.End, at)
		}
		starts[b.Start] = i
		at = b.End
	}
	if at != p.End {
		t.Fatalf("%s: blocks end at %#x, want %#x", p.Name, at, p.End)
	}
	for _, in := range p.Insns {
		k, tg := classify(in)
		if (k == ctlCond || k == ctlBr) && tg >= p.Start && tg < p.End {
			if _, ok := starts[tg]; !ok {
				t.Errorf("%s: branch at %#x targets %#x, not a block start", p.Name, in.PC, tg)
			}
		}
	}
	pairs := map[[2]int]bool{}
	for ei, e := range p.Edges {
		if pairs[[2]int{e.From, e.To}] {
			t.Errorf("%s: two edges %d->%d", p.Name, e.From, e.To)
		}
		pairs[[2]int{e.From, e.To}] = true
		if e.From == p.Exit() || e.To == p.Entry() {
			t.Errorf("%s: edge %+v leaves Exit or enters Entry", p.Name, e)
		}
		if (e.From == p.Entry()) != (e.Kind == Entry) {
			t.Errorf("%s: edge %+v: Entry edges and edges from Entry disagree", p.Name, e)
		}
		toExit := e.Kind >= Return
		if (e.To == p.Exit()) != toExit {
			t.Errorf("%s: edge %+v: exit kinds and edges to Exit disagree", p.Name, e)
		}
		if !contains(p.Out(e.From), ei) || !contains(p.In(e.To), ei) {
			t.Errorf("%s: edge %d not listed at both ends", p.Name, ei)
		}
		if e.From < len(p.Blocks) && e.PC != p.Blocks[e.From].End-4 {
			t.Errorf("%s: edge %+v does not leave from its block's last instruction", p.Name, e)
		}
	}
	for n := 0; n < p.NumNodes(); n++ {
		if len(p.Out(n)) != len(p.Successors(n)) || len(p.In(n)) != len(p.Predecessors(n)) {
			t.Fatalf("%s: node %d: helpers disagree", p.Name, n)
		}
	}
	if len(p.Out(p.Entry())) != len(p.Entries) {
		t.Errorf("%s: %d entry edges for entries %v", p.Name, len(p.Out(p.Entry())), p.Entries)
	}
	if !p.Blocks[0].Reachable {
		t.Errorf("%s: first block unreachable", p.Name)
	}
	for _, j := range p.Jumps {
		if j.Note == "" {
			t.Errorf("%s: jump %+v without a note", p.Name, j)
		}
	}
}

func contains(s []int, x int) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
