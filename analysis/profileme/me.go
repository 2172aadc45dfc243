package profileme

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"dcpi/analysis"
	"dcpi/analysis/symbolize"
	"dcpi/storage"
	"dcpi/wire"
)

// ProfileMe estimators (the ProfileMe paper, sec. 5.1). A sampled
// instruction stands for S fetched instructions, S the hardware's mean
// sampling interval; an event seen in k samples of an instruction is
// estimated to have happened k·S times, with a relative error of about
// 1/sqrt(k) (the count of a rare event among many trials is nearly
// Poisson). Every estimate is reported with that error beside it. Means
// of latencies are over the samples of the instruction and need no S.

// Source reads stored ProfileMe sums (storage.DB, or the cluster's
// query service).
type Source interface {
	MeProfile(ctx context.Context, q storage.Query, fn func(r *storage.MeRow) error) error
}

// Query selects the instructions of a ProfileMe report.
type Query struct {
	// Filter selects epochs, hosts, PIDs and images (its Events are
	// ignored); ImagePaths selects images by path as in report.ProfQuery.
	Filter     storage.Query
	ImagePaths []string
	// Procedure, when set, makes the report list that procedure's
	// instructions one by one (narrow with ImagePaths if several images
	// have one of that name); otherwise it summarizes procedures.
	Procedure string
	// Interval is S, the mean fetched instructions per sample.
	Interval float64
	// PairWindow is W, the pair window the hardware drew the intra-pair
	// distance from, and IssueWidth C, the issue slots per cycle: the
	// wasted-slot estimator's constants (sec. 5.2.3). Zero: no wasted-slot
	// estimates.
	PairWindow, IssueWidth float64
	// Limit caps the procedures of a summary (0: all).
	Limit int
}

// Params are the constants the estimators need: S, and for wasted
// slots W and C (Query's fields).
type Params struct {
	Interval, PairWindow, IssueWidth float64
}

// Estimate is an event count estimated from k samples: Count = k·S,
// RelErr = 1/sqrt(k) (0 when k is 0: nothing was seen, and nothing is
// claimed).
type Estimate struct {
	Samples uint64  `json:"samples"`
	Count   float64 `json:"estimate"`
	RelErr  float64 `json:"rel_error,omitempty"`
}

func estimate(k uint64, s float64) Estimate {
	e := Estimate{Samples: k, Count: float64(k) * s}
	if k > 0 {
		e.RelErr = 1 / math.Sqrt(float64(k))
	}
	return e
}

// Figures are the estimates and means of one instruction or procedure.
type Figures struct {
	Samples Estimate `json:"fetched"` // instructions fetched
	Retired Estimate `json:"retired"`
	// Aborts by reason: an interrupt taken before the instruction
	// issued, or a trap it raised.
	AbortInterrupt Estimate `json:"abort_interrupt"`
	AbortTrap      Estimate `json:"abort_trap"`
	// Events by name (wire's field names: taken, mispredict, imiss,
	// itbmiss, dmiss, dtbmiss, smiss, bmiss, wbfull), only those seen.
	Events map[string]Estimate `json:"events,omitempty"`
	// MeanHead is the mean cycles at the head of the issue queue,
	// MeanStall its part per stall cause (only causes seen), and
	// MeanLoadLatency the mean issue-to-data cycles of the samples that
	// were loads (LoadSamples of them).
	MeanHead        float64            `json:"mean_head_cycles"`
	MeanStall       map[string]float64 `json:"mean_stall_cycles,omitempty"`
	LoadSamples     uint64             `json:"load_samples,omitempty"`
	MeanLoadLatency float64            `json:"mean_load_latency,omitempty"`
	// AbortSquash is the aborts of squashed instructions (fetched on a
	// mispredicted path, or younger than a trap: the 21264's).
	AbortSquash Estimate `json:"abort_squash"`
	// MeanStages is the mean cycles of each Table 1 stage (the 21264's;
	// none on the 21164), by name (wire's, without "stage_").
	MeanStages map[string]float64 `json:"mean_stage_cycles,omitempty"`
	// Pairs is the paired-sampling figures, nil without pairs.
	Pairs *PairFigures `json:"pairs,omitempty"`
}

