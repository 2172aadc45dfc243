package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"dcpi/analysis/calc"
)

// calcPage is dcpicalc's report as the listing page draws it: the key to
// the letters, then per procedure the summary of where its cycles went
// and a row per instruction. It is read from dcpi calc's machine
// interface (Report.WriteJSON), so the page shows exactly what the tool
// prints with --json, whatever the tool's text looks like.
type calcPage struct {
	Legend []calcLetter
	Procs  []calcProc
}

// calcLetter is one letter of the key.
type calcLetter struct{ Letter, Cause string }

// calcProc is one procedure's report.
type calcProc struct {
	Procedure, Image string
	Summary          calcSummary
	Rows             []calcRow
	// LowConfidence counts the blocks whose frequency rests on little.
	LowConfidence int
}

// calcSummary is the procedure's cycles by cause (shares, percent).
type calcSummary struct {
	Tallied          bool // some instruction has a frequency
	BestCPI, CPI     string
	Dynamic          []calcCause // each a range, lo to hi
	Static           []calcCause
	SubtotalDynamic  string
	SubtotalStatic   string
	TotalStall       string
	Execution        string
	NetSamplingError string
	Share            string // of all the selection's samples
	// Withheld: most samples rest on low-confidence estimates, so calc
	// names no cause (LowReason says why); LowShare is that share.
	Withheld  bool
	LowShare  string
	LowReason string
	// Measured is the share of samples whose frequency was measured
	// (ProfileMe, load latencies) rather than estimated, "" for none.
	Measured string
}

// calcCause is one line of the summary: a cause and its share or range.
type calcCause struct {
	Cause string
	Share string
	Bar   float64 // the share's upper end in size, percent (0 to 100), for the bar
}

// calcRow is one instruction, with its block's frequency on the block's
// first row.
type calcRow struct {
	Addr       string
	Samples    string
	Freq       string // "" but on a block's first instruction
	Confidence string
	// Why is the block's method and, when low, its reason (a tooltip).
	Why        string
	BlockStart bool
	CPI        string
	Culprits   string // static letters, then dynamic candidates
	Insn       string
	Source     string
}

// Mirrors of the fields of calc's JSON the page uses.
type (
	calcJSON struct {
		Legend     map[string]string `json:"legend"`
		Procedures []struct {
			Procedure string `json:"procedure"`
			Image     string `json:"image"`
			Blocks    []struct {
				Start      uint64   `json:"start"`
				Frequency  *float64 `json:"frequency"`
				Confidence string   `json:"confidence"`
				Method     string   `json:"method"`
				Reason     string   `json:"reason"`
			} `json:"blocks"`
			Insns []struct {
				Addr    uint64   `json:"addr"`
				Insn    string   `json:"insn"`
				File    string   `json:"file"`
				Line    int      `json:"line"`
				Samples float64  `json:"samples"`
				CPI     *float64 `json:"cpi"`
				Static  []struct {
					Letter string `json:"letter"`
				} `json:"static"`
				Candidates []struct {
					Letter string `json:"letter"`
				} `json:"candidates"`
			} `json:"instructions"`
			Summary struct {
				Instructions float64  `json:"instructions"`
				BestCaseCPI  *float64 `json:"best_case_cpi"`
				ActualCPI    *float64 `json:"actual_cpi"`
				Actual       float64  `json:"actual"`
				AllSamples   float64  `json:"all_samples"`
				Dynamic      []struct {
					Cause string  `json:"cause"`
					Lo    float64 `json:"lo"`
					Hi    float64 `json:"hi"`
				} `json:"dynamic"`
				UnexplainedStall calcRangeJSON `json:"unexplained_stall"`
				UnexplainedGain  calcRangeJSON `json:"unexplained_gain"`
				SubtotalDynamic  float64       `json:"subtotal_dynamic"`
				Static           []struct {
					Cause string  `json:"cause"`
					Share float64 `json:"share"`
				} `json:"static"`
				SubtotalStatic   float64 `json:"subtotal_static"`
				TotalStall       float64 `json:"total_stall"`
				Execution        float64 `json:"execution"`
				NetSamplingError float64 `json:"net_sampling_error"`
				LowShare         float64 `json:"low_confidence_share"`
				LowReason        string  `json:"low_confidence_reason"`
				Withheld         bool    `json:"culprits_withheld"`
				MeasuredShare    float64 `json:"measured_share"`
			} `json:"summary"`
		} `json:"procedures"`
	}
	calcRangeJSON struct {
		Lo float64 `json:"lo"`
		Hi float64 `json:"hi"`
	}
)

