// Package values owns the value-sampling tools' analysis (dcpi values):
// it turns the stored Gibbons-Matias hot lists (wire.ValueList, merged
// over the hosts and epochs a query selects) into the load-latency
// listing, the frequent values per instruction and the semi-invariant
// finder of Burrows et al., each row beside DCPI's CYCLES samples at the
// same PC. It reads through Source and symbolizes with analysis; it
// computes nothing the lists do not say. Run is dcpi values's one call:
// Options add to the Query what the command knows (the periods, where the
// database is, why a selection is empty), and the Result, the report or
// its accuracy against the simulator's truth (AccuracyPlot), prints
// itself with WriteText or WriteJSON.
package values

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"dcpi/analysis/calc"
	"dcpi/analysis/symbolize"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/alpha/disasm"
	"dcpi/internal/hotlist"
	"dcpi/node/valuemod"
	"dcpi/storage"
	"dcpi/wire"
)

// Source is where the hot lists and the interpreter's accounting come
// from (*storage.DB).
type Source interface {
	ValueLists(ctx context.Context, q storage.ValueQuery) ([]wire.ValueList, error)
	ValueTotals(ctx context.Context, q storage.ValueQuery) ([]string, wire.ValueStats, error)
}

// View is what a report shows.
type View int

// Views.
const (
	// Latency: loads' latency hot lists binned by hierarchy level.
	Latency View = iota
	// Frequent: each instruction's most frequent values of every type.
	Frequent
	// SemiInvariant: instructions whose operand or result mostly holds
	// one value (at least SemiInvariantShare of the samples), ranked by
	// that share weighted by DCPI's CYCLES samples there (the time a
	// specialization could save).
	SemiInvariant
)

// SemiInvariantShare is the least estimated share of its top value that
// makes an operand or result semi-invariant in the SemiInvariant view:
// below it a hot instruction with scattered values would outrank every
// truly semi-invariant one (simhost's TestSemiInvariantMatchesGroundTruth).
const SemiInvariantShare = 0.5

// Query selects a report.
type Query struct {
	View   View
	Epochs []uint64 // none: every epoch
	Hosts  []string // none: the fleet
	Images []wire.ImageKey
	Limit  int // rows (0: all)
	// MinSamples drops lists with fewer samples (N).
	MinSamples uint64
	Files      symbolize.ImageFinder // nil: no instruction text
	// Periods are each host's events per sample, as
	// calc.Query.Periods. With them and Files, the latency view
	// runs dcpicalc (calc.Run) on the procedures of its rows and
	// shows DCPI's estimates beside each load: its executions and its
	// CPI, the cycles it spends at the head of the issue queue per
	// execution.
	Periods map[string]map[uint8]float64
	// Me, MeInterval and Values are passed to dcpicalc (calc.Query's):
	// ProfileMe's retire counts and the load latencies of these very
	// lists then replace or bound its frequency heuristic.
	Me         calc.MeSource
	MeInterval float64
	Values     calc.ValueSource
	// Truth, when set, is hwsim's value truth of the same run by image
	// path (dcpi profile --values-truth): each row then carries the true
	// figures beside the estimates, labelled as truth (RowTruth).
	Truth map[string]*alpha.ValueTruth
}

// Level is a memory-hierarchy level a load latency bins into.
type Level int

// The 21164's levels.
const (
	LevelDcache Level = iota
	LevelScache
	LevelBcache
	LevelMemory
	NumLevels
)

var levelNames = [NumLevels]string{"dcache", "scache", "bcache", "memory"}

func (l Level) String() string { return levelNames[l] }

// levelLatency is each level's latency as the interpreter measures it:
// the load-to-use latencies of hwsim/timing's default 21164 (D-cache 2,
// S-cache 8, B-cache 30, memory 142 cycles) plus the cycle the load's
// issue takes. dtbMiss is what a DTB miss adds (35 cycles), so a latency
// is ambiguous only where a level plus a DTB miss would land on another
// level, which none of the defaults does.
var levelLatency = [NumLevels]uint64{3, 9, 31, 143}

const dtbMiss = 35

