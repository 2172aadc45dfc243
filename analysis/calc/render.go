package calc

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"dcpi/analysis"
	"dcpi/analysis/report"
)

// Bubble letters of the listing (Figure 2). The dynamic causes' letters
// are Cause.Letter's; the static ones and "unexplained" are these.
var staticLetters = [NumStatic]byte{'s', 'a', 'b', 'c', 'e'}

const unexplainedLetter = 'u'

// maxBubbleRun is the most bubble lines of one stall printed in full; a
// longer run prints its first line, one "... N.Ncy" line and its last, as
// Figure 2 does.
const maxBubbleRun = 4

// Legend is the key to the bubble letters, printed once per listing.
func Legend() string {
	var b strings.Builder
	b.WriteString("Each line between instructions is half a cycle of stall of the instruction below it, lettered by cause:\n")
	b.WriteString("  static: ")
	for c := range NumStatic {
		if c > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%c = %s", staticLetters[c], c)
	}
	b.WriteString("\n  dynamic (every cause not ruled out): ")
	for c := range NumCauses {
		fmt.Fprintf(&b, "%c = %s, ", c.Letter(), c)
	}
	fmt.Fprintf(&b, "%c = unexplained\n", unexplainedLetter)
	b.WriteString("A CPI ending in ? rests on a low-confidence frequency (the block's header says why).\n")
	return b.String()
}

// calcBlock is a run of instructions of one block in a listing.
type calcBlock struct {
	block    int
	from, to int // Insns[from:to]
}

func calcBlocks(insns []InsnExplanation) []calcBlock {
	var out []calcBlock
	for i, in := range insns {
		if i == 0 || in.Block != insns[i-1].Block {
			out = append(out, calcBlock{block: in.Block, from: i})
		}
		out[len(out)-1].to = i + 1
	}
	return out
}

// blockCPI returns a block's best-case and actual cycles per execution
// (ΣM and ΣS/F over its instructions; per instruction, divide by n). The
// actual is known when the block's frequency is known and not 0 (a block
// estimated never to run has no cycles per execution).
func blockCPI(insns []InsnExplanation) (best, actual float64, known bool) {
	known = len(insns) > 0 && insns[0].Known && insns[0].F > 0
	for _, in := range insns {
		best += float64(in.M)
		if known {
			actual += in.S / in.F
		}
	}
	return best, actual, known
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// num formats a figure as Figure 2 and 4 do: whole numbers from 100 up,
// else one decimal, without a trailing ".0".
func num(x float64) string {
	if math.Abs(x) >= 100 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strings.TrimSuffix(strconv.FormatFloat(x, 'f', 1, 64), ".0")
}

// WriteText prints r as dcpicalc did: the legend once, then per
// procedure a header, the Figure 2 listing block by block (frequency and
// confidence, best-case and actual CPI, then each instruction's address,
// disassembly, samples, CPI and culprit PCs, with its stall's bubbles above
// it and its source line above the first instruction compiled from it),
// and the Figure 4 summary. With summaryOnly, only the headers and
// summaries.
func (r *Report) WriteText(w io.Writer, summaryOnly bool) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "dcpicalc: %d procedure(s); cycles samples in the selection = %d\n", len(r.Procedures), r.CyclesSamples)
	if !summaryOnly && len(r.Procedures) > 0 {
		fmt.Fprintf(bw, "\n%s", Legend())
	}
	for i := range r.Procedures {
		writeCalcProc(bw, r, &r.Procedures[i], summaryOnly)
	}
	if len(r.Procedures) == 0 {
		fmt.Fprintln(bw, "(no procedures)")
	}
	return bw.Flush()
}

func writeCalcProc(bw *bufio.Writer, r *Report, p *ProcReport, summaryOnly bool) {
	x := p.Explanation
	blocks := calcBlocks(x.Insns)
	fmt.Fprintf(bw, "\nProcedure %s in %s (%v)\n", p.Procedure, p.Image, p.ImageKey)
	fmt.Fprintf(bw, "  addresses %#x-%#x, %d instructions in %d blocks; code from %s\n", p.Start, p.End, len(x.Insns), len(blocks), p.File)
	var parts []string
	for _, e := range sortedEvents(p.Samples) {
		parts = append(parts, fmt.Sprintf("%s = %s (P = %s)", e, num(p.Samples[e]), num(p.Periods[e])))
	}
	share := ""
	if r.CyclesSamples > 0 {
		share = fmt.Sprintf(", %.2f%% of the selection's cycles", 100*p.Samples["cycles"]/float64(r.CyclesSamples))
	}
	fmt.Fprintf(bw, "  samples: %s; %d host(s)%s\n", strings.Join(parts, ", "), p.Hosts, share)
	if !summaryOnly {
		if !p.HasLines {
			fmt.Fprintln(bw, "  (no DWARF line information in the image: no source lines)")
		}
		writeCalcListing(bw, p, blocks)
	}
	fmt.Fprintln(bw)
	writeCalcSummary(bw, &x.Summary)
}

