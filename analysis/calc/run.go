package calc

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"dcpi/analysis"
	"dcpi/analysis/cfg"
	"dcpi/analysis/report"
	"dcpi/analysis/symbolize"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/alpha/disasm"
	"dcpi/internal/editdist"
	"dcpi/node/valuemod"
	"dcpi/storage"
	"dcpi/wire"
)

// Query is a dcpicalc request: which procedures to analyze, from which
// samples, and the sampling periods that turn samples into events.
type Query struct {
	// Filter and ImagePaths select samples as in report.ProfQuery. Filter's
	// Events are ignored: dcpicalc reads every event (CYCLES for the
	// frequencies and CPIs, the others to bound the dynamic causes).
	Filter     storage.Query
	ImagePaths []string
	// Which procedures, exactly one of:
	//   - Procedures: by name; every image with CYCLES samples in a
	//     procedure of that name is analyzed (narrow with ImagePaths);
	//   - Top: the Top procedures with the most CYCLES samples in the
	//     selection, ranked as dcpi prof ranks them;
	//   - All: every procedure with CYCLES samples in the selection (with
	//     ImagePaths naming one image: that whole image).
	Procedures []string
	Top        int
	All        bool
	// Files finds the images' bytes; required.
	Files symbolize.ImageFinder
	// Source returns a source file's text for the interleaved lines (as
	// report.ListQuery.Source); nil shows file:line without text.
	Source func(file string) ([]byte, error)
	// Periods are each host's mean sampling period per event (events per
	// sample, by event number), keyed by host name; required. When
	// Filter.Hosts is nil the selected hosts are Periods' keys. Hosts that
	// agree on every event's period are read summed; otherwise each
	// host's samples are read apart and scaled to one common period
	// before they are summed (see Run).
	Periods map[string]map[uint8]float64
	// Me, when set, reads ProfileMe's samples of the same selection: an
	// instruction's retire samples times MeInterval (S, the mean fetched
	// instructions per sample) measure its executions, which replace or
	// check the frequency heuristic (EstimateFrequencies). nil or a
	// MeInterval of 0: CYCLES samples alone.
	Me         MeSource
	MeInterval float64
	// Values, when set, reads value sampling's hot lists of the same
	// selection: the load-latency lists (dcpi profile --values loadlat)
	// bound the heuristic's frequencies (EstimateFrequencies).
	Values ValueSource
	// Static, Freq and Explain are passed to the estimator.
	Static  StaticOptions
	Freq    FreqOptions
	Explain ExplainOptions
}

// MeSource reads stored ProfileMe sums (storage.DB, the cluster's
// query service), as profileme.Source.
type MeSource interface {
	MeProfile(ctx context.Context, q storage.Query, fn func(r *storage.MeRow) error) error
}

// ValueSource reads stored value-sampling hot lists (storage.DB), as
// values.Source.
type ValueSource interface {
	ValueLists(ctx context.Context, q storage.ValueQuery) ([]wire.ValueList, error)
}

// Report is dcpicalc's output as data: each procedure's analysis, in
// the order selected (by name as given; by samples for Top and All).
type Report struct {
	// CyclesSamples is the selection's CYCLES samples (every image), the
	// base of each procedure's share.
	CyclesSamples uint64
	Procedures    []ProcReport
}

// ProcReport is one procedure of one image, analyzed.
type ProcReport struct {
	Procedure string
	Image     string
	ImageKey  wire.ImageKey
	File      string // where its bytes were found
	Start     uint64 // address of its first instruction
	End       uint64 // address past its last
	// HasLines is whether the image has DWARF line information.
	HasLines bool
	// Hosts is how many hosts' samples were summed into the estimate.
	Hosts int
	// Periods are the common period P of each event the procedure has
	// samples of (events per sample), by event name: its samples are in
	// units of P.
	Periods map[string]float64
	// Samples are the procedure's samples per event name, after scaling
	// to Periods (so they sum to its raw samples when the hosts agree).
	Samples map[string]float64
	// Explanation is the estimator's analysis: every instruction in
	// address order, and the summary (Figure 4).
	Explanation *Explanation
	// Text is each instruction's disassembly and source line, parallel to
	// Explanation.Insns.
	Text []InsnText
}