// BinLatency returns the level a measured latency of cycles bins into:
// the level whose latency, with or without a DTB miss, is nearest (ties
// to the faster level). A full miss-address file's replays add a little
// more, which the nearest level absorbs.
func BinLatency(cycles uint64) Level {
	best, bestD := LevelDcache, ^uint64(0)
	for l, lat := range levelLatency {
		for _, c := range []uint64{lat, lat + dtbMiss} {
			d := max(c, cycles) - min(c, cycles)
			if d < bestD {
				best, bestD = Level(l), d
			}
		}
	}
	return best
}

// Value is one listed value with its estimated count (τ·c) and share of
// the list's samples.
type Value struct {
	Value    string  `json:"value"`
	Raw      uint64  `json:"raw"`
	Estimate uint64  `json:"estimate"`
	Share    float64 `json:"share"`
	// Error is one standard deviation of the estimate, as a share:
	// sqrt(c)·τ/N (the count c is binomial).
	Error float64 `json:"error"`
}

// Row is one instruction's hot list of one value type.
type Row struct {
	Image     string  `json:"image"`
	ImageKey  string  `json:"image_key"`
	Offset    uint64  `json:"offset"`
	PC        uint64  `json:"pc"`
	Procedure string  `json:"procedure,omitempty"`
	Insn      string  `json:"insn,omitempty"`
	Kind      string  `json:"kind"`
	Samples   uint64  `json:"samples"`     // n: values offered to the list
	P         float64 `json:"probability"` // 1/τ: an offer's chance of being counted
	NV        int     `json:"nv"`          // values listed
	Values    []Value `json:"values"`
	// Levels are, for a latency list, the estimated shares of its samples
	// at each level (LevelDcache...); the rest of the samples fell to
	// values the list did not keep.
	Levels []float64 `json:"levels,omitempty"`
	// SameLine marks a load that follows, within six instructions of
	// its block, a load from the same base register within a D-cache
	// line's reach: the interpreter ran the earlier load to completion,
	// so this one measures a D-cache hit where natively it waits for the
	// fill in flight (docs/values.md, Limits). Needs Query.Files.
	SameLine bool   `json:"same_line_follower,omitempty"`
	Cycles   uint64 `json:"cycles"` // DCPI's CYCLES samples at this PC
	// Executions and CPI are dcpicalc's estimates at this PC (the
	// latency view, with Query.Periods): its frequency F·P and S/F, the
	// cycles at the head of the issue queue per execution. CPIKnown is
	// false when dcpicalc did not analyze the procedure or could not
	// estimate the instruction's frequency.
	Executions float64 `json:"executions,omitempty"`
	CPI        float64 `json:"cpi,omitempty"`
	CPIKnown   bool    `json:"cpi_known"`
	// CPILow: the frequency behind Executions and CPI is low confidence
	// (dcpicalc's block header says why); the text marks the CPI "?".
	CPILow bool `json:"cpi_low_confidence,omitempty"`
	// Score ranks the semi-invariant view: the top value's share times
	// Cycles.
	Score float64 `json:"score,omitempty"`
	// Truth is the simulator's ground truth at this PC (Query.Truth), nil
	// without it: what the estimates above estimate, never a measurement.
	Truth *RowTruth `json:"truth,omitempty"`
}

// RowTruth is hwsim's value truth at a row's PC.
type RowTruth struct {
	// Executions are the instruction's executions (a load's loads).
	Executions uint64 `json:"executions"`
	// Levels are a load's true shares of its executions per level.
	Levels []float64 `json:"levels,omitempty"`
	// Shares are the true shares of the row's listed values, parallel to
	// Row.Values; -1 where the truth has no exact count of the value (it
	// was not among the first alpha.TruthValues distinct values).
	Shares []float64 `json:"shares,omitempty"`
}

// Stats is value sampling's conservation counts (wire.ValueStats, whose
// field names are a wire message's) as the report's JSON names them.
type Stats struct {
	Interrupts   uint64            `json:"interrupts"`
	NoContext    uint64            `json:"no_context"`
	Completed    uint64            `json:"completed"`
	GaveUp       map[string]uint64 `json:"gave_up"`
	Steps        uint64            `json:"steps"` // instructions interpreted
	Values       uint64            `json:"values"`
	TableFull    uint64            `json:"table_full"`
	Unattributed uint64            `json:"unattributed"`
}

