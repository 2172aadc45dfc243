package calc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"dcpi/analysis"
	"dcpi/analysis/report"
	"dcpi/analysis/sched"
	"dcpi/analysis/symbolize"
	"dcpi/hwsim/alpha"
	"dcpi/storage"
	"dcpi/wire"
	"dcpi/workloads"
)

// handReport is a dcpicalc report built by hand, not by the estimator: the
// copy loop of Figure 2 (a D-cache/write-buffer/DTB stall on a store, dual
// issue, a static slotting stall, an Ra dependency), a block with a
// low-confidence frequency, and a block with none.
func handReport() *Report {
	const base = 0x120000900
	loop := func(i int, s float64, m int, cpi float64) InsnExplanation {
		return InsnExplanation{PC: base + 4*uint64(i), Word: uint32(0xa0000000 + i), Block: 1, S: s, M: m,
			F: 1527, Known: true, Confidence: High, CPI: cpi, Dynamic: cpi - float64(m)}
	}
	insns := []InsnExplanation{
		// Block 0: entry, one execution per P, low confidence.
		{PC: base - 8, Word: 0x47e03401, Block: 0, S: 3, M: 1, F: 1.5, Known: true, Confidence: Low, CPI: 2, Dynamic: 1,
			Candidates: []Candidate{{Cause: ICache, Bound: math.Inf(1)}}},
		{PC: base - 4, Word: 0x47e03402, Block: 0, S: 0, M: 0, F: 1.5, Known: true, Confidence: Low, CPI: 0, Dynamic: 0},
		loop(0, 3126, 1, 2.0),
		loop(1, 0, 0, 0),
		loop(2, 1636, 1, 1.0),
		loop(3, 390, 0, 0.26),
		loop(4, 1482, 1, 1.0),
		loop(5, 0, 0, 0),
		loop(6, 27766, 1, 18.2),
		loop(7, 0, 0, 0),
		loop(8, 1493, 1, 1.0),
		loop(9, 174727, 2, 114.4),
		loop(10, 1548, 1, 1.0),
		loop(11, 0, 0, 0),
		loop(12, 1586, 1, 1.0),
		// Block 2: no frequency estimate.
		{PC: base + 52, Word: 0x6bfa8001, Block: 2, S: 7, M: 1},
	}
	insns[2].Candidates = []Candidate{{Cause: DTB, Bound: math.Inf(1)}, {Cause: Mispredict, Culprit: base + 48, Bound: 3}}
	dwD := func(culprit uint64) []Candidate {
		return []Candidate{{Cause: DCache, Culprit: culprit, Bound: math.Inf(1)}, {Cause: DTB, Bound: math.Inf(1)},
			{Cause: WriteBuffer, Bound: 40}}
	}
	insns[8].Candidates = dwD(base)
	insns[11].Candidates = dwD(base + 12)
	insns[11].Static = []sched.Stall{{Cycles: 1, Reason: sched.Slotting, Culprit: base + 32}}
	insns[12].Static = []sched.Stall{{Cycles: 1, Reason: sched.Slotting, Culprit: base + 36}}
	insns[6].Static = []sched.Stall{{Cycles: 1, Reason: sched.DepRa, Culprit: base + 8, Reg: 5}}
	text := []string{"lda\tt0,0(a0)", "mov\tzero,t2", "ldq\tt4,0(t1)", "addq\tt0,0x4,t0", "ldq\tt5,8(t1)", "ldq\tt6,16(t1)",
		"ldq\ta0,24(t1)", "lda\tt1,32(t1)", "stq\tt4,0(t2)", "cmpult\tt0,v0,t4", "stq\tt5,8(t2)", "stq\tt6,16(t2)", "stq\ta0,24(t2)",
		"lda\tt2,32(t2)", "bne\tt4,120000900", "ret"}
	p := ProcReport{Procedure: "copy", Image: "/bin/stream", ImageKey: wire.ImageKey{}, File: "test bytes", Start: base - 8, End: base + 56,
		HasLines: true, Hosts: 2, Periods: map[string]float64{"cycles": 63488, "dmiss": 4096},
		Samples: map[string]float64{"cycles": 213764, "dmiss": 12}}
	for _, s := range text {
		p.Text = append(p.Text, InsnText{Insn: s})
	}
	p.Text[0] = InsnText{Insn: text[0], File: "src/stream.c", Line: 30, Source: "void copy(uint64_t *c, const uint64_t *a, uint64_t n)"}
	p.Text[2] = InsnText{Insn: text[2], File: "src/stream.c", Line: 33, Source: "        c[i] = a[i];"}
	p.Text[15] = InsnText{Insn: text[15], File: "src/stream.c", Line: 34}
	p.Explanation = &Explanation{Insns: insns, Summary: Summary{
		Instructions: 36016, BestCase: 14686, Actual: 35171, AllSamples: 37777,
		UnexplainedStall: Range{Lo: 0.023, Hi: 0.023}, UnexplainedGain: Range{Lo: -0.043, Hi: -0.043},
		SubtotalDynamic: 0.441, SubtotalStatic: 0.048, TotalStall: 0.489, Execution: 0.512, NetSamplingError: -0.001}}
	s := &p.Explanation.Summary
	s.Dynamic[ICache] = Range{Lo: 0, Hi: 0.003}
	s.Dynamic[DCache] = Range{Lo: 0.279, Hi: 0.279}
	s.Dynamic[DTB] = Range{Lo: 0.092, Hi: 0.183}
	s.Dynamic[WriteBuffer] = Range{Lo: 0, Hi: 0.063}
	s.Dynamic[Mispredict] = Range{Lo: 0, Hi: 0.026}
	s.Static[Slotting], s.Static[RaDep], s.Static[RbDep] = 0.018, 0.02, 0.01
	// A second procedure with no frequency anywhere.
	q := ProcReport{Procedure: "idle", Image: "/vmunix", File: "embedded /vmunix", Start: 0x1000, End: 0x1004, Hosts: 2,
		Periods: map[string]float64{"cycles": 63488}, Samples: map[string]float64{"cycles": 5},
		Text: []InsnText{{Insn: "br\t1000"}},
		Explanation: &Explanation{Insns: []InsnExplanation{{PC: 0x1000, Word: 0xc3ffffff, S: 5, M: 1}},
			Summary: Summary{AllSamples: 5}}}
	return &Report{CyclesSamples: 250000, Procedures: []ProcReport{p, q}}
}