func sortedEvents(m map[string]float64) []string {
	var es []string
	for e := range m {
		es = append(es, e)
	}
	slices.SortFunc(es, func(a, b string) int {
		ea, _ := analysis.ParseEvent(a)
		eb, _ := analysis.ParseEvent(b)
		return int(ea) - int(eb)
	})
	return es
}

func writeCalcListing(bw *bufio.Writer, p *ProcReport, blocks []calcBlock) {
	x := p.Explanation
	aw := max(len(strconv.FormatUint(p.End, 16)), len("Addr"))
	iw := len("Instruction")
	for i := range x.Insns {
		iw = max(iw, len(report.FormatInsn(p.text(i).Insn)))
	}
	sw := len("Samples")
	for _, in := range x.Insns {
		sw = max(sw, len(strconv.FormatFloat(in.S, 'f', 0, 64)))
	}
	line := func(addr, insn, samples, cpi, culprit string) {
		s := fmt.Sprintf("%*s  %-*s  %*s  %12s  %s", aw, addr, iw, insn, sw, samples, cpi, culprit)
		fmt.Fprintln(bw, strings.TrimRight(s, " "))
	}
	bubble := func(letters string, n int, cycles float64) {
		if n <= maxBubbleRun {
			for range n {
				line("", letters, "", "", "")
			}
			return
		}
		line("", letters, "", "", "")
		fmt.Fprintln(bw, strings.TrimRight(fmt.Sprintf("%*s  %s ... %.1fcy", aw, "", letters, cycles), " "))
		line("", letters, "", "", "")
	}
	for _, b := range blocks {
		ins := x.Insns[b.from:b.to]
		best, actual, known := blockCPI(ins)
		n := float64(len(ins))
		fmt.Fprintln(bw)
		head := fmt.Sprintf("*** Block %#x-%#x (%s): ", ins[0].PC, ins[len(ins)-1].PC+4, plural(len(ins), "instruction"))
		switch {
		case ins[0].Known:
			head += fmt.Sprintf("frequency %s per P, %s confidence", num(ins[0].F), ins[0].Confidence)
		default:
			head += "frequency unknown (no estimate)"
		}
		if m := p.method(b.block); m != "" {
			head += " (" + m + ")"
		}
		fmt.Fprintln(bw, head)
		if c := p.reason(b.block); c != "" && ins[0].Confidence <= Low {
			fmt.Fprintf(bw, "*** Low confidence: %s\n", c)
		}
		if c := p.check(b.block); c != "" && c != p.reason(b.block) {
			fmt.Fprintf(bw, "*** Measured: %s\n", c)
		}
		fmt.Fprintf(bw, "*** Best-case %s/%d = %.2fCPI\n", num(best), len(ins), best/n)
		switch {
		case known:
			fmt.Fprintf(bw, "*** Actual %s/%d = %.2fCPI\n", num(actual), len(ins), actual/n)
		case ins[0].Known:
			fmt.Fprintln(bw, "*** Actual: none (the block is estimated not to run)")
		default:
			fmt.Fprintln(bw, "*** Actual unknown")
		}
		fmt.Fprintln(bw)
		line("Addr", "Instruction", "Samples", "CPI", "Culprit")
		for j := b.from; j < b.to; j++ {
			in := &x.Insns[j]
			t := p.text(j)
			if t.File != "" {
				s := fmt.Sprintf("%s:%d", t.File, t.Line)
				if t.Source != "" {
					s += "  " + t.Source
				}
				fmt.Fprintln(bw, strings.TrimRight(s, " "))
			}
			for _, st := range in.Static {
				c := staticCause(st.Reason)
				bubble(string(staticLetters[c]), 2*st.Cycles, float64(st.Cycles))
			}
			if in.Known && in.F > 0 && in.Dynamic > 0 {
				bubble(dynamicLetters(in), int(math.Round(2*in.Dynamic)), in.Dynamic)
			}
			cpi := "-"
			switch {
			case in.M == 0:
				cpi = "(dual issue)"
			case in.Known && in.F > 0 && in.Confidence <= Low:
				cpi = fmt.Sprintf("%.1fcy?", in.CPI) // never printed as confident
			case in.Known && in.F > 0:
				cpi = fmt.Sprintf("%.1fcy", in.CPI)
			}
			line(strconv.FormatUint(in.PC, 16), report.FormatInsn(t.Insn), strconv.FormatFloat(in.S, 'f', 0, 64), cpi, culprits(in))
		}
	}
}

