package sched

import (
	"errors"
	"math/rand/v2"
	"testing"

	"dcpi/analysis/codetest"
	"dcpi/hwsim/alpha"
)

// The encoders of analysis/codetest, under short names.
var (
	mem   = codetest.Mem
	op    = codetest.Op
	opLit = codetest.OpLit
	br    = codetest.Br
	fp    = codetest.Op // FP operates share the operate format: fa, fb, fc in ra, rb, rc
)

const callsys = 0x83

var (
	ldq    = codetest.Ldq
	ldt    = func(ra, rb uint32, d int16) uint32 { return mem(0x23, ra, rb, d) }
	stq    = codetest.Stq
	stt    = func(ra, rb uint32, d int16) uint32 { return mem(0x27, ra, rb, d) }
	lda    = codetest.Lda
	addq   = codetest.Addq
	addqi  = codetest.Addqi
	subqi  = func(a, lit, c uint32) uint32 { return opLit(0x10, 0x29, a, lit, c) }
	cmpult = codetest.Cmpult
	xor    = func(a, b, c uint32) uint32 { return op(0x11, 0x40, a, b, c) }
	cmoveq = func(a, b, c uint32) uint32 { return op(0x11, 0x24, a, b, c) }
	sll    = func(a, b, c uint32) uint32 { return op(0x12, 0x39, a, b, c) }
	extbl  = func(a, b, c uint32) uint32 { return op(0x12, 0x06, a, b, c) }
	mull   = func(a, b, c uint32) uint32 { return op(0x13, 0x00, a, b, c) }
	mulq   = codetest.Mulq
	addt   = func(a, b, c uint32) uint32 { return fp(0x16, 0x0a0, a, b, c) }
	mult   = func(a, b, c uint32) uint32 { return fp(0x16, 0x0a2, a, b, c) }
	divt   = func(a, b, c uint32) uint32 { return fp(0x16, 0x0a3, a, b, c) }
	divs   = func(a, b, c uint32) uint32 { return fp(0x16, 0x083, a, b, c) }
	cpys   = func(a, b, c uint32) uint32 { return fp(0x17, 0x020, a, b, c) }
	bne    = codetest.Bne
	beq    = codetest.Beq
	fbeq   = func(fa uint32, disp int32) uint32 { return br(0x31, fa, disp) }
)

const (
	codeBase = 0x120000000
	dataBase = 0x140000000
	dataReg  = 20 // holds dataBase; never written by the sequences
	one      = 0x3ff0000000000000
)

// simulate runs words, placed at codeBase+off, once from PC codeBase+off
// through hwsim's issue model over a perfect memory system, and returns
// each executed PC's ground truth.
func simulate(t *testing.T, off uint64, words []uint32) map[uint64]*alpha.PCTruth {
	t.Helper()
	code := make([]uint32, off/4, off/4+uint64(len(words))+1)
	code = append(code, words...)
	code = append(code, callsys)
	as := alpha.NewAddressSpace()
	as.Map(codeBase, alpha.PageSize, alpha.PermR|alpha.PermX)
	b := make([]byte, 4*len(code))
	for i, w := range code {
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(w), byte(w>>8), byte(w>>16), byte(w>>24)
	}
	if err := as.WriteBytes(codeBase, b); err != nil {
		t.Fatal(err)
	}
	as.Map(dataBase, alpha.PageSize, alpha.PermR|alpha.PermW)
	c := alpha.NewCPU(alpha.EV5)
	ctx := alpha.Context{PC: codeBase + off}
	ctx.R[dataReg] = dataBase
	for i := range ctx.F {
		if i != 31 {
			ctx.F[i] = one
		}
	}
	ctx.R[1] = 1
	c.Load(&ctx, as)
	tm := alpha.NewTiming(c, alpha.PerfectMemory{})
	tm.Truth = alpha.NewGroundTruth()
	c.Run(^uint64(0))
	if c.Trap.Kind != alpha.TrapSyscall {
		t.Fatalf("stopped with %v", c.Trap)
	}
	return tm.Truth.PCs
}

// compare checks every instruction of s against the truth: executed once,
// head-of-queue cycles M, and the static stall cycles by cause.
func compare(t *testing.T, name string, s *Schedule, truth map[uint64]*alpha.PCTruth) {
	t.Helper()
	for _, in := range s.Insns {
		tr := truth[in.PC]
		if tr == nil || tr.Executed != 1 {
			t.Fatalf("%s: %#x (%v) did not execute once: %+v", name, in.PC, in.Op, tr)
		}
		var why [alpha.NumStallCauses]uint64
		for _, st := range in.Stalls {
			switch st.Reason {
			case Slotting:
				why[alpha.StallSlot] += uint64(st.Cycles)
			case DepRa:
				why[alpha.StallRa] += uint64(st.Cycles)
			case DepRb:
				why[alpha.StallRb] += uint64(st.Cycles)
			case Unit:
				if alpha.ClassOf(in.Op).Unit == alpha.UnitFDiv {
					why[alpha.StallFDiv] += uint64(st.Cycles)
				} else {
					why[alpha.StallIMul] += uint64(st.Cycles)
				}
			}
		}
		if tr.HeadCycles != uint64(in.M) || why != tr.Stall {
			t.Errorf("%s: %#x %v: M %d stalls %v (%+v); hwsim head %d stalls %v",
				name, in.PC, in.Op, in.M, why, in.Stalls, tr.HeadCycles, tr.Stall)
		}
	}
}