func TestCalcRenderGolden(t *testing.T) {
	r := handReport()
	for _, tc := range []struct {
		file    string
		summary bool
		json    bool
	}{
		{"calc_hand.txt", false, false},
		{"calc_hand_summary.txt", true, false},
		{"calc_hand.json", false, true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			var buf bytes.Buffer
			var err error
			if tc.json {
				err = r.WriteJSON(&buf)
			} else {
				err = r.WriteText(&buf, tc.summary)
			}
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tc.file, buf.Bytes())
		})
	}
}

// TestCalcRenderRules checks the listing's rules on the hand-built report
// directly, so that a golden file rewritten by mistake cannot hide them.
func TestCalcRenderRules(t *testing.T) {
	var buf bytes.Buffer
	if err := handReport().WriteText(&buf, false); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"*** Best-case 9/13 = 0.69CPI", // ΣM of the loop block
		"*** Actual 140/13 = 10.77CPI", // Σ S/F = 213754/1527
		"frequency 1527 per P, high confidence",
		"frequency 1.5 per P, low confidence",
		"frequency unknown (no estimate)",
		"(dual issue)",
		"18.2cy  120000900",               // the stq's culprit: the ldq
		"dDw ... 17.2cy",                  // 34 half-cycle lines, capped
		"*** Total tallied        100.0%", // 48.9 + 51.2 - 0.1
		"*** (35171, 93.1% of all samples)",
		"*** D-cache miss          27.9% to  27.9%",
		"*** No instruction has a frequency estimate",
		"src/stream.c:33          c[i] = a[i];",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	// Bubbles: the slotting stall of 1 cycle is 2 lines of s; the
	// 0x120000900 ldq's 1-cycle dynamic stall is 2 lines of its
	// candidates' letters, in Figure 4's order (D before p).
	if !strings.Contains(out, "  Dp\n") || strings.Count(out, "  Dp\n") != 2 {
		t.Errorf("want 2 Dp bubble lines:\n%s", out)
	}
	if n := strings.Count(out, "  s\n"); n != 4 {
		t.Errorf("%d slotting lines, want 4 (two stalls of 1 cycle)", n)
	}
	var js struct {
		Procedures []struct {
			Blocks []struct {
				Frequency *float64
				ActualCPI *float64 `json:"actual_cpi"`
			}
			Instructions []struct {
				CPI        *float64
				Bubbles    string
				Candidates []struct{ Bound *float64 }
			}
		}
	}
	buf.Reset()
	if err := handReport().WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(buf.Bytes(), &js); err != nil {
		t.Fatal(err)
	}
	p := js.Procedures[0]
	if len(p.Blocks) != 3 || p.Blocks[2].Frequency != nil || p.Blocks[1].ActualCPI == nil || *p.Blocks[1].Frequency != 1527 {
		t.Errorf("blocks %+v", p.Blocks)
	}
	if in := p.Instructions[8]; in.Bubbles != "dDw" || in.Candidates[0].Bound != nil || in.Candidates[2].Bound == nil {
		t.Errorf("the stalled stq: %+v", in)
	}
	if p.Instructions[15].CPI != nil {
		t.Errorf("an instruction without a frequency has a CPI")
	}
}