// dynamicLetters are the letters of an instruction's surviving dynamic
// causes, in Figure 4's order ("u" when none survives).
func dynamicLetters(in *InsnExplanation) string {
	var seen [NumCauses]bool
	for _, c := range in.Candidates {
		if c.Cause < NumCauses {
			seen[c.Cause] = true
		}
	}
	var b strings.Builder
	for c := range NumCauses {
		if seen[c] {
			b.WriteByte(c.Letter())
		}
	}
	if b.Len() == 0 {
		return string(unexplainedLetter)
	}
	return b.String()
}

// culprits lists the PCs named by an instruction's static stalls and
// dynamic candidates, in that order, each once (at most three, then +N).
func culprits(in *InsnExplanation) string {
	var pcs []uint64
	add := func(pc uint64) {
		if pc != 0 && !slices.Contains(pcs, pc) {
			pcs = append(pcs, pc)
		}
	}
	for _, s := range in.Static {
		add(s.Culprit)
	}
	if in.Dynamic > 0 {
		for _, c := range in.Candidates {
			add(c.Culprit)
		}
	}
	var out []string
	for i, pc := range pcs {
		if i == 3 {
			out = append(out, fmt.Sprintf("+%d", len(pcs)-3))
			break
		}
		out = append(out, strconv.FormatUint(pc, 16))
	}
	return strings.Join(out, " ")
}

func (p *ProcReport) text(i int) InsnText {
	if i < len(p.Text) {
		return p.Text[i]
	}
	return InsnText{}
}

// method is how block b's frequency was estimated, "" when the
// explanation does not carry the estimates.
func (p *ProcReport) method(b int) string {
	x := p.Explanation
	if x.Freq == nil || x.Proc == nil || b < 0 || b >= len(x.Proc.Sched) {
		return ""
	}
	return x.Freq.Block(b).Method.String()
}

// caveat is why block b's estimate is rated low where the confidence
// rules alone would rate it higher, "" if not.
func (p *ProcReport) caveat(b int) string {
	x := p.Explanation
	if x.Freq == nil || x.Proc == nil || b < 0 || b >= len(x.Proc.Sched) {
		return ""
	}
	return x.Freq.Block(b).Caveat
}

// reason is why block b's estimate is low confidence ("" if it is not,
// or the explanation does not carry the estimates).
func (p *ProcReport) reason(b int) string {
	x := p.Explanation
	if x.Freq == nil || x.Proc == nil || b < 0 || b >= len(x.Proc.Sched) {
		return ""
	}
	e := x.Freq.Block(b)
	if e.Confidence > Low {
		return ""
	}
	return cmp.Or(e.Reason, e.Caveat)
}

// check is what measured counts said of block b's estimate, "" if none.
func (p *ProcReport) check(b int) string {
	x := p.Explanation
	if x.Freq == nil || x.Proc == nil || b < 0 || b >= len(x.Proc.Sched) {
		return ""
	}
	return x.Freq.Block(b).Check
}