// Report is a dcpi values report.
type Report struct {
	View    string   `json:"view"`
	Modules []string `json:"modules"`
	Stats   Stats    `json:"stats"`
	Rows    []Row    `json:"rows"`
	// CPINote says why DCPI's CPI is missing from rows (dcpicalc's
	// error for an image), "" when nothing went wrong.
	CPINote string `json:"cpi_note,omitempty"`
}

// Build reads the lists q selects from src and symbolizes them with sym
// (which also supplies the CYCLES profile).
func Build(ctx context.Context, src Source, sym *symbolize.Symbolizer, q Query) (*Report, error) {
	vq := storage.ValueQuery{Epochs: q.Epochs, Hosts: q.Hosts}
	lists, err := src.ValueLists(ctx, vq)
	if err != nil {
		return nil, err
	}
	mods, stats, err := src.ValueTotals(ctx, vq)
	if err != nil {
		return nil, err
	}
	rep := &Report{View: [...]string{"latency", "frequent", "semiinvariant"}[q.View], Modules: mods, Stats: Stats(stats)}
	cycles := map[wire.ImageKey]map[uint64]uint64{}
	files := map[wire.ImageKey]*symbolize.ImageFile{}
	for _, l := range lists {
		kind := valuemod.Kind(l.Kind)
		switch {
		case len(q.Images) > 0 && !slices.Contains(q.Images, l.Image),
			l.List.N < q.MinSamples,
			q.View == Latency && kind != valuemod.KindLatency,
			q.View != Latency && kind == valuemod.KindLatency:
			continue
		}
		row, err := buildRow(ctx, sym, q, l, cycles, files)
		if err != nil {
			return nil, err
		}
		if q.View == SemiInvariant {
			if len(row.Values) == 0 || kind == valuemod.KindLatency || row.Values[0].Share < SemiInvariantShare {
				continue
			}
			row.Score = row.Values[0].Share * float64(row.Cycles)
		}
		rep.Rows = append(rep.Rows, row)
	}
	switch q.View {
	case SemiInvariant:
		slices.SortStableFunc(rep.Rows, func(a, b Row) int { return cmp.Compare(b.Score, a.Score) })
	default:
		slices.SortStableFunc(rep.Rows, func(a, b Row) int {
			return cmp.Or(cmp.Compare(b.Cycles, a.Cycles), cmp.Compare(b.Samples, a.Samples))
		})
	}
	if q.Limit > 0 && len(rep.Rows) > q.Limit {
		rep.Rows = rep.Rows[:q.Limit]
	}
	if q.View == Latency && q.Periods != nil && q.Files != nil {
		rep.CPINote = addCPI(ctx, sym, q, rep.Rows)
	}
	return rep, nil
}

// addCPI fills the rows' Executions and CPI from dcpicalc, run once per
// image on the procedures of the rows with CYCLES samples, and returns
// what went wrong, if anything: a procedure dcpicalc refuses leaves its
// rows without a CPI rather than failing the report.
func addCPI(ctx context.Context, sym *symbolize.Symbolizer, q Query, rows []Row) string {
	procs := map[string][]string{} // by image path
	for _, r := range rows {
		if r.Cycles > 0 && r.Image != "" && r.Procedure != "" && r.Procedure != symbolize.UnknownProcedure &&
			!slices.Contains(procs[r.Image], r.Procedure) {
			procs[r.Image] = append(procs[r.Image], r.Procedure)
		}
	}
	type at struct {
		image string
		pc    uint64
	}
	est := map[at]calc.InsnExplanation{}
	period := map[at]float64{}
	var notes []string
	for _, image := range slices.Sorted(maps.Keys(procs)) {
		rep, err := calc.Run(ctx, sym, calc.Query{Filter: storage.Query{Epochs: q.Epochs, Hosts: q.Hosts},
			ImagePaths: []string{image}, Procedures: procs[image], Periods: q.Periods, Files: q.Files,
			Me: q.Me, MeInterval: q.MeInterval, Values: q.Values})
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s: %v", image, err))
			continue
		}
		for _, p := range rep.Procedures {
			if p.Explanation == nil {
				continue
			}
			for _, in := range p.Explanation.Insns {
				est[at{p.Image, in.PC}] = in
				period[at{p.Image, in.PC}] = p.Periods[alpha.EvCycles.String()]
			}
		}
	}
	for i := range rows {
		k := at{rows[i].Image, rows[i].PC}
		in, ok := est[k]
		if !ok || !in.Known || in.F <= 0 {
			continue
		}
		rows[i].Executions, rows[i].CPI, rows[i].CPIKnown = in.F*period[k], in.CPI, true
		rows[i].CPILow = in.Confidence <= calc.Low
	}
	return strings.Join(notes, "; ")
}