// InsnText is an instruction's disassembly and, when it begins a new
// source line, that line (File != "").
type InsnText struct {
	Insn string
	File string
	Line int
	// Source is the line's text, "" when the file was not found.
	Source string
}

// Run runs dcpicalc on each procedure q selects: it finds the image's
// bytes (refusing another build's, as report.List does), builds the procedure's
// CFG (analysis/cfg), its classes and schedules (NewProcedure), reads
// its samples of every event from the image's part of the index, and
// passes them to EstimateFrequencies and Explain.
//
// Fleet-wide estimation (DCPI analyzed one run at a time): the samples of
// the same image on every selected host and in every selected epoch feed
// one estimate. Summing is right when every sample stands for the same
// number of events; hosts with different periods for an event are read
// apart and each host's samples are weighted by its period: an
// instruction's samples of event e become Σ_h S_h·P_h / P, where the common
// period P = Σ_h S_h·P_h / Σ_h S_h over the procedure's samples of e (the
// sample-weighted mean period), so the procedure keeps its number of
// samples and F·P still estimates executions. Epochs of one host share its
// registered period.
func Run(ctx context.Context, src analysis.Source, q Query) (*Report, error) {
	modes := 0
	if len(q.Procedures) > 0 {
		modes++
	}
	if q.Top != 0 {
		modes++
	}
	if q.All {
		modes++
	}
	switch {
	case modes != 1:
		return nil, fmt.Errorf("analysis: calc: %w: give procedure names, a top N, or all (exactly one)", analysis.ErrQuery)
	case q.Top < 0:
		return nil, fmt.Errorf("analysis: calc: %w: top %d is negative", analysis.ErrQuery, q.Top)
	case q.Files == nil:
		return nil, fmt.Errorf("analysis: calc: %w: no image finder", analysis.ErrQuery)
	case len(q.Periods) == 0:
		return nil, fmt.Errorf("analysis: calc: %w: no sampling periods (events per sample) for any host", analysis.ErrQuery)
	}
	for _, p := range q.Procedures {
		if p == symbolize.UnknownProcedure {
			return nil, fmt.Errorf("analysis: calc: %w: %s has no code to analyze (it is where no symbol covers)", analysis.ErrQuery, p)
		}
	}
	syms := symbolize.New(src)
	// Every event of the selection, by procedure: the ranking, and what
	// the selection holds when it has no CYCLES samples.
	t, err := report.Prof(ctx, syms, report.ProfQuery{Filter: q.Filter, ImagePaths: q.ImagePaths})
	if err != nil {
		return nil, fmt.Errorf("analysis: calc: %w", err)
	}
	cyc := slices.IndexFunc(t.Columns, func(c report.ProfColumn) bool { return c.Event == uint8(alpha.EvCycles) })
	if cyc < 0 || t.Columns[cyc].Total == 0 {
		var has []string
		for _, c := range t.Columns {
			if c.Total > 0 {
				has = append(has, c.Name)
			}
		}
		if len(has) == 0 {
			return nil, fmt.Errorf("analysis: calc: %w: no samples in the selected profile", analysis.ErrQuery)
		}
		return nil, fmt.Errorf("analysis: calc: %w: dcpicalc needs CYCLES samples; this profile has only: %s", analysis.ErrQuery, strings.Join(has, ", "))
	}
	rows, err := calcRows(ctx, syms, q, t, cyc)
	if err != nil {
		return nil, err
	}
	hosts := q.Filter.Hosts
	if hosts == nil {
		hosts = slices.Sorted(func(yield func(string) bool) {
			for h := range q.Periods {
				if !yield(h) {
					return
				}
			}
		})
	}
	r := &Report{CyclesSamples: t.Columns[cyc].Total}
	images := map[wire.ImageKey]*calcImage{}
	for _, row := range rows {
		im := images[row.ImageKey]
		if im == nil {
			if im, err = openCalcImage(ctx, syms, q, row, hosts); err != nil {
				return nil, err
			}
			images[row.ImageKey] = im
		}
		ranges, err := im.ranges(row.Procedure)
		if err != nil {
			return nil, err
		}
		for _, rg := range ranges {
			p, err := im.analyze(q, row.Procedure, rg)
			if err != nil {
				return nil, err
			}
			r.Procedures = append(r.Procedures, *p)
		}
	}
	return r, nil
}