// writeCalcSummary prints Figure 4, after what its frequencies rest on;
// a summary whose samples are mostly at low confidence withholds its
// culprit rows (Trust).
func writeCalcSummary(bw *bufio.Writer, s *Summary) {
	pct := func(v float64) string { return fmt.Sprintf("%5.1f%%", 100*v) }
	rng := func(r Range) string { return pct(r.Lo) + " to " + pct(r.Hi) }
	row := func(name, v string) { fmt.Fprintf(bw, "*** %-20s %s\n", name, v) }
	rule := func() { fmt.Fprintln(bw, "*** ----------------------------------------") }
	if s.Instructions <= 0 {
		fmt.Fprintf(bw, "*** No instruction has a frequency estimate: nothing tallied (%s samples)\n", num(s.AllSamples))
		return
	}
	mark := ""
	if s.Trust.Withheld {
		mark = " (low confidence)"
	}
	fmt.Fprintf(bw, "*** Best-case %s/%s = %.2fCPI,\n", num(s.BestCase), num(s.Instructions), s.BestCase/s.Instructions)
	fmt.Fprintf(bw, "*** Actual %s/%s = %.2fCPI%s\n", num(s.Actual), num(s.Instructions), s.Actual/s.Instructions, mark)
	for _, l := range s.Trust.lines() {
		fmt.Fprintf(bw, "*** %s\n", l)
	}
	fmt.Fprintln(bw, "***")
	if s.Trust.Withheld {
		share := 0.0
		if s.AllSamples > 0 {
			share = 100 * s.Actual / s.AllSamples
		}
		fmt.Fprintf(bw, "*** (%s tallied, %.1f%% of all samples)\n", num(s.Actual), share)
		return
	}
	for c := range NumCauses {
		if c == Mispredict {
			fmt.Fprintln(bw, "***")
		}
		row(c.String(), rng(s.Dynamic[c]))
	}
	fmt.Fprintln(bw, "***")
	row("Unexplained stall", rng(s.UnexplainedStall))
	row("Unexplained gain", rng(s.UnexplainedGain))
	rule()
	row("Subtotal dynamic", pct(s.SubtotalDynamic))
	fmt.Fprintln(bw, "***")
	for c := range NumStatic {
		row(c.String(), pct(s.Static[c]))
	}
	rule()
	row("Subtotal static", pct(s.SubtotalStatic))
	rule()
	row("Total stall", pct(s.TotalStall))
	row("Execution", pct(s.Execution))
	row("Net sampling error", pct(s.NetSamplingError))
	rule()
	row("Total tallied", pct(s.TotalStall+s.Execution+s.NetSamplingError))
	share := 0.0
	if s.AllSamples > 0 {
		share = 100 * s.Actual / s.AllSamples
	}
	fmt.Fprintf(bw, "*** (%s, %.1f%% of all samples)\n", num(s.Actual), share)
}