func buildRow(ctx context.Context, sym *symbolize.Symbolizer, q Query, l wire.ValueList, cycles map[wire.ImageKey]map[uint64]uint64, files map[wire.ImageKey]*symbolize.ImageFile) (Row, error) {
	kind := valuemod.Kind(l.Kind)
	row := Row{ImageKey: l.Image.String(), Offset: l.Offset, Kind: kind.String(), Samples: l.List.N,
		P: 1 / float64(l.List.Tau()), NV: len(l.List.Entries)}
	rec, err := sym.Image(ctx, l.Image)
	if err != nil {
		return row, err
	}
	var word uint32
	haveWord := false
	if rec != nil {
		row.Image, row.PC = rec.Path, rec.Base+l.Offset
		if t, err := sym.Table(ctx, l.Image); err == nil && t != nil {
			if s, _, ok := t.Lookup(l.Offset); ok {
				row.Procedure = s.Name
			}
		}
		if q.Files != nil {
			f, seen := files[l.Image]
			if !seen {
				if data, where, err := q.Files.FindImage(ctx, rec); err == nil {
					f, _ = symbolize.OpenImageFile(rec, data, where)
				}
				files[l.Image] = f
			}
			if f != nil {
				if word, haveWord = f.Word(row.PC); haveWord {
					row.Insn = strings.Replace(disasm.Insn(word, row.PC, nil), "\t", " ", 1)
				}
				row.SameLine = kind == valuemod.KindLatency && SameLineFollower(f.Word, row.PC)
			}
		}
	}
	byPC, ok := cycles[l.Image]
	if !ok {
		byPC = map[uint64]uint64{}
		err := sym.Profile(ctx, storage.Query{Epochs: q.Epochs, Hosts: q.Hosts, Events: []uint8{uint8(alpha.EvCycles)}, Images: []wire.ImageKey{l.Image}},
			func(_ wire.ImageKey, off uint64, _ uint8, _ string, n uint64) error {
				byPC[off] += n
				return nil
			})
		if err != nil {
			return row, err
		}
		cycles[l.Image] = byPC
	}
	row.Cycles = byPC[l.Offset]
	row.Values = shares(&l.List, kind, word)
	if kind == valuemod.KindLatency {
		row.Levels = make([]float64, NumLevels)
		for _, v := range row.Values {
			row.Levels[BinLatency(v.Raw)] += v.Share
		}
	}
	if g := q.Truth[row.Image]; g != nil && row.Image != "" {
		row.Truth = rowTruth(g.PCs[row.PC], kind, row.Values)
	}
	return row, nil
}