// PairFigures are the estimates paired sampling gives one instruction
// (the ProfileMe paper, sec. 5.2.3). With k paired samples of I (both
// roles), L the sum of their fetch-to-ready-to-retire cycles and U the
// samples whose partner issued while I was in progress and then retired:
//
//   - Latency L·C·S/2 is the issue slots available while I was in
//     progress, over all its executions (each execution is sampled at
//     about 2/S, as either member of a pair; C slots a cycle);
//   - Useful U·W·S is the slots used by instructions that overlapped I
//     usefully (a given partner is drawn with probability 1/(S·W));
//   - Wasted = Latency - Useful.
//
// Each term's relative error is about 1/sqrt of the samples it rests on
// (k for Latency, U for Useful); Wasted's combines the two terms' absolute
// errors in quadrature. Overlap is the share of paired samples whose
// partner was in flight at once, PartnerRetired the share whose partner
// retired, both with their counts.
type PairFigures struct {
	Samples        uint64   `json:"samples"` // k
	Latency        Estimate `json:"latency_slots"`
	Useful         Estimate `json:"useful_slots"`
	Wasted         float64  `json:"wasted_slots"`
	WastedRelErr   float64  `json:"wasted_rel_error,omitempty"`
	MeanInProgress float64  `json:"mean_in_progress_cycles"`
	Overlap        uint64   `json:"overlap"`
	PartnerRetired uint64   `json:"partner_retired"`
}

// FiguresOf computes the figures of c with interval s (no wasted slots).
func FiguresOf(c *wire.MeCounts, s float64) Figures {
	return FiguresWith(c, Params{Interval: s})
}

// FiguresWith computes the figures of c with p's constants: with W and
// C set and paired samples in c, the pair figures too.
func FiguresWith(c *wire.MeCounts, p Params) Figures {
	s := p.Interval
	f := Figures{Samples: estimate(c[wire.MeSamples], s), Retired: estimate(c[wire.MeRetired], s),
		AbortInterrupt: estimate(c[wire.MeAbortIntr], s), AbortTrap: estimate(c[wire.MeAbortTrap], s),
		AbortSquash: estimate(c[wire.MeAbortSquash], s)}
	for i := wire.MeTaken; i <= wire.MeWBFull; i++ {
		if c[i] > 0 {
			if f.Events == nil {
				f.Events = map[string]Estimate{}
			}
			f.Events[wire.MeFieldName(i)] = estimate(c[i], s)
		}
	}
	if n := float64(c[wire.MeSamples]); n > 0 {
		f.MeanHead = float64(c[wire.MeHeadCycles]) / n
		for i := range wire.MeLoads - wire.MeStall0 {
			if v := c[wire.MeStall0+i]; v > 0 {
				if f.MeanStall == nil {
					f.MeanStall = map[string]float64{}
				}
				f.MeanStall[strings.TrimPrefix(wire.MeFieldName(wire.MeStall0+i), "stall_")] = float64(v) / n
			}
		}
	}
	if l := c[wire.MeLoads]; l > 0 {
		f.LoadSamples, f.MeanLoadLatency = l, float64(c[wire.MeLoadLatency])/float64(l)
	}
	if n := float64(c[wire.MeSamples]); n > 0 {
		for i := range wire.MeStages {
			if v := c[wire.MeStage0+i]; v > 0 {
				if f.MeanStages == nil {
					f.MeanStages = map[string]float64{}
				}
				f.MeanStages[strings.TrimPrefix(wire.MeFieldName(wire.MeStage0+i), "stage_")] = float64(v) / n
			}
		}
	}
	f.Pairs = pairFigures(c, p)
	return f
}