// The JSON form of a Report (WriteJSON). Shares are fractions
// (0.279 is 27.9%); numbers that do not exist (the CPI of an instruction
// without a frequency, an unbounded cause) are null.
type (
	calcJSON struct {
		CyclesSamples uint64            `json:"cycles_samples"`
		Legend        map[string]string `json:"legend"`
		Procedures    []calcProcJSON    `json:"procedures"`
	}
	calcProcJSON struct {
		Procedure string             `json:"procedure"`
		Image     string             `json:"image"`
		ImageKey  string             `json:"image_key"`
		File      string             `json:"file"`
		Start     uint64             `json:"start"`
		End       uint64             `json:"end"`
		HasLines  bool               `json:"has_lines"`
		Hosts     int                `json:"hosts"`
		Periods   map[string]float64 `json:"periods"`
		Samples   map[string]float64 `json:"samples"`
		Blocks    []calcBlockJSON    `json:"blocks"`
		Insns     []calcInsnJSON     `json:"instructions"`
		Summary   calcSummaryJSON    `json:"summary"`
	}
	calcBlockJSON struct {
		Start        uint64   `json:"start"`
		End          uint64   `json:"end"`
		Instructions int      `json:"instructions"`
		Frequency    *float64 `json:"frequency"`
		Confidence   string   `json:"confidence"`
		Method       string   `json:"method,omitempty"`
		Caveat       string   `json:"caveat,omitempty"`
		Reason       string   `json:"reason,omitempty"`
		Check        string   `json:"check,omitempty"`
		BestCaseCPI  float64  `json:"best_case_cpi"`
		ActualCPI    *float64 `json:"actual_cpi"`
	}
	calcInsnJSON struct {
		Addr       uint64           `json:"addr"`
		Word       uint32           `json:"word"`
		Insn       string           `json:"insn"`
		File       string           `json:"file,omitempty"`
		Line       int              `json:"line,omitempty"`
		Source     string           `json:"source,omitempty"`
		Samples    float64          `json:"samples"`
		M          int              `json:"m"`
		CPI        *float64         `json:"cpi"`
		Static     []calcStaticJSON `json:"static"`
		Dynamic    *float64         `json:"dynamic"`
		Candidates []calcCandJSON   `json:"candidates"`
		Bubbles    string           `json:"bubbles,omitempty"`
	}
	calcStaticJSON struct {
		Cause   string `json:"cause"`
		Letter  string `json:"letter"`
		Cycles  int    `json:"cycles"`
		Culprit uint64 `json:"culprit"`
		Reg     uint8  `json:"reg,omitempty"`
	}
	calcCandJSON struct {
		Cause   string   `json:"cause"`
		Letter  string   `json:"letter"`
		Culprit uint64   `json:"culprit"`
		Bound   *float64 `json:"bound"`
	}
	calcRangeJSON struct {
		Cause string  `json:"cause"`
		Lo    float64 `json:"lo"`
		Hi    float64 `json:"hi"`
	}
	calcShareJSON struct {
		Cause string  `json:"cause"`
		Share float64 `json:"share"`
	}
	calcSummaryJSON struct {
		Instructions     float64         `json:"instructions"`
		BestCase         float64         `json:"best_case"`
		Actual           float64         `json:"actual"`
		BestCaseCPI      *float64        `json:"best_case_cpi"`
		ActualCPI        *float64        `json:"actual_cpi"`
		Dynamic          []calcRangeJSON `json:"dynamic"`
		UnexplainedStall calcRangeJSON   `json:"unexplained_stall"`
		UnexplainedGain  calcRangeJSON   `json:"unexplained_gain"`
		SubtotalDynamic  float64         `json:"subtotal_dynamic"`
		Static           []calcShareJSON `json:"static"`
		SubtotalStatic   float64         `json:"subtotal_static"`
		TotalStall       float64         `json:"total_stall"`
		Execution        float64         `json:"execution"`
		NetSamplingError float64         `json:"net_sampling_error"`
		TotalTallied     float64         `json:"total_tallied"`
		AllSamples       float64         `json:"all_samples"`
		LowShare         float64         `json:"low_confidence_share"`
		LowReason        string          `json:"low_confidence_reason,omitempty"`
		Withheld         bool            `json:"culprits_withheld"`
		MeasuredShare    float64         `json:"measured_share"`
	}
)

// finite returns &v, or nil for an infinite or NaN v (JSON has neither).
func finite(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	return &v
}