// SameLineFollower reports whether the load at pc follows a load from
// the same base register whose displacement is within the same 32-byte
// D-cache line's reach, the base unchanged in between: within the six
// instructions before it, or, in a loop that pc's block is the head of,
// among the instructions after it up to the loop's backward branch (they
// run just before pc's next execution). The interpreter runs every
// instruction to completion, so the earlier load has always filled the
// line and the follower measures a D-cache hit, where natively it waits
// for the fill in flight — and the ground truth, which reads levels from
// the load's own miss events, counts that wait as a D-cache hit too
// (docs/values.md, Limits): dcpi values marks such loads and the
// accuracy tests leave them out. read reads an instruction word.
func SameLineFollower(read func(pc uint64) (uint32, bool), pc uint64) bool {
	word := func(a uint64) (alpha.Decoded, bool) {
		w, ok := read(a)
		if !ok {
			return alpha.Decoded{}, false
		}
		return alpha.Decode(w, alpha.EV67), true
	}
	d, ok := word(pc)
	if !ok || !alpha.ClassOf(d.Op).Load {
		return false
	}
	writesBase := func(p alpha.Decoded) bool {
		cl := alpha.ClassOf(p.Op)
		return (cl.Writes == 'a' && p.Ra == d.Rb) || (cl.Writes == 'c' && p.Rc == d.Rb)
	}
	// A load that writes the base register it reads (a list walk's
	// ldq v0,0(v0)) leaves pc the next node's line, not its own.
	sameLine := func(p alpha.Decoded) bool {
		return alpha.ClassOf(p.Op).Load && p.Rb == d.Rb && !writesBase(p) &&
			math.Abs(float64(int64(p.Imm)-int64(d.Imm))) < 32
	}
	for back := uint64(1); back <= 6 && back*4 <= pc; back++ {
		p, ok := word(pc - 4*back)
		if !ok {
			return false
		}
		if sameLine(p) {
			return true
		}
		if writesBase(p) {
			return false
		}
		if cl := alpha.ClassOf(p.Op); cl.Branch || cl.Jump {
			break
		}
	}
	// A loop closing on pc's block: find its backward branch within
	// eight instructions, then look between pc and it, last first.
	var body []alpha.Decoded
	for fwd := uint64(1); fwd <= 8; fwd++ {
		a := pc + 4*fwd
		p, ok := word(a)
		if !ok {
			return false
		}
		cl := alpha.ClassOf(p.Op)
		if cl.Jump {
			return false
		}
		if cl.Branch {
			target := a + 4 + uint64(int64(p.Imm))
			if target > pc || pc-target > 6*4 {
				continue // a forward exit or another loop: not this one's edge
			}
			for t := target; t < pc; t += 4 {
				if q, ok := word(t); !ok || writesBase(q) {
					return false // the base changes on the way back to pc
				}
			}
			for i := len(body) - 1; i >= 0; i-- {
				if sameLine(body[i]) {
					return true
				}
				if writesBase(body[i]) {
					return false
				}
			}
			return false
		}
		body = append(body, p)
	}
	return false
}

// rowTruth is pv's truth for a row of kind listing values; nil if the
// truth has nothing at the PC.
func rowTruth(pv *alpha.PCValues, kind valuemod.Kind, values []Value) *RowTruth {
	if pv == nil {
		return nil
	}
	var h *alpha.Histogram
	switch kind {
	case valuemod.KindLatency:
		var n uint64
		for _, c := range pv.Levels {
			n += c
		}
		if n == 0 {
			return nil
		}
		t := &RowTruth{Executions: n, Levels: make([]float64, NumLevels)}
		for lv, c := range pv.Levels {
			t.Levels[lv] = float64(c) / float64(n)
		}
		h = &pv.Latency
		t.Shares = truthShares(h, values)
		return t
	case valuemod.KindResult:
		h = &pv.Result
	case valuemod.KindOperandA:
		h = &pv.OperandA
	case valuemod.KindOperandB:
		h = &pv.OperandB
	default:
		return nil
	}
	if h.Total() == 0 {
		return nil
	}
	return &RowTruth{Executions: h.Total(), Shares: truthShares(h, values)}
}

func truthShares(h *alpha.Histogram, values []Value) []float64 {
	out := make([]float64, len(values))
	total := float64(h.Total())
	for i, v := range values {
		out[i] = -1
		if c, ok := h.Count(v.Raw); ok && total > 0 {
			out[i] = float64(c) / total
		}
	}
	return out
}

// shares lists l's values by estimated count, most first, with their
// shares of the list's samples.
func shares(l *hotlist.List, kind valuemod.Kind, word uint32) []Value {
	out := make([]Value, 0, len(l.Entries))
	n := float64(l.N)
	for _, e := range l.Entries {
		est := e.Count << l.Shift
		out = append(out, Value{Value: format(kind, word, e.Value), Raw: e.Value, Estimate: est,
			Share: float64(est) / n, Error: math.Sqrt(float64(e.Count)) * float64(l.Tau()) / n})
	}
	slices.SortStableFunc(out, func(a, b Value) int { return cmp.Or(cmp.Compare(b.Estimate, a.Estimate), cmp.Compare(a.Raw, b.Raw)) })
	return out
}

func format(kind valuemod.Kind, word uint32, v uint64) string {
	if kind == valuemod.KindLatency {
		return fmt.Sprint(v)
	}
	return valuemod.FormatRegister(kind, word, v)
}