// newCalcPage reads r through its JSON form.
func newCalcPage(r *calc.Report) (*calcPage, error) {
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		return nil, err
	}
	var j calcJSON
	if err := json.Unmarshal(buf.Bytes(), &j); err != nil {
		return nil, fmt.Errorf("reading dcpi calc's report: %w", err)
	}
	p := &calcPage{}
	for _, letter := range slices.Sorted(maps.Keys(j.Legend)) {
		p.Legend = append(p.Legend, calcLetter{Letter: letter, Cause: j.Legend[letter]})
	}
	pct := func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }
	cpi := func(v *float64) string {
		if v == nil {
			return "—"
		}
		return fmt.Sprintf("%.2f", *v)
	}
	for _, jp := range j.Procedures {
		cp := calcProc{Procedure: jp.Procedure, Image: jp.Image}
		s := &jp.Summary
		cp.Summary = calcSummary{Tallied: s.Instructions > 0, BestCPI: cpi(s.BestCaseCPI), CPI: cpi(s.ActualCPI),
			SubtotalDynamic: pct(s.SubtotalDynamic), SubtotalStatic: pct(s.SubtotalStatic), TotalStall: pct(s.TotalStall),
			Execution: pct(s.Execution), NetSamplingError: pct(s.NetSamplingError)}
		if s.AllSamples > 0 {
			cp.Summary.Share = fmt.Sprintf("%.1f%%", 100*s.Actual/s.AllSamples)
		}
		cp.Summary.Withheld, cp.Summary.LowReason = s.Withheld, s.LowReason
		if s.LowShare > 0 {
			cp.Summary.LowShare = pct(s.LowShare)
		}
		if s.MeasuredShare > 0 {
			cp.Summary.Measured = pct(s.MeasuredShare)
		}
		for _, d := range s.Dynamic {
			cp.Summary.Dynamic = append(cp.Summary.Dynamic, calcCause{Cause: d.Cause, Share: pct(d.Lo) + " to " + pct(d.Hi), Bar: bar(d.Hi)})
		}
		cp.Summary.Dynamic = append(cp.Summary.Dynamic,
			calcCause{Cause: "unexplained stall", Share: pct(s.UnexplainedStall.Lo) + " to " + pct(s.UnexplainedStall.Hi), Bar: bar(s.UnexplainedStall.Hi)},
			calcCause{Cause: "unexplained gain", Share: pct(s.UnexplainedGain.Lo) + " to " + pct(s.UnexplainedGain.Hi), Bar: bar(s.UnexplainedGain.Lo)})
		for _, st := range s.Static {
			cp.Summary.Static = append(cp.Summary.Static, calcCause{Cause: st.Cause, Share: pct(st.Share), Bar: bar(st.Share)})
		}
		blocks := map[uint64]int{}
		for i, b := range jp.Blocks {
			blocks[b.Start] = i
			if b.Confidence == "low" {
				cp.LowConfidence++
			}
		}
		for _, in := range jp.Insns {
			row := calcRow{Addr: fmt.Sprintf("%x", in.Addr), Samples: fmt.Sprintf("%.0f", in.Samples), CPI: cpi(in.CPI), Insn: in.Insn}
			if in.Samples == 0 {
				row.Samples = ""
			}
			if bi, ok := blocks[in.Addr]; ok {
				b := jp.Blocks[bi]
				row.BlockStart, row.Confidence, row.Freq = true, b.Confidence, "—"
				row.Why = b.Confidence + " confidence"
				if b.Method != "" {
					row.Why += ", by " + b.Method
				}
				if b.Reason != "" {
					row.Why += ": " + b.Reason
				}
				if b.Frequency != nil {
					row.Freq = fmt.Sprintf("%.0f", *b.Frequency)
				}
			}
			var letters strings.Builder
			for _, st := range in.Static {
				letters.WriteString(st.Letter)
			}
			if len(in.Candidates) > 0 {
				letters.WriteString(" ")
				for _, c := range in.Candidates {
					letters.WriteString(c.Letter)
				}
			}
			row.Culprits = strings.TrimSpace(letters.String())
			if in.File != "" {
				row.Source = fmt.Sprintf("%s:%d", baseName(in.File), in.Line)
			}
			cp.Rows = append(cp.Rows, row)
		}
		p.Procs = append(p.Procs, cp)
	}
	return p, nil
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// bar is a share's bar length, percent: its size (a gain is negative),
// at most the whole.
func bar(share float64) float64 { return min(math.Abs(100*share), 100) }