// pairFigures are c's PairFigures with p's constants, nil without
// paired samples.
func pairFigures(c *wire.MeCounts, p Params) *PairFigures {
	k := c[wire.MeFirst] + c[wire.MeSecond]
	if k == 0 {
		return nil
	}
	pf := &PairFigures{Samples: k, MeanInProgress: float64(c[wire.MeInProgress]) / float64(k),
		Overlap: c[wire.MeOverlap], PartnerRetired: c[wire.MePartnerRetired]}
	if p.PairWindow <= 0 || p.IssueWidth <= 0 {
		return pf
	}
	lat := float64(c[wire.MeInProgress]) * p.IssueWidth * p.Interval / 2
	pf.Latency = Estimate{Samples: k, Count: lat, RelErr: 1 / math.Sqrt(float64(k))}
	pf.Useful = estimate(c[wire.MeUseful], p.PairWindow*p.Interval)
	pf.Wasted = lat - pf.Useful.Count
	if pf.Wasted != 0 {
		pf.WastedRelErr = math.Hypot(pf.Latency.Count*pf.Latency.RelErr, pf.Useful.Count*pf.Useful.RelErr) / math.Abs(pf.Wasted)
	}
	return pf
}

// wasted is the wasted slots of f, 0 without pair figures.
func (f *Figures) wasted() float64 {
	if f.Pairs == nil {
		return 0
	}
	return f.Pairs.Wasted
}

// Instr is one instruction of a listing.
type Instr struct {
	Offset uint64 `json:"offset"`
	Addr   uint64 `json:"address"`
	// Insn is the instruction's disassembly, File and Line its source
	// (DWARF), where the image file was found (Annotate).
	Insn string `json:"insn,omitempty"`
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Figures
}

// Proc is one procedure's figures, and its instructions in a listing.
type Proc struct {
	Procedure string `json:"procedure"`
	Image     string `json:"image"`
	Key       string `json:"key"`
	Figures
	Instrs []Instr `json:"instructions,omitempty"`
	counts wire.MeCounts
}

// Report is a ProfileMe summary (procedures by samples) or listing
// (one procedure's instructions).
type Report struct {
	Interval float64 `json:"interval"`
	// PairWindow and IssueWidth are the wasted-slot constants W and C
	// (0: not estimated); ByWasted says the summary is ranked by wasted
	// slots (when the selection has paired samples), not by samples.
	PairWindow float64 `json:"pair_window,omitempty"`
	IssueWidth float64 `json:"issue_width,omitempty"`
	ByWasted   bool    `json:"by_wasted,omitempty"`
	Samples    uint64  `json:"samples"` // over every procedure selected
	Procs      []Proc  `json:"procedures"`
	Listing    bool    `json:"listing"`
}