// calcRows picks the report.Prof rows of the procedures q selects, each with
// CYCLES samples.
func calcRows(ctx context.Context, syms *symbolize.Symbolizer, q Query, t *report.ProfTable, cyc int) ([]report.ProfRow, error) {
	var hot []report.ProfRow // by CYCLES samples, as dcpi prof ranks them
	for _, r := range t.Rows {
		if r.Counts[cyc] > 0 && r.Procedure != symbolize.UnknownProcedure {
			hot = append(hot, r)
		}
	}
	slices.SortStableFunc(hot, func(a, b report.ProfRow) int {
		switch {
		case a.Counts[cyc] > b.Counts[cyc]:
			return -1
		case a.Counts[cyc] < b.Counts[cyc]:
			return 1
		}
		return 0
	})
	switch {
	case q.All:
		return hot, nil
	case q.Top > 0:
		return hot[:min(q.Top, len(hot))], nil
	}
	var out []report.ProfRow
	for _, name := range q.Procedures {
		n := len(out)
		for _, r := range hot {
			if r.Procedure == name {
				out = append(out, r)
			}
		}
		if len(out) == n {
			return nil, calcNameError(ctx, syms, t, name)
		}
	}
	return out, nil
}

// calcNameError explains why procedure name has nothing to analyze: no
// CYCLES samples in it, or no such procedure in any image searched (with
// the closest names there).
func calcNameError(ctx context.Context, syms *symbolize.Symbolizer, t *report.ProfTable, name string) error {
	var searched []string
	var names []string
	seen := map[wire.ImageKey]bool{}
	for _, r := range t.Rows {
		if seen[r.ImageKey] {
			continue
		}
		seen[r.ImageKey] = true
		searched = append(searched, r.Image)
		tab, err := syms.Table(ctx, r.ImageKey)
		if err != nil {
			continue
		}
		for _, s := range tab.Symbols() {
			if s.Name == name {
				return fmt.Errorf("analysis: calc: %w: no CYCLES samples in procedure %s of %s in the selected profile", analysis.ErrQuery, name, r.Image)
			}
			names = append(names, s.Name)
		}
	}
	msg := fmt.Sprintf("analysis: calc: %%w: no procedure %s in the images with samples in the selection (%s)", name, orNoneList(capNames(searched, 8)))
	if close := closeNames(name, names, 5); len(close) > 0 {
		msg += "; close names: " + strings.Join(close, ", ")
	}
	return fmt.Errorf(msg, analysis.ErrQuery)
}