func mustSchedule(t *testing.T, b Block, opt Options) *Schedule {
	t.Helper()
	s, err := Of(b, opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The named sequences: each kind of rule at least once.
var sequences = []struct {
	name  string
	words []uint32
}{
	{"independent int", []uint32{addq(1, 2, 3), xor(4, 5, 6), addq(7, 8, 9), xor(10, 11, 12), addq(1, 1, 13)}},
	{"dependent chain", []uint32{addq(1, 2, 3), addq(3, 3, 4), xor(4, 3, 5), addq(5, 4, 6)}},
	{"shifts on E0", []uint32{sll(1, 2, 3), extbl(4, 5, 6), sll(7, 8, 9), addq(1, 2, 10)}},
	{"loads hit", []uint32{ldq(3, dataReg, 0), ldq(4, dataReg, 8), addq(3, 4, 5), ldq(6, dataReg, 16), stq(5, dataReg, 24)}},
	{"load store same cycle", []uint32{ldq(3, dataReg, 0), stq(1, dataReg, 8), ldq(4, dataReg, 16), stq(3, dataReg, 24), stq(4, dataReg, 32)}},
	{"multiplies", []uint32{mull(1, 1, 2), mull(1, 1, 3), mulq(2, 3, 4), addq(4, 1, 5), mull(5, 5, 6), addq(1, 1, 7)}},
	{"cmov latency", []uint32{cmoveq(1, 2, 3), addq(3, 1, 4), addq(4, 4, 5)}},
	{"fp pipes", []uint32{addt(1, 2, 3), mult(4, 5, 6), addt(7, 8, 9), cpys(3, 3, 10), mult(6, 9, 11), addt(11, 10, 12)}},
	{"fp divide", []uint32{divt(1, 2, 3), divs(4, 5, 6), addt(3, 6, 7), divt(7, 1, 8), stt(8, dataReg, 0)}},
	{"fp loads", []uint32{ldt(1, dataReg, 0), ldt(2, dataReg, 8), mult(1, 2, 3), stt(3, dataReg, 16)}},
	{"branches", []uint32{addq(1, 2, 3), beq(3, 0), cmpult(1, 3, 4), bne(4, 0), fbeq(1, 0), addq(1, 1, 5)}},
	{"wide block", []uint32{addq(1, 2, 3), addt(1, 2, 4), xor(5, 6, 7), mult(1, 2, 8), addq(1, 1, 9), addt(4, 8, 10), addq(9, 9, 11), lda(12, dataReg, 4)}},
}

// TestMatchesIssueModel holds the scheduler to hwsim's issue model: for
// straight-line code over a perfect memory system, M and the static stall
// cycles of every instruction equal the model's head-of-queue cycles and
// stalls, at every alignment of the sequence within its issue blocks.
func TestMatchesIssueModel(t *testing.T) {
	for _, sq := range sequences {
		for off := uint64(0); off < 16; off += 4 {
			pc := uint64(codeBase) + 0x100 + off
			s := mustSchedule(t, Block{PC: pc, Words: sq.words}, Options{})
			compare(t, sq.name, s, simulate(t, 0x100+off, sq.words))
		}
	}
}

// randomWord draws one instruction from a mix that writes only registers
// 1-15 (integer and FP), loads and stores near dataBase, and divides ones,
// so that no sequence faults or traps.
func randomWord(r *rand.Rand) uint32 {
	reg := func() uint32 { return uint32(r.IntN(15) + 1) }
	src := func() uint32 { return uint32(r.IntN(16)) } // 0 is r0 / f0: also fine
	// Integer and FP data apart, so that no FP instruction reads an
	// integer's bits as a denormal or a NaN.
	disp := func() int16 { return int16(8 * r.IntN(64)) }
	fdisp := func() int16 { return 512 + disp() }
	switch r.IntN(20) {
	case 0, 1:
		return ldq(reg(), dataReg, disp())
	case 2:
		return stq(src(), dataReg, disp())
	case 3:
		return ldt(reg(), dataReg, fdisp())
	case 4:
		return stt(src(), dataReg, fdisp())
	case 5:
		return lda(reg(), src(), int16(r.IntN(100)))
	case 6:
		return sll(src(), src(), reg())
	case 7:
		return cmoveq(src(), src(), reg())
	case 8:
		return mull(src(), src(), reg())
	case 9:
		return mulq(src(), src(), reg())
	case 10:
		return addt(src(), src(), reg())
	case 11:
		return mult(src(), src(), reg())
	case 12:
		return cpys(src(), src(), reg())
	case 13:
		// Divide by f16, which holds one and no instruction writes.
		return divt(src(), 16, reg())
	case 14:
		return beq(src(), 0)
	case 15:
		return fbeq(src(), 0)
	case 16:
		return addqi(src(), uint32(r.IntN(256)), reg())
	default:
		return addq(src(), src(), reg())
	}
}

// TestRandomSequencesMatch compares random sequences split into blocks at
// random points: each block scheduled with all the blocks before it as
// Options.Pred must match the model, which ran them as one stream.
func TestRandomSequencesMatch(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 3))
	for n := 0; n < 300; n++ {
		words := make([]uint32, 1+r.IntN(40))
		for i := range words {
			words[i] = randomWord(r)
		}
		off := 4 * uint64(r.IntN(4))
		start := uint64(codeBase) + 0x100 + off
		truth := simulate(t, 0x100+off, words)
		var pred []Block
		for i := 0; i < len(words); {
			j := min(len(words), i+1+r.IntN(12))
			b := Block{PC: start + 4*uint64(i), Words: words[i:j]}
			compare(t, "random", mustSchedule(t, b, Options{Pred: pred}), truth)
			pred = append(pred, b)
			i = j
		}
		if t.Failed() {
			t.Fatalf("sequence %d: %#x", n, words)
		}
	}
}