// calcSortSource is /bin/sort with CYCLES samples of insertion on two
// hosts: alpha samples every 60000 cycles, beta every 30000.
func calcSortSource(t *testing.T) (*analysis.MemSource, *wire.ImageRecord, uint64) {
	t.Helper()
	data, err := workloads.Binary("sort")
	if err != nil {
		t.Fatal(err)
	}
	r, im := elfRecord(t, data, "/bin/sort", false)
	m := analysis.NewMemSource()
	m.PutImage(r)
	s, ok := im.SymbolNamed("insertion")
	if !ok {
		t.Fatal("sort has no insertion")
	}
	add := func(epoch uint64, host string, addr uint64, ev alpha.Event, n uint64) {
		m.Add(storage.Record{Epoch: epoch, Event: uint8(ev), Image: r.Key, Offset: addr - r.Base, Host: host, Count: n})
	}
	// pc A: alpha 10 (over two epochs), beta 20; pc B: alpha 5, beta 5.
	add(1, "alpha", s.Addr, alpha.EvCycles, 4)
	add(2, "alpha", s.Addr, alpha.EvCycles, 6)
	add(1, "beta", s.Addr, alpha.EvCycles, 20)
	add(1, "alpha", s.Addr+8, alpha.EvCycles, 5)
	add(2, "beta", s.Addr+8, alpha.EvCycles, 5)
	add(1, "alpha", s.Addr+8, alpha.EvDMiss, 3)
	return m, r, s.Addr
}

func calcPeriodsOf(cyc map[string]float64) map[string]map[uint8]float64 {
	out := map[string]map[uint8]float64{}
	for h, p := range cyc {
		out[h] = map[uint8]float64{uint8(alpha.EvCycles): p, uint8(alpha.EvIMiss): 4096, uint8(alpha.EvDMiss): 4096}
	}
	return out
}