func orNoneList(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func capNames(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
}

// closeNames returns up to n of names nearest to want: those containing
// it or contained in it, and those within an edit distance of a third of
// its length (at least 2), nearest first.
func closeNames(want string, names []string, n int) []string {
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	seen := map[string]bool{}
	limit := max(2, len(want)/3)
	for _, s := range names {
		if seen[s] || s == "" {
			continue
		}
		seen[s] = true
		d := editDistance(want, s)
		if strings.Contains(s, want) || strings.Contains(want, s) && len(s) >= 3 {
			d = 0 // "triad" for triad.constprop.0 first
		}
		if d <= limit {
			cs = append(cs, cand{s, d})
		}
	}
	slices.SortFunc(cs, func(a, b cand) int {
		if a.d != b.d {
			return a.d - b.d
		}
		return strings.Compare(a.name, b.name)
	})
	var out []string
	for _, c := range cs[:min(n, len(cs))] {
		out = append(out, c.name)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b (bytes), or for
// names over 64 bytes (C++'s), 0 or the longer length: the table would
// cost more than a suggestion is worth.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return max(len(a), len(b))
	}
	return editdist.Distance(a, b)
}

// calcImage is one image being analyzed: its file, its code, and its
// samples of every event per host.
type calcImage struct {
	rec   *wire.ImageRecord
	file  *symbolize.ImageFile
	code  *cfg.Code
	table *symbolize.Table
	src   *report.SourceLines
	// counts[addr] are the samples at addr per host (index into hosts,
	// or one entry when the hosts were read summed) and event.
	counts  map[uint64][][alpha.NumEvents]float64
	periods [][alpha.NumEvents]float64 // per entry of counts' hosts
	nhosts  int
	// meRetired are ProfileMe's retire samples per address, summed over
	// the selected hosts (nil without ProfileMe).
	meRetired  map[uint64]float64
	meInterval float64
	// latency is value sampling's mean load latency per address.
	latency map[uint64]Latency
}

// openCalcImage finds and checks row's image, prepares its code and reads
// its part of the index.
func openCalcImage(ctx context.Context, syms *symbolize.Symbolizer, q Query, row report.ProfRow, hosts []string) (*calcImage, error) {
	rec, err := syms.Image(ctx, row.ImageKey)
	if err != nil {
		return nil, fmt.Errorf("analysis: calc %s: %w (the image's record was never uploaded, so its code cannot be found)", row.Procedure, err)
	}
	table, err := syms.Table(ctx, row.ImageKey)
	if err != nil {
		return nil, err
	}
	data, where, err := q.Files.FindImage(ctx, rec)
	if err != nil {
		return nil, fmt.Errorf("analysis: calc %s in %s: %w", row.Procedure, rec.Path, err)
	}
	f, err := symbolize.OpenImageFile(rec, data, where)
	if err != nil {
		return nil, fmt.Errorf("analysis: calc %s: %w", row.Procedure, err)
	}
	code, err := cfg.NewCode(f.ELF, cfg.Options{})
	if err != nil {
		return nil, fmt.Errorf("analysis: calc %s in %s: %w", row.Procedure, rec.Path, err)
	}
	im := &calcImage{rec: rec, file: f, code: code, table: table, src: report.NewSourceLines(q.Source), counts: map[uint64][][alpha.NumEvents]float64{}}
	// One read when the hosts agree on every period; else one per host,
	// each scaled by its own.
	agree := true
	per := make([][alpha.NumEvents]float64, len(hosts))
	for i, h := range hosts {
		p, ok := q.Periods[h]
		if !ok {
			return nil, fmt.Errorf("analysis: calc: %w: no sampling periods for host %s", analysis.ErrQuery, h)
		}
		for e, n := range p {
			if int(e) < int(alpha.NumEvents) && n > 0 && !math.IsInf(n, 0) {
				per[i][e] = n
			}
		}
		if i > 0 && per[i] != per[0] {
			agree = false
		}
	}
	fq := q.Filter
	fq.Images = []wire.ImageKey{row.ImageKey}
	fq.Events = nil // every event: CYCLES, and those bounding the dynamic causes
	col := map[string]int{}
	if agree {
		fq.Hosts = q.Filter.Hosts // nil: summed over every host
		im.periods = per[:min(1, len(per))]
		col[""] = 0
		for _, h := range hosts {
			col[h] = 0
		}
	} else {
		fq.Hosts = hosts
		im.periods = per
		for i, h := range hosts {
			col[h] = i
		}
	}
	im.nhosts = len(hosts)
	if len(im.periods) == 0 {
		return nil, fmt.Errorf("analysis: calc: %w: no host selected", analysis.ErrQuery)
	}
	err = syms.Profile(ctx, fq, func(_ wire.ImageKey, offset uint64, event uint8, host string, n uint64) error {
		if event >= uint8(alpha.NumEvents) {
			return nil
		}
		i, ok := col[host]
		if !ok {
			return fmt.Errorf("%w: samples of host %s, which has no sampling periods", analysis.ErrQuery, host)
		}
		addr := table.Base + offset
		c := im.counts[addr]
		if c == nil {
			c = make([][alpha.NumEvents]float64, len(im.periods))
			im.counts[addr] = c
		}
		c[i][event] += float64(n)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("analysis: calc: %s: %w", rec.Path, err)
	}
	if q.Me != nil && q.MeInterval > 0 {
		mq := storage.Query{Epochs: q.Filter.Epochs, Hosts: q.Filter.Hosts, PIDs: q.Filter.PIDs, Images: []wire.ImageKey{row.ImageKey}}
		err := q.Me.MeProfile(ctx, mq, func(r *storage.MeRow) error {
			if n := r.Counts[wire.MeRetired]; n > 0 {
				if im.meRetired == nil {
					im.meRetired = map[uint64]float64{}
				}
				im.meRetired[table.Base+r.Offset] += float64(n)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("analysis: calc: %s: ProfileMe samples: %w", rec.Path, err)
		}
		im.meInterval = q.MeInterval
	}
	if q.Values != nil {
		lists, err := q.Values.ValueLists(ctx, storage.ValueQuery{Epochs: q.Filter.Epochs, Hosts: q.Filter.Hosts})
		if err != nil {
			return nil, fmt.Errorf("analysis: calc: %s: value samples: %w", rec.Path, err)
		}
		for _, l := range lists {
			if l.Image != row.ImageKey || valuemod.Kind(l.Kind) != valuemod.KindLatency {
				continue
			}
			var n, sum float64
			for _, e := range l.List.Entries {
				c := float64(e.Count << l.List.Shift)
				n, sum = n+c, sum+c*float64(e.Value)
			}
			if n > 0 {
				if im.latency == nil {
					im.latency = map[uint64]Latency{}
				}
				im.latency[table.Base+l.Offset] = Latency{Mean: sum / n, Samples: float64(l.List.N)}
			}
		}
	}
	return im, nil
}

// ranges returns the code of every procedure of the image named name
// that has CYCLES samples, in address order: a static function's name may
// stand for several (glibc has four read_int), and the selection's row
// sums their samples. With none sampled, the first, whose analysis then
// says so.
func (im *calcImage) ranges(name string) ([]cfg.Range, error) {
	var all []cfg.Range
	seen := map[uint64]bool{}
	for _, s := range im.table.Symbols() {
		if s.Name != name {
			continue
		}
		if r, err := im.code.At(s.Addr); err == nil && !seen[r.Start] {
			seen[r.Start] = true
			all = append(all, r)
		}
	}
	if len(all) == 0 {
		r, err := im.code.Lookup(name)
		if err != nil {
			return nil, fmt.Errorf("analysis: calc %s in %s: %w", name, im.rec.Path, err)
		}
		all = append(all, r)
	}
	slices.SortFunc(all, func(a, b cfg.Range) int { return cmp.Compare(a.Start, b.Start) })
	var sampled []cfg.Range
	for _, r := range all {
		if im.hasCycles(r) {
			sampled = append(sampled, r)
		}
	}
	if len(sampled) == 0 {
		return all[:1], nil
	}
	return sampled, nil
}

// hasCycles reports whether some instruction of r has CYCLES samples.
func (im *calcImage) hasCycles(r cfg.Range) bool {
	for addr, per := range im.counts {
		if addr >= r.Start && addr < r.End {
			for _, c := range per {
				if c[alpha.EvCycles] > 0 {
					return true
				}
			}
		}
	}
	return false
}

// analyze runs dcpicalc on procedure name of the image, whose code is r.
func (im *calcImage) analyze(q Query, name string, r cfg.Range) (*ProcReport, error) {
	g, err := im.code.Build(r)
	if err != nil {
		return nil, fmt.Errorf("analysis: calc %s in %s: %w", name, im.rec.Path, err)
	}
	sp, err := NewProcedure(g, q.Static)
	if err != nil {
		return nil, fmt.Errorf("analysis: calc %s in %s: %w", name, im.rec.Path, err)
	}
	prof, err := im.profile(r)
	if err != nil {
		return nil, fmt.Errorf("analysis: calc %s in %s: %w", name, im.rec.Path, err)
	}
	freq, err := EstimateFrequencies(sp, prof, q.Freq)
	if err != nil {
		return nil, fmt.Errorf("analysis: calc %s in %s: %w", name, im.rec.Path, err)
	}
	x, err := Explain(sp, freq, prof, q.Explain)
	if err != nil {
		return nil, fmt.Errorf("analysis: calc %s in %s: %w", name, im.rec.Path, err)
	}
	p := &ProcReport{Procedure: name, Image: im.rec.Path, ImageKey: im.rec.Key, File: im.file.Where, Start: r.Start, End: r.End,
		HasLines: im.file.HasLines(), Hosts: im.nhosts, Periods: map[string]float64{}, Samples: map[string]float64{}, Explanation: x}
	for e := range alpha.NumEvents {
		if prof.Periods[e] > 0 {
			p.Periods[e.String()] = prof.Periods[e]
		}
	}
	for _, c := range prof.Samples {
		for e, v := range c {
			if v != 0 {
				p.Samples[alpha.Event(e).String()] += v
			}
		}
	}
	lastFile, lastLine := "", 0
	p.Text = make([]InsnText, len(x.Insns))
	for i, in := range x.Insns {
		tx := &p.Text[i]
		tx.Insn = disasm.Insn(in.Word, in.PC, im.file.ELF)
		if file, line, ok := im.file.Line(in.PC); ok && (file != lastFile || line != lastLine) {
			tx.File, tx.Line, tx.Source = file, line, im.src.Line(file, line)
			lastFile, lastLine = file, line
		}
	}
	return p, nil
}

// profile is the procedure's Profile: per instruction the samples of
// every event, scaled to one common period per event when the hosts
// differ (see Run).
func (im *calcImage) profile(r cfg.Range) (*Profile, error) {
	prof := &Profile{Samples: map[uint64]*Counts{}}
	var raw, weighted [alpha.NumEvents]float64 // Σ S_h and Σ S_h·P_h
	for addr, per := range im.counts {
		if addr < r.Start || addr >= r.End {
			continue
		}
		for h, c := range per {
			for e, n := range c {
				if n == 0 {
					continue
				}
				if im.periods[h][e] == 0 {
					return nil, fmt.Errorf("%w: %s samples with no known sampling period (give --period %s=N)", analysis.ErrQuery, alpha.Event(e), alpha.Event(e))
				}
				raw[e] += n
				weighted[e] += n * im.periods[h][e]
			}
		}
	}
	for e := range prof.Periods {
		if raw[e] > 0 {
			prof.Periods[e] = weighted[e] / raw[e]
		} else if len(im.periods) == 1 {
			prof.Periods[e] = im.periods[0][e] // sampled, none here
		}
	}
	if raw[alpha.EvCycles] == 0 {
		return nil, fmt.Errorf("%w: no CYCLES samples in [%#x, %#x)", analysis.ErrQuery, r.Start, r.End)
	}
	for addr, per := range im.counts {
		if addr < r.Start || addr >= r.End {
			continue
		}
		c := &Counts{}
		for h, hc := range per {
			for e, n := range hc {
				if n != 0 {
					c[e] += n * im.periods[h][e] / prof.Periods[e]
				}
			}
		}
		prof.Samples[addr] = c
	}
	for addr, l := range im.latency {
		if addr >= r.Start && addr < r.End {
			if prof.LoadLatency == nil {
				prof.LoadLatency = map[uint64]Latency{}
			}
			prof.LoadLatency[addr] = l
		}
	}
	for addr, k := range im.meRetired {
		if addr >= r.Start && addr < r.End {
			if prof.MeRetired == nil {
				prof.MeRetired, prof.MeInterval = map[uint64]float64{}, im.meInterval
			}
			prof.MeRetired[addr] = k
		}
	}
	return prof, nil
}