func TestCulprits(t *testing.T) {
	pc := uint64(0x10000)
	s := mustSchedule(t, Block{PC: pc, Words: []uint32{
		ldq(3, dataReg, 0), // 0x10000 M1
		addq(3, 3, 4),      // 0x10004: Ra=3 waits 2 for the load (cycle 3)
		mulq(4, 4, 5),      // 0x10008: Ra=4 waits 1 (cycle 4)
		mulq(1, 1, 6),      // 0x1000c: the multiplier is busy 8 after 0x10008 (cycle 12)
		stq(1, dataReg, 0), // 0x10010: new issue block (cycle 13)
		stq(2, dataReg, 8), // 0x10014: E0 taken by the store: slotting (cycle 14)
		xor(1, 6, 7),       // 0x10018: Rb=6 waits for the mulq at 0x1000c (cycle 24)
	}}, Options{})
	want := []struct {
		m      int
		stalls []Stall
	}{
		{1, nil},
		{2, []Stall{{Cycles: 2, Reason: DepRa, Culprit: 0x10000, Reg: 3}}},
		{1, []Stall{{Cycles: 1, Reason: DepRa, Culprit: 0x10004, Reg: 4}}},
		{8, []Stall{{Cycles: 8, Reason: Unit, Culprit: 0x10008}}},
		{1, nil},
		{1, []Stall{{Cycles: 1, Reason: Slotting, Culprit: 0x10010}}},
		{10, []Stall{{Cycles: 10, Reason: DepRb, Culprit: 0x1000c, Reg: 6}}},
	}
	for i, w := range want {
		in := s.Insns[i]
		if in.M != w.m || len(in.Stalls) != len(w.stalls) {
			t.Errorf("%#x: M %d stalls %+v, want %d %+v", in.PC, in.M, in.Stalls, w.m, w.stalls)
			continue
		}
		for j := range w.stalls {
			if in.Stalls[j] != w.stalls[j] {
				t.Errorf("%#x: stall %+v, want %+v", in.PC, in.Stalls[j], w.stalls[j])
			}
		}
	}
	if s.Cycles != 24 || s.Insns[6].Cycle != 24 {
		t.Errorf("block cycles %d, last issues at %d; want 24", s.Cycles, s.Insns[6].Cycle)
	}
}

func TestBadInput(t *testing.T) {
	for _, c := range []struct {
		b    Block
		opt  Options
		want error
	}{
		{Block{PC: 0x1000}, Options{}, ErrEmpty},
		{Block{PC: 0x1002, Words: []uint32{0}}, Options{}, ErrMisalign},
		{Block{PC: 0x1000, Words: []uint32{0}}, Options{LoadLatency: 1 << 40}, ErrLatency},
		{Block{PC: 0x1000, Words: []uint32{0}}, Options{Pred: []Block{{PC: 0x2000}}}, ErrEmpty},
	} {
		if _, err := Of(c.b, c.opt); !errors.Is(err, c.want) {
			t.Errorf("Of(%+v, %+v): %v, want %v", c.b, c.opt, err, c.want)
		}
	}
	if _, err := Of(Block{PC: ^uint64(0) - 3, Words: []uint32{0, 0}}, Options{}); err == nil {
		t.Error("a block wrapping the address space was accepted")
	}
	// Words that decode to nothing the model knows are scheduled as hwsim
	// issues them (then traps), not refused.
	if _, err := Of(Block{PC: 0x1000, Words: []uint32{0xffffffff, 0x1c000000}}, Options{}); err != nil {
		t.Error(err)
	}
}