// TestCalcScalesHostPeriods: samples of hosts with different CYCLES
// periods are weighted by their periods and expressed in one common period,
// the sample-weighted mean, so the procedure keeps its sample count.
func TestCalcScalesHostPeriods(t *testing.T) {
	src, _, a := calcSortSource(t)
	q := Query{Procedures: []string{"insertion"}, Files: embeddedFinder{},
		Periods: calcPeriodsOf(map[string]float64{"alpha": 60000, "beta": 30000})}
	syms := symbolize.New(src)
	tab, err := report.Prof(t.Context(), syms, report.ProfQuery{})
	if err != nil {
		t.Fatal(err)
	}
	im, err := openCalcImage(t.Context(), syms, q, tab.Rows[0], []string{"alpha", "beta"})
	if err != nil {
		t.Fatal(err)
	}
	rng, err := im.code.Lookup("insertion")
	if err != nil {
		t.Fatal(err)
	}
	prof, err := im.profile(rng)
	if err != nil {
		t.Fatal(err)
	}
	// Σ S_h·P_h = 15·60000 + 25·30000 = 1,650,000 over 40 samples.
	const p = 1650000.0 / 40
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9*math.Max(1, math.Abs(want)) }
	if !near(prof.Periods[alpha.EvCycles], p) {
		t.Errorf("common cycles period %v, want %v", prof.Periods[alpha.EvCycles], p)
	}
	if got, want := prof.At(a, alpha.EvCycles), (10*60000+20*30000)/p; !near(got, want) {
		t.Errorf("pc A: %v samples, want %v", got, want)
	}
	if got, want := prof.At(a+8, alpha.EvCycles), (5*60000+5*30000)/p; !near(got, want) {
		t.Errorf("pc B: %v samples, want %v", got, want)
	}
	if prof.Periods[alpha.EvDMiss] != 4096 || prof.At(a+8, alpha.EvDMiss) != 3 {
		t.Errorf("dmiss: period %v, %v samples", prof.Periods[alpha.EvDMiss], prof.At(a+8, alpha.EvDMiss))
	}
	// Through Run: the report carries the same period and the raw total.
	r, err := Run(t.Context(), src, q)
	if err != nil {
		t.Fatal(err)
	}
	cp := r.Procedures[0]
	if !near(cp.Periods["cycles"], p) || !near(cp.Samples["cycles"], 40) || cp.Hosts != 2 || r.CyclesSamples != 40 {
		t.Errorf("report: periods %v, samples %v, %d hosts, %d in the selection", cp.Periods, cp.Samples, cp.Hosts, r.CyclesSamples)
	}
	if cp.Start != rng.Start || cp.End != rng.End || len(cp.Text) != len(cp.Explanation.Insns) || !cp.HasLines {
		t.Errorf("procedure [%#x, %#x), %d texts for %d instructions", cp.Start, cp.End, len(cp.Text), len(cp.Explanation.Insns))
	}
	// Hosts that agree are read summed: the counts are the raw ones.
	q.Periods = calcPeriodsOf(map[string]float64{"alpha": 60000, "beta": 60000})
	r, err = Run(t.Context(), src, q)
	if err != nil {
		t.Fatal(err)
	}
	if cp := r.Procedures[0]; cp.Periods["cycles"] != 60000 || cp.Samples["cycles"] != 40 {
		t.Errorf("agreeing hosts: %v %v", cp.Periods, cp.Samples)
	}
	// One host: only its samples.
	q.Filter.Hosts = []string{"beta"}
	if r, err = Run(t.Context(), src, q); err != nil {
		t.Fatal(err)
	}
	if cp := r.Procedures[0]; cp.Samples["cycles"] != 25 || cp.Hosts != 1 {
		t.Errorf("beta alone: %v samples on %d hosts", cp.Samples, cp.Hosts)
	}
}

func TestCalcTop(t *testing.T) {
	src, _ := sortSource(t) // insertion 87 + ... , quick 100, main 7
	q := Query{Top: 2, Files: embeddedFinder{}, Periods: calcPeriodsOf(map[string]float64{"alpha": 1, "beta": 1})}
	r, err := Run(t.Context(), src, q)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range r.Procedures {
		got = append(got, p.Procedure)
	}
	if strings.Join(got, ",") != "insertion,quick" {
		t.Errorf("top 2: %v", got)
	}
	q.Top, q.All = 0, true
	if r, err = Run(t.Context(), src, q); err != nil || len(r.Procedures) != 3 {
		t.Errorf("all: %v, %v", r, err)
	}
}