// Profile builds q's report from src, naming code with syms.
func Profile(ctx context.Context, syms *symbolize.Symbolizer, src Source, q Query) (*Report, error) {
	if q.Interval <= 0 || math.IsInf(q.Interval, 0) || math.IsNaN(q.Interval) {
		return nil, fmt.Errorf("ProfileMe interval %g: want a positive number of fetched instructions per sample", q.Interval)
	}
	for _, v := range []float64{q.PairWindow, q.IssueWidth} {
		if v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("ProfileMe pair window %g, issue width %g: want positive numbers (or 0: no wasted-slot estimates)", q.PairWindow, q.IssueWidth)
		}
	}
	type procKey struct {
		image wire.ImageKey
		name  string
	}
	procs := map[procKey]*Proc{}
	instrs := map[procKey]map[uint64]*wire.MeCounts{}
	var total uint64
	err := src.MeProfile(ctx, q.Filter, func(r *storage.MeRow) error {
		path := r.Image.String() // no record: named by its key
		var tab *symbolize.Table
		if rec, err := syms.Image(ctx, r.Image); err == nil {
			path = rec.Path
			if tab, err = syms.Table(ctx, r.Image); err != nil {
				return err
			}
		} else if !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		if !analysis.MatchImagePath(q.ImagePaths, path) {
			return nil
		}
		name := fmt.Sprintf("[%s+%#x]", path, r.Offset)
		if tab != nil {
			if sym, _, ok := tab.Lookup(r.Offset); ok {
				name = sym.Name
			}
		}
		if q.Procedure != "" && name != q.Procedure {
			return nil
		}
		k := procKey{r.Image, name}
		p := procs[k]
		if p == nil {
			p = &Proc{Procedure: name, Image: path, Key: r.Image.String()}
			procs[k] = p
			instrs[k] = map[uint64]*wire.MeCounts{}
		}
		p.counts.Add(&r.Counts)
		total += r.Counts[wire.MeSamples]
		if q.Procedure != "" {
			c := instrs[k][r.Offset]
			if c == nil {
				c = &wire.MeCounts{}
				instrs[k][r.Offset] = c
			}
			c.Add(&r.Counts)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if q.Procedure != "" && len(procs) > 1 {
		var where []string
		for k := range procs {
			where = append(where, procs[k].Image)
		}
		slices.Sort(where)
		return nil, fmt.Errorf("procedure %s is in %d images (%s): narrow with --image", q.Procedure, len(procs), strings.Join(where, ", "))
	}
	rep := &Report{Interval: q.Interval, Samples: total, Listing: q.Procedure != "", PairWindow: q.PairWindow, IssueWidth: q.IssueWidth}
	params := Params{Interval: q.Interval, PairWindow: q.PairWindow, IssueWidth: q.IssueWidth}
	for k, p := range procs {
		p.Figures = FiguresWith(&p.counts, params)
		rep.ByWasted = rep.ByWasted || p.Pairs != nil && p.Pairs.Latency.Samples > 0
		if rep.Listing {
			var base uint64
			if tab, err := syms.Table(ctx, k.image); err == nil {
				base = tab.Base
			}
			for off, c := range instrs[k] {
				p.Instrs = append(p.Instrs, Instr{Offset: off, Addr: base + off, Figures: FiguresWith(c, params)})
			}
			slices.SortFunc(p.Instrs, func(a, b Instr) int { return cmp.Compare(a.Offset, b.Offset) })
		}
		rep.Procs = append(rep.Procs, *p)
	}
	slices.SortFunc(rep.Procs, func(a, b Proc) int {
		if rep.ByWasted {
			if c := cmp.Compare(b.wasted(), a.wasted()); c != 0 {
				return c
			}
		}
		if c := cmp.Compare(b.Samples.Samples, a.Samples.Samples); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Procedure, b.Procedure); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	if q.Limit > 0 && len(rep.Procs) > q.Limit {
		rep.Procs = rep.Procs[:q.Limit]
	}
	return rep, nil
}

// est formats an estimate as "count ±pct%", or "-" when nothing was seen.
func est(e Estimate) string {
	if e.Samples == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3g ±%.0f%%", e.Count, 100*e.RelErr)
}

// topEvents names the events seen, most samples first, as "dmiss 1.2e+05 ±9%".
func topEvents(f *Figures, n int) string {
	names := make([]string, 0, len(f.Events))
	for name := range f.Events {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(f.Events[b].Samples, f.Events[a].Samples); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	if n > 0 && len(names) > n {
		names = names[:n]
	}
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = name + " " + est(f.Events[name])
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// Write prints a report: a summary's table of procedures, or a
// listing's procedure line and one line per instruction.
func Write(w io.Writer, rep *Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "ProfileMe: %d samples, one per %.0f fetched instructions (S); an estimate is k·S ±1/sqrt(k) for k samples\n", rep.Samples, rep.Interval)
	if rep.ByWasted {
		fmt.Fprintf(w, "wasted issue slots = L·C·S/2 - U·W·S (sec. 5.2.3; C = %g, W = %g); procedures by wasted slots\n", rep.IssueWidth, rep.PairWindow)
	}
	fmt.Fprintln(w)
	if !rep.Listing {
		fmt.Fprintln(tw, "samples\tfetched\tretired\taborted\thead cyc\tload lat\twasted slots\tprocedure\timage\tevents\t")
		for _, p := range rep.Procs {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%.2f\t%s\t%s\t%s\t%s\t%s\t\n", p.Samples.Samples, est(p.Samples), est(p.Retired),
				p.AbortInterrupt.Samples+p.AbortTrap.Samples+p.AbortSquash.Samples, p.MeanHead, loadLat(&p.Figures), wastedText(&p.Figures),
				p.Procedure, p.Image, topEvents(&p.Figures, 3))
		}
		return tw.Flush()
	}
	for _, p := range rep.Procs {
		fmt.Fprintf(w, "%s (%s): %d samples, fetched %s, retired %s, aborted by interrupts %s, by traps %s, squashed %s; mean head %.2f cycles; wasted slots %s; events %s\n\n",
			p.Procedure, p.Image, p.Samples.Samples, est(p.Samples), est(p.Retired), est(p.AbortInterrupt), est(p.AbortTrap), est(p.AbortSquash),
			p.MeanHead, wastedText(&p.Figures), topEvents(&p.Figures, 0))
		fmt.Fprintf(w, "stages, mean cycles: %s\n\n", stageLegend())
		rows := [][]string{{"address", "samples", "retired", "squashed", "head", "load lat", "wasted", "instruction", "source", "stages", "stalls", "events"}}
		lastFile, lastLine := "", 0
		for _, in := range p.Instrs {
			src := ""
			if in.File != "" && (in.File != lastFile || in.Line != lastLine) {
				src, lastFile, lastLine = fmt.Sprintf("%s:%d", path.Base(in.File), in.Line), in.File, in.Line
			}
			rows = append(rows, []string{fmt.Sprintf("%#x", in.Addr), fmt.Sprint(in.Samples.Samples), est(in.Retired), est(in.AbortSquash),
				fmt.Sprintf("%.2f", in.MeanHead), loadLat(&in.Figures), wastedText(&in.Figures),
				strings.ReplaceAll(cmp.Or(in.Insn, "?"), "\t", " "), src, shortStages(&in.Figures), topStalls(&in.Figures, 1), topEvents(&in.Figures, 1)})
		}
		if err := writeColumns(w, rows, 7); err != nil { // the numbers right-aligned, the words left
			return err
		}
	}
	return nil
}

// wastedText formats the wasted slots ±error, or "-" without pairs.
func wastedText(f *Figures) string {
	if f.Pairs == nil || f.Pairs.Latency.Samples == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3g ±%.0f%%", f.Pairs.Wasted, 100*f.Pairs.WastedRelErr)
}

// writeColumns prints rows as a table two spaces apart, the first right
// columns right-aligned (numbers) and the rest left-aligned (words), each
// line's trailing spaces trimmed.
func writeColumns(w io.Writer, rows [][]string, right int) error {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i < right {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
			b.WriteString("  ")
		}
		if _, err := fmt.Fprintln(w, strings.TrimRight(b.String(), " ")); err != nil {
			return err
		}
	}
	return nil
}

// topStalls is stalls' first n causes (0: all).
func topStalls(f *Figures, n int) string {
	s := stalls(f)
	if parts := strings.Split(s, ", "); n > 0 && len(parts) > n {
		return strings.Join(parts[:n], ", ") + ", ..."
	}
	return s
}

// stageCodes are the listing's short names of the Table 1 stages.
var stageCodes = map[string]string{"fetch_map": "fm", "map_ready": "mr", "ready_issue": "ri", "issue_retready": "ir", "retready_retire": "rr"}

// stageLegend names the codes, in pipeline order.
func stageLegend() string {
	var parts []string
	for i := range wire.MeStages {
		n := strings.TrimPrefix(wire.MeFieldName(wire.MeStage0+i), "stage_")
		parts = append(parts, cmp.Or(stageCodes[n], n)+" "+strings.ReplaceAll(n, "_", "→"))
	}
	return strings.Join(parts, ", ")
}

// shortStages is stages with the codes: "fm 1.8 mr 0.7 ir 2.7 rr 2.0".
func shortStages(f *Figures) string {
	var parts []string
	for i := range wire.MeStages {
		n := strings.TrimPrefix(wire.MeFieldName(wire.MeStage0+i), "stage_")
		if v, ok := f.MeanStages[n]; ok {
			parts = append(parts, fmt.Sprintf("%s %.1f", cmp.Or(stageCodes[n], n), v))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

func loadLat(f *Figures) string {
	if f.LoadSamples == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", f.MeanLoadLatency)
}

// stalls names the stall causes by mean cycles, most first.
func stalls(f *Figures) string {
	names := make([]string, 0, len(f.MeanStall))
	for n := range f.MeanStall {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(f.MeanStall[b], f.MeanStall[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %.2f", n, f.MeanStall[n])
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