// copyLoop is the loop of the paper's Figures 2 and 7, at 0x9810 in the
// paper (analysis/codetest holds it for every analysis package's tests).
var copyLoop = codetest.CopyLoop()

// TestFigure7 schedules the copy loop alone and after its own body (the
// loop back edge). The paper's scheduler gave M 1,0,1,0,1,0,1,0,1,1,1,0,1
// and noted that 009810's M should be 2, because the 21164 cannot issue a
// load two cycles after a store. hwsim's issue model has no such rule (a
// load and a store only may not issue in the same cycle), so here 009810's
// M stays 1 across the back edge; everything else matches the paper.
func TestFigure7(t *testing.T) {
	body := Block{PC: 0x9810, Words: copyLoop}
	want := []int{1, 0, 1, 0, 1, 0, 1, 0, 1, 1, 1, 0, 1}
	for _, opt := range []Options{{}, {Pred: []Block{body}}} {
		s := mustSchedule(t, body, opt)
		for i, in := range s.Insns {
			if in.M != want[i] {
				t.Errorf("pred %d: %#x M %d, want %d (stalls %+v)", len(opt.Pred), in.PC, in.M, want[i], in.Stalls)
			}
		}
		// 009818 cannot join the two instructions before it: both integer
		// pipes are taken, the last by 009814; the stores at 009834 and
		// 009838 find E0 taken by the store before.
		if st := s.Insns[2].Stalls; len(st) != 1 || st[0].Reason != Slotting || st[0].Culprit != 0x9814 {
			t.Errorf("009818 stalls %+v, want slotting behind 009814", st)
		}
		if st := s.Insns[10].Stalls; len(st) != 1 || st[0].Reason != Slotting || st[0].Culprit != 0x9834 {
			t.Errorf("009838 stalls %+v, want slotting behind 009834", st)
		}
	}
}

// TestLoopBackEdge runs a loop three times through the model: the head
// cycles of each loop PC are the sum of the body scheduled after the
// preheader, after the preheader and one iteration, and after two.
func TestLoopBackEdge(t *testing.T) {
	// Preheader: r1 = 3 iterations, r2 = r3 = the data page.
	pre := []uint32{lda(1, 31, 3), lda(2, dataReg, 0), lda(3, dataReg, 256)}
	loop := []uint32{
		mulq(1, 1, 4), // the multiplier is still busy at the next iteration
		ldq(5, 2, 0),
		stq(5, 3, 0), // waits for the load
		lda(2, 2, 8),
		lda(3, 3, 8),
		subqi(1, 1, 1),
		addq(5, 5, 6),
		bne(1, -8), // back to the mull
	}
	words := append(append([]uint32{}, pre...), loop...)
	const off = 0x104 // the loop starts mid issue block
	truth := simulate(t, off, words)
	p := Block{PC: codeBase + off, Words: pre}
	b := Block{PC: p.PC + 4*uint64(len(pre)), Words: loop}
	var sum [8]int
	paths := [][]Block{{p}, {p, b}, {p, b, b}}
	for _, path := range paths {
		for i, in := range mustSchedule(t, b, Options{Pred: path}).Insns {
			sum[i] += in.M
		}
	}
	for i := range loop {
		pc := b.PC + 4*uint64(i)
		if tr := truth[pc]; tr.Executed != 3 || tr.HeadCycles != uint64(sum[i]) {
			t.Errorf("%#x: hwsim %d executions, %d head cycles; schedule %d", pc, tr.Executed, tr.HeadCycles, sum[i])
		}
	}
	// The multiply waits across the back edge for the one before it;
	// without the predecessor nothing shows that.
	s := mustSchedule(t, b, Options{Pred: []Block{p, b}})
	if st := s.Insns[0].Stalls; len(st) != 1 || st[0].Reason != Unit || st[0].Culprit != b.PC {
		t.Errorf("mulq after the back edge: stalls %+v, want the multiplier held by %#x", st, b.PC)
	}
	if s := mustSchedule(t, b, Options{}); s.Insns[0].M != 1 || s.Insns[0].Stalls != nil {
		t.Errorf("mulq with no predecessor: M %d stalls %+v, want 1 and none", s.Insns[0].M, s.Insns[0].Stalls)
	}
}