func TestCalcErrors(t *testing.T) {
	src, rec, _ := calcSortSource(t)
	per := calcPeriodsOf(map[string]float64{"alpha": 60000, "beta": 30000})
	stream, _ := workloads.Binary("stream")
	imissOnly := analysis.NewMemSource()
	imissOnly.PutImage(rec)
	imissOnly.Add(storage.Record{Epoch: 1, Event: uint8(alpha.EvIMiss), Image: rec.Key, Offset: 0x900, Host: "alpha", Count: 3})
	imissOnly.Add(storage.Record{Epoch: 1, Event: uint8(alpha.EvDMiss), Image: rec.Key, Offset: 0x900, Host: "alpha", Count: 1})
	for _, tc := range []struct {
		name  string
		src   analysis.Source
		q     Query
		is    error
		wants []string
	}{
		{"no such procedure", src, Query{Procedures: []string{"insertio"}}, analysis.ErrQuery,
			[]string{"no procedure insertio", "(/bin/sort)", "close names: insertion"}},
		{"no cycles in procedure", src, Query{Procedures: []string{"quick"}}, analysis.ErrQuery,
			[]string{"no CYCLES samples in procedure quick of /bin/sort"}},
		{"image file missing", src, Query{Procedures: []string{"insertion"}, Files: noFinder{}}, symbolize.ErrNoImageFile,
			[]string{"calc insertion in /bin/sort"}},
		{"image bytes mismatch", src, Query{Procedures: []string{"insertion"}, Files: bytesFinder(stream)}, symbolize.ErrImageMismatch,
			[]string{"/bin/sort", "is buildid:"}},
		{"no cycles samples", imissOnly, Query{Top: 1}, analysis.ErrQuery,
			[]string{"dcpicalc needs CYCLES samples; this profile has only: imiss, dmiss"}},
		{"nothing selected", src, Query{Top: 1, Filter: storage.Query{Epochs: []uint64{9}}}, analysis.ErrQuery,
			[]string{"no samples in the selected profile"}},
		{"host without periods", src, Query{Top: 1, Filter: storage.Query{Hosts: []string{"alpha", "gamma"}}}, analysis.ErrQuery,
			[]string{"no sampling periods for host gamma"}},
		{"event without a period", src, Query{Top: 1, Periods: map[string]map[uint8]float64{
			"alpha": {uint8(alpha.EvCycles): 60000}, "beta": {uint8(alpha.EvCycles): 30000}}}, analysis.ErrQuery,
			[]string{"dmiss samples with no known sampling period", "--period dmiss=N"}},
		{"no periods", src, Query{Top: 1, Periods: map[string]map[uint8]float64{}}, analysis.ErrQuery, []string{"no sampling periods"}},
		{"two selections", src, Query{Top: 1, All: true}, analysis.ErrQuery, []string{"exactly one"}},
		{"none", src, Query{}, analysis.ErrQuery, []string{"exactly one"}},
		{"unknown_rtn", src, Query{Procedures: []string{symbolize.UnknownProcedure}}, analysis.ErrQuery, []string{"no code"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.q
			if q.Files == nil {
				q.Files = embeddedFinder{}
			}
			if q.Periods == nil {
				q.Periods = per
			}
			_, err := Run(t.Context(), tc.src, q)
			if err == nil || !errors.Is(err, tc.is) {
				t.Fatalf("err %v, want one wrapping %v", err, tc.is)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q lacks %q", err, w)
				}
			}
		})
	}
}

// noFinder finds nothing.
type noFinder struct{}

func (noFinder) FindImage(_ context.Context, rec *wire.ImageRecord) ([]byte, string, error) {
	return nil, "", errors.Join(symbolize.ErrNoImageFile, errors.New(rec.Path))
}

// TestCalcSameNameProcedures: glibc in /bin/server has four static
// read_int; with samples in two of them, dcpi calc read_int analyzes
// those two, each over its own code (not the first one's, which has none).
func TestCalcSameNameProcedures(t *testing.T) {
	data, err := workloads.Binary("server")
	if err != nil {
		t.Fatal(err)
	}
	r, im := elfRecord(t, data, "/bin/server", false)
	var addrs []uint64
	for _, s := range im.Symbols {
		if s.Name == "read_int" {
			addrs = append(addrs, s.Addr)
		}
	}
	if len(addrs) < 3 {
		t.Fatalf("server has %d read_int, want several", len(addrs))
	}
	slices.Sort(addrs)
	m := analysis.NewMemSource()
	m.PutImage(r)
	for _, a := range []uint64{addrs[1], addrs[len(addrs)-1]} {
		m.Add(storage.Record{Epoch: 1, Event: uint8(alpha.EvCycles), Image: r.Key, Offset: a + 4 - r.Base, Host: "alpha", Count: 7})
	}
	rep, err := Run(t.Context(), m, Query{Procedures: []string{"read_int"}, Files: embeddedFinder{}, Periods: calcPeriodsOf(map[string]float64{"alpha": 60000})})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Procedures) != 2 || rep.Procedures[0].Start != addrs[1] || rep.Procedures[1].Start != addrs[len(addrs)-1] {
		for _, p := range rep.Procedures {
			t.Logf("analyzed %s at %#x", p.Procedure, p.Start)
		}
		t.Errorf("want read_int at %#x and %#x analyzed", addrs[1], addrs[len(addrs)-1])
	}
}