// WriteJSON writes r as one indented JSON object, the machine interface
// of dcpi calc (field names stable):
//
//	{"cycles_samples", "legend": {letter: cause},
//	 "procedures": [{"procedure", "image", "image_key", "file", "start", "end",
//	   "has_lines", "hosts", "periods": {event: P}, "samples": {event: S},
//	   "blocks": [{"start", "end", "instructions", "frequency", "confidence",
//	     "method", "caveat", "best_case_cpi", "actual_cpi"}],
//	   "instructions": [{"addr", "word", "insn", "file", "line", "source",
//	     "samples", "m", "cpi", "static": [{"cause", "letter", "cycles",
//	     "culprit", "reg"}], "dynamic", "candidates": [{"cause", "letter",
//	     "culprit", "bound"}], "bubbles"}],
//	   "summary": {"instructions", "best_case", "actual", "best_case_cpi",
//	     "actual_cpi", "dynamic": [{"cause", "lo", "hi"}], "unexplained_stall",
//	     "unexplained_gain", "subtotal_dynamic", "static": [{"cause", "share"}],
//	     "subtotal_static", "total_stall", "execution", "net_sampling_error",
//	     "total_tallied", "all_samples"}}]}
//
// Frequencies are per P (the "periods" of cycles); samples are in units of
// each event's P; "frequency", "cpi", "dynamic" and "actual_cpi" are null
// where no frequency was estimated, "bound" where the samples do not bound
// the cause; shares are fractions of the procedure's tallied samples
// ("actual"); "bubbles" are the letters of the instruction's dynamic stall.
func (r *Report) WriteJSON(w io.Writer) error {
	out := calcJSON{CyclesSamples: r.CyclesSamples, Legend: map[string]string{string(unexplainedLetter): "unexplained"},
		Procedures: []calcProcJSON{}}
	for c := range NumStatic {
		out.Legend[string(staticLetters[c])] = c.String()
	}
	for c := range NumCauses {
		out.Legend[string(c.Letter())] = c.String()
	}
	for i := range r.Procedures {
		out.Procedures = append(out.Procedures, calcProcView(&r.Procedures[i]))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func calcProcView(p *ProcReport) calcProcJSON {
	x := p.Explanation
	v := calcProcJSON{Procedure: p.Procedure, Image: p.Image, ImageKey: p.ImageKey.String(), File: p.File, Start: p.Start, End: p.End,
		HasLines: p.HasLines, Hosts: p.Hosts, Periods: p.Periods, Samples: p.Samples, Blocks: []calcBlockJSON{}, Insns: []calcInsnJSON{}}
	if v.Periods == nil {
		v.Periods = map[string]float64{}
	}
	if v.Samples == nil {
		v.Samples = map[string]float64{}
	}
	for _, b := range calcBlocks(x.Insns) {
		ins := x.Insns[b.from:b.to]
		best, actual, known := blockCPI(ins)
		n := float64(len(ins))
		bj := calcBlockJSON{Start: ins[0].PC, End: ins[len(ins)-1].PC + 4, Instructions: len(ins), Confidence: ins[0].Confidence.String(),
			Method: p.method(b.block), Caveat: p.caveat(b.block), Reason: p.reason(b.block), Check: p.check(b.block), BestCaseCPI: best / n}
		if ins[0].Known {
			bj.Frequency = finite(ins[0].F)
		}
		if known {
			bj.ActualCPI = finite(actual / n)
		}
		v.Blocks = append(v.Blocks, bj)
	}
	for i := range x.Insns {
		in := &x.Insns[i]
		t := p.text(i)
		ij := calcInsnJSON{Addr: in.PC, Word: in.Word, Insn: t.Insn, File: t.File, Line: t.Line, Source: t.Source, Samples: in.S, M: in.M,
			Static: []calcStaticJSON{}, Candidates: []calcCandJSON{}}
		if in.Known && in.F > 0 {
			ij.CPI, ij.Dynamic = finite(in.CPI), finite(in.Dynamic)
			if in.Dynamic > 0 {
				ij.Bubbles = dynamicLetters(in)
			}
		}
		for _, s := range in.Static {
			c := staticCause(s.Reason)
			ij.Static = append(ij.Static, calcStaticJSON{Cause: c.String(), Letter: string(staticLetters[c]), Cycles: s.Cycles, Culprit: s.Culprit, Reg: s.Reg})
		}
		for _, c := range in.Candidates {
			ij.Candidates = append(ij.Candidates, calcCandJSON{Cause: c.Cause.String(), Letter: string(c.Cause.Letter()), Culprit: c.Culprit, Bound: finite(c.Bound)})
		}
		v.Insns = append(v.Insns, ij)
	}
	s := &x.Summary
	sj := calcSummaryJSON{Instructions: s.Instructions, BestCase: s.BestCase, Actual: s.Actual,
		UnexplainedStall: calcRangeJSON{"Unexplained stall", s.UnexplainedStall.Lo, s.UnexplainedStall.Hi},
		UnexplainedGain:  calcRangeJSON{"Unexplained gain", s.UnexplainedGain.Lo, s.UnexplainedGain.Hi},
		SubtotalDynamic:  s.SubtotalDynamic, SubtotalStatic: s.SubtotalStatic, TotalStall: s.TotalStall, Execution: s.Execution,
		NetSamplingError: s.NetSamplingError, TotalTallied: s.TotalStall + s.Execution + s.NetSamplingError, AllSamples: s.AllSamples,
		LowShare: s.Trust.LowShare, LowReason: s.Trust.LowReason, Withheld: s.Trust.Withheld, MeasuredShare: s.Trust.Measured}
	if s.Instructions > 0 {
		sj.BestCaseCPI, sj.ActualCPI = finite(s.BestCase/s.Instructions), finite(s.Actual/s.Instructions)
	}
	for c := range NumCauses {
		sj.Dynamic = append(sj.Dynamic, calcRangeJSON{c.String(), s.Dynamic[c].Lo, s.Dynamic[c].Hi})
	}
	for c := range NumStatic {
		sj.Static = append(sj.Static, calcShareJSON{c.String(), s.Static[c]})
	}
	v.Summary = sj
	return v
}
