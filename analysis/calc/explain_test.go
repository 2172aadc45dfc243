package calc

import (
	"errors"
	"math"
	"testing"

	"dcpi/analysis/cfg"
	"dcpi/analysis/codetest"
	"dcpi/hwsim/alpha"
)

// buildProc builds procedure name of words laid out at base and its
// static analysis.
func buildProc(t *testing.T, base uint64, words []uint32) *Procedure {
	t.Helper()
	c, err := cfg.NewCode(codetest.Image(base, words, map[string]int{"proc": 0}), cfg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cp, err := c.BuildNamed("proc")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProcedure(cp, StaticOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// givenFrequencies gives every class frequency F (the tests set them
// directly, as the paper's Figure 10 used measured counts).
func givenFrequencies(p *Procedure, F float64) *Frequencies {
	f := &Frequencies{Class: make([]ClassEstimate, p.Classes.Count), p: p}
	for i := range f.Class {
		f.Class[i] = ClassEstimate{F: F, Method: Ratios, Confidence: High}
	}
	return f
}

// copyProc is the paper's copy loop at 0x9810 after a preheader of four
// instructions and before a ret.
func copyProc(t *testing.T) *Procedure {
	pre := []uint32{codetest.Lda(2, 31, 0), codetest.Lda(3, 31, 64), codetest.Nop, codetest.Nop}
	words := append(append(pre, codetest.CopyLoop()...), codetest.Ret)
	return buildProc(t, codetest.CopyLoopPC-16, words)
}

// copyFrequencies gives the loop F = 1527 (Figure 7) and the code
// around it, which runs once per call, F = 1.
func copyFrequencies(t *testing.T, p *Procedure) *Frequencies {
	f := givenFrequencies(p, 1527)
	pre, _ := p.CFG.BlockOf(codetest.CopyLoopPC - 16)
	loop, _ := p.CFG.BlockOf(codetest.CopyLoopPC)
	if p.Classes.Node[pre] == p.Classes.Node[loop] {
		t.Fatal("the preheader shares the loop's class")
	}
	f.Class[p.Classes.Node[pre]].F = 1
	return f
}

// figure2 is the paper's Figure 2 samples of the copy loop.
var figure2 = map[uint64]float64{
	0x9810: 3126, 0x9814: 0, 0x9818: 1636, 0x981c: 390, 0x9820: 1482, 0x9824: 0,
	0x9828: 27766, 0x982c: 0, 0x9830: 1493, 0x9834: 174727, 0x9838: 1548, 0x983c: 0, 0x9840: 1586,
}

const cyclesPeriod = 62 * 1024

func figure2Profile() *Profile {
	prof := &Profile{Samples: map[uint64]*Counts{}}
	prof.Periods[alpha.EvCycles] = cyclesPeriod
	for pc, s := range figure2 {
		prof.Samples[pc] = &Counts{alpha.EvCycles: s}
	}
	return prof
}

func insnAt(t *testing.T, e *Explanation, pc uint64) *InsnExplanation {
	t.Helper()
	for i := range e.Insns {
		if e.Insns[i].PC == pc {
			return &e.Insns[i]
		}
	}
	t.Fatalf("no instruction at %#x", pc)
	return nil
}

func hasCause(in *InsnExplanation, c Cause) (Candidate, bool) {
	for _, k := range in.Candidates {
		if k.Cause == c {
			return k, true
		}
	}
	return Candidate{}, false
}

// TestFigure2 explains the copy loop with the paper's samples and F =
// 1527 (Figure 7): the stq at 009828 stalls 17 cycles beyond its M and
// may be waiting for the ldq at 009810 (D-cache), for the write buffer or
// for a DTB miss; given DTBMISS samples, none of them near it, the DTB
// miss is ruled out, as the paper expects dcpicalc would.
func TestFigure2(t *testing.T) {
	p := copyProc(t)
	f := copyFrequencies(t, p)
	prof := figure2Profile()
	e, err := Explain(p, f, prof, ExplainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := insnAt(t, e, 0x9828)
	if st.M != 1 || math.Abs(st.CPI-27766.0/1527) > 1e-9 || math.Abs(st.Dynamic-(27766.0/1527-1)) > 1e-9 {
		t.Errorf("009828: M %d CPI %.2f dynamic %.2f", st.M, st.CPI, st.Dynamic)
	}
	if d, ok := hasCause(st, DCache); !ok || !hasCulprit(st, DCache, 0x9810) {
		t.Errorf("009828: no D-cache candidate behind 009810: %+v", st.Candidates)
	} else if !math.IsInf(d.Bound, 1) {
		t.Errorf("009828: D-cache bounded (%v) without DMISS samples", d.Bound)
	}
	for _, c := range []Cause{WriteBuffer, DTB} {
		if _, ok := hasCause(st, c); !ok {
			t.Errorf("009828: no %v candidate: %+v", c, st.Candidates)
		}
	}
	// Not a block head, not a line start, not a load, not a barrier.
	for _, c := range []Cause{ICache, ITB, Mispredict, Sync, IMULBusy, FDIVBusy} {
		if _, ok := hasCause(st, c); ok {
			t.Errorf("009828: %v not ruled out: %+v", c, st.Candidates)
		}
	}
	// 009834 waits for 00981c's load.
	if !hasCulprit(insnAt(t, e, 0x9834), DCache, 0x981c) {
		t.Errorf("009834: no D-cache candidate behind 00981c: %+v", insnAt(t, e, 0x9834).Candidates)
	}
	// 009810 heads the loop: the bne may have been mispredicted.
	if !hasCulprit(insnAt(t, e, 0x9810), Mispredict, 0x9840) {
		t.Errorf("009810: no mispredict candidate behind 009840: %+v", insnAt(t, e, 0x9810).Candidates)
	}

	// DTBMISS sampled, none near the store: ruled out.
	prof.Periods[alpha.EvDTBMiss] = 1000
	e, err = Explain(p, f, prof, ExplainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st = insnAt(t, e, 0x9828)
	if _, ok := hasCause(st, DTB); ok {
		t.Errorf("009828: DTB miss not ruled out by zero DTBMISS samples: %+v", st.Candidates)
	}
	if _, ok := hasCause(st, DCache); !ok {
		t.Errorf("009828: D-cache lost: %+v", st.Candidates)
	}
	// DTBMISS samples just after it (the skid) bring it back, bounded.
	prof.Samples[0x9830][alpha.EvDTBMiss] = 5000
	e, _ = Explain(p, f, prof, ExplainOptions{})
	st = insnAt(t, e, 0x9828)
	d, ok := hasCause(st, DTB)
	// The upper end for 5000 samples, 1000 misses each, 35 cycles a
	// miss, per execution; plus the loop's exit, where a miss's sample
	// may land past the ret: one miss per exit.
	want := (math.Sqrt(5001)+1)*(math.Sqrt(5001)+1)*1000*35/(1527*cyclesPeriod) + 35.0/1527
	if !ok || math.Abs(d.Bound-want) > 1e-9*want {
		t.Errorf("009828: DTB candidate %+v, want bound %v", d, want)
	}
	checkSummary(t, e)
}

func hasCulprit(in *InsnExplanation, c Cause, pc uint64) bool {
	for _, k := range in.Candidates {
		if k.Cause == c && k.Culprit == pc {
			return true
		}
	}
	return false
}

// checkSummary checks what must hold of every summary.
func checkSummary(t *testing.T, e *Explanation) {
	t.Helper()
	s := e.Summary
	if s.Actual <= 0 {
		t.Fatalf("nothing tallied: %+v", s)
	}
	if sum := s.TotalStall + s.Execution + s.NetSamplingError; math.Abs(sum-1) > 1e-12 {
		t.Errorf("total stall %v + execution %v + sampling error %v = %v", s.TotalStall, s.Execution, s.NetSamplingError, sum)
	}
	if math.Abs(s.Execution+s.SubtotalStatic-s.BestCase/s.Actual) > 1e-9 {
		t.Errorf("execution %v + static %v != best case %v", s.Execution, s.SubtotalStatic, s.BestCase/s.Actual)
	}
	stat := 0.0
	for _, v := range s.Static {
		stat += v
	}
	if math.Abs(stat-s.SubtotalStatic) > 1e-12 || s.Static[RcDep] != 0 {
		t.Errorf("static rows %v, subtotal %v", s.Static, s.SubtotalStatic)
	}
	var stall float64
	for _, in := range e.Insns {
		if in.Known && in.Dynamic > 0 {
			stall += in.F * in.Dynamic
		}
	}
	for c, r := range s.Dynamic {
		if r.Lo < 0 || r.Lo > r.Hi+1e-12 || r.Hi > stall/s.Actual+1e-12 {
			t.Errorf("%v: range %v (dynamic stall %v)", Cause(c), r, stall/s.Actual)
		}
	}
	if s.UnexplainedGain.Lo > 0 || s.UnexplainedStall.Lo < 0 {
		t.Errorf("unexplained %v, %v", s.UnexplainedStall, s.UnexplainedGain)
	}
}

// TestFigure2Summary checks the copy loop's tally by hand: the loop is
// the only code with samples.
func TestFigure2Summary(t *testing.T) {
	p := copyProc(t)
	f := copyFrequencies(t, p)
	e, err := Explain(p, f, figure2Profile(), ExplainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := e.Summary
	checkSummary(t, e)
	// 13 loop instructions at F = 1527, 5 around it at 1.
	if s.Instructions != 13*1527+5 || s.Actual != 213754 || s.AllSamples != 213754 {
		t.Errorf("instructions %v actual %v all %v", s.Instructions, s.Actual, s.AllSamples)
	}
	// D-cache is a candidate for both big store stalls; no cause is
	// their only one (write buffer, DTB), so it has no floor.
	if r := s.Dynamic[DCache]; r.Hi < (27766+174727-2*2*1527)/s.Actual || r.Lo != 0 {
		t.Errorf("D-cache %v", r)
	}
	// 009820, 009830, 009838 and 009840 are within 2 standard
	// deviations of F·M, and so are the preheader and the ret (F = 1, no
	// samples): their differences are the net sampling error.
	noise := (1482 - 1527) + (1493 - 1527) + (1548 - 1527) + (1586 - 1527) - 3.0
	if math.Abs(s.NetSamplingError*s.Actual-noise) > 1e-6 || s.UnexplainedGain.Lo != 0 {
		t.Errorf("sampling error %v samples, want %v; gain %v", s.NetSamplingError*s.Actual, noise, s.UnexplainedGain)
	}
}

// TestProcedureCap: IMISS samples cap the I-cache row at their misses
// times a fill from memory, whatever the instructions' own bounds.
func TestProcedureCap(t *testing.T) {
	p := copyProc(t)
	f := copyFrequencies(t, p)
	prof := figure2Profile()
	prof.Periods[alpha.EvIMiss] = 10000
	prof.Samples[0x9820][alpha.EvCycles] = 5000 // a line start, stalled
	prof.Samples[0x9824][alpha.EvIMiss] = 3
	e, err := Explain(p, f, prof, ExplainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkSummary(t, e)
	limit := (math.Sqrt(4) + 1) * (math.Sqrt(4) + 1) * 10000 * 140 / cyclesPeriod / e.Summary.Actual
	if r := e.Summary.Dynamic[ICache]; r.Hi > limit+1e-12 || r.Hi == 0 {
		t.Errorf("I-cache %v, cap %v", r, limit)
	}
}

// TestICacheRules: an instruction inside a block can miss only at a line
// start; a block head is cleared when every predecessor that is not rare
// ends in its line.
func TestICacheRules(t *testing.T) {
	nop, add := codetest.Nop, codetest.Addq(1, 2, 3)
	words := []uint32{
		codetest.Beq(1, 1), // 00: A → C
		add,                // 04: B, falls into C
		add,                // 08: C: both predecessors end in its line
		codetest.Bne(2, 5), // 0c: → 24
		nop, nop, nop, nop, // 10-1c: D, falls into E at 20
		nop,          // 20: E? no: D runs to 20
		add,          // 24: E: predecessors end at 0c (another line) and 20
		codetest.Ret, // 28
	}
	p := buildProc(t, 0x10000, words)
	f := givenFrequencies(p, 100)
	prof := &Profile{Samples: map[uint64]*Counts{}}
	prof.Periods[alpha.EvCycles] = cyclesPeriod
	for i := range words {
		prof.Samples[0x10000+4*uint64(i)] = &Counts{alpha.EvCycles: 5000}
	}
	e, err := Explain(p, f, prof, ExplainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]bool{0x10000: true, 0x10004: false, 0x10008: false, 0x1000c: false, 0x10014: false, 0x10020: true, 0x10024: true}
	for pc, w := range want {
		if _, got := hasCause(insnAt(t, e, pc), ICache); got != w {
			t.Errorf("%#x: I-cache candidate %v, want %v (%+v)", pc, got, w, insnAt(t, e, pc).Candidates)
		}
	}
	// The branch to 24 made rare: 24's only other predecessor ends at 20,
	// in its line.
	bE, _ := p.CFG.BlockOf(0x10024)
	for _, ei := range p.CFG.Blocks[bE].Preds {
		if p.CFG.Edges[ei].PC == 0x1000c {
			c := p.Classes.Edge[ei]
			if c == p.Classes.Node[bE] {
				t.Fatal("the branch edge shares its block's class")
			}
			f.Class[c].F = 1
		}
	}
	e, err = Explain(p, f, prof, ExplainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, got := hasCause(insnAt(t, e, 0x10024), ICache); got {
		t.Errorf("0x10024: I-cache not cleared with a rare edge from another line: %+v", insnAt(t, e, 0x10024).Candidates)
	}
	checkSummary(t, e)
}

// TestExplainBadInput: errors, never panics.
func TestExplainBadInput(t *testing.T) {
	p := copyProc(t)
	other := copyProc(t)
	f := copyFrequencies(t, p)
	prof := figure2Profile()
	noCycles := figure2Profile()
	noCycles.Periods[alpha.EvCycles] = 0
	negative := figure2Profile()
	negative.Samples[0x9810][alpha.EvCycles] = -1
	nanF := givenFrequencies(p, math.NaN())
	cases := []struct {
		name string
		p    *Procedure
		f    *Frequencies
		prof *Profile
		opt  ExplainOptions
	}{
		{"nil procedure", nil, f, prof, ExplainOptions{}},
		{"empty procedure", &Procedure{}, f, prof, ExplainOptions{}},
		{"nil frequencies", p, nil, prof, ExplainOptions{}},
		{"another procedure's frequencies", other, f, prof, ExplainOptions{}},
		{"nil profile", p, f, nil, ExplainOptions{}},
		{"no cycles period", p, f, noCycles, ExplainOptions{}},
		{"negative samples", p, f, negative, ExplainOptions{}},
		{"NaN frequency", p, nanF, prof, ExplainOptions{}},
		{"negative margin", p, f, prof, ExplainOptions{Margin: -1}},
		{"negligible 1", p, f, prof, ExplainOptions{Negligible: 1}},
	}
	for _, c := range cases {
		if _, err := Explain(c.p, c.f, c.prof, c.opt); !errors.Is(err, ErrExplain) {
			t.Errorf("%s: error %v", c.name, err)
		}
	}
	short := &Frequencies{Class: f.Class[:1], p: p}
	if _, err := Explain(p, short, prof, ExplainOptions{}); !errors.Is(err, ErrExplain) {
		t.Errorf("too few classes: %v", err)
	}
}
