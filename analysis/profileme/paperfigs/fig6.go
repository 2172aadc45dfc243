package paperfigs

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"

	"dcpi/analysis/cfg"
	"dcpi/analysis/mepaths"
	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
	"dcpi/internal/svgchart"
	"dcpi/workloads"
)

// Figure 6 of the ProfileMe paper (sec. 5.3): how often the path segment
// that led to a sampled instruction is identified, alone and correctly,
// against the branch history available (1 to 11 conditional branches),
// by three schemes — execution counts (the history ignored: the likeliest
// predecessor at every merge, trace scheduling's way), history bits, and
// history bits with a paired sample's other PC (1 to 50 instructions
// earlier) — intraprocedurally (segments stop at the routine's beginning)
// and interprocedurally (they continue through its call sites). Like the
// paper, the experiment is trace-driven: hwsim's transfer observer (the
// ground truth of every control transfer) gives, at instructions sampled
// at random, the global history register (the last conditional branches'
// directions, user mode) and the true segment; the reconstruction
// (analysis/mepaths) sees only the PC, the bits, the partner's PC and,
// for the count scheme, the run's block and edge counts tallied from the
// same observer (the profile the paper's baseline assumes; ours is exact,
// the best case for that scheme).

// Fig6Workload is one workload of the experiment.
type Fig6Workload struct {
	Name string
	Args []string // nil: the workload's defaults
}

// Fig6Config is the experiment.
type Fig6Config struct {
	Model     string
	Workloads []Fig6Workload
	// Interval is the mean instructions between sampled instructions.
	Interval uint64
	// PairWindow is the largest pair distance (the paper: 50).
	PairWindow int
	Seed       uint64
}

// DefaultFig6 is what dcpi me figure6 runs: the integer workloads of our
// specint-like mix that run as one process (ccdriver forks; server's time
// is mostly formatting and system calls), at sizes that keep the run
// to a minute or so.
func DefaultFig6() Fig6Config {
	return Fig6Config{Model: "ev5", Workloads: []Fig6Workload{
		{"sort", []string{"4000"}},
		{"strproc", []string{"200"}},
		{"hashdb", nil},
		{"recurse", nil},
		{"interp", nil},
	}, Interval: 2999, PairWindow: 50, Seed: 1}
}

// MaxHistory is the longest history the figure uses (the paper: 11).
const MaxHistory = 11

// Fig6Curves are one graph's success rates (0 to 1), index h-1 for h
// history bits: the three schemes (each produces one segment: the counts'
// choice among every segment, among those the history bits leave, and
// among those the partner leaves too); the stricter reading, where the
// bits (and the partner) alone leave exactly the true segment; the share
// of samples whose walk was complete (not stopped at a call it cannot
// follow, nor given up), and of those, the share whose true segment was
// among the candidates (the reconstruction's soundness).
type Fig6Curves struct {
	Counts, History, Pairs     [MaxHistory]float64
	HistoryUnique, PairsUnique [MaxHistory]float64
	Complete, TruthFound       [MaxHistory]float64
}

// Fig6Result is one workload's (or the total's) two graphs.
type Fig6Result struct {
	Workload string
	Samples  int
	// MissingEdges is the samples left out because their true segment
	// (interprocedural, 11 branches) runs through a procedure with an
	// unresolved jump: its graph lacks edges the true path may take.
	MissingEdges int
	Instructions uint64 // user instructions traced
	Intra, Inter Fig6Curves
}

// Figure6 is the figure's data: each workload's and their total (every
// sample weighed alike, as the paper's suite-wide rates).
type Figure6 struct {
	Model     string
	Workloads []Fig6Result
	Total     Fig6Result
}

const (
	enterOther  = iota
	enterCall   // a call, or a tail call into another procedure's entry
	enterReturn // a return
)

// fig6Rec is one block as executed: where control came in from, and
// whether it ended in a conditional branch.
type fig6Rec struct {
	start, end, last uint64
	enter            uint8
	cond             bool
}

// fig6Sample is one sampled instruction: its PC, history, the blocks
// executed before it (oldest first, its own last) far enough back for
// the longest interprocedural segment, and its partner.
type fig6Sample struct {
	pc      uint64
	hist    uint16
	recs    []fig6Rec
	partner uint64
	dist    int
}

// fig6Tracer follows one process's transfers.
type fig6Tracer struct {
	prog    *mepaths.Program
	pid     int
	started bool
	prevTo  uint64
	resume  uint64
	// cur is the procedure and block control is in.
	cur     *cfg.Proc
	rec     fig6Rec
	inRec   bool
	jumped  bool
	enter   uint8
	recs    []fig6Rec // ring
	nrec    int       // records in the ring since the last reset
	hist    uint16
	known   int // valid history bits
	ring    [64]uint64
	nring   int
	left    uint64
	rng     *rand.Rand
	cfg     Fig6Config
	samples []fig6Sample
	instrs  uint64
	// entered and edges are the run's execution counts: blocks entered,
	// and control going from a block's last instruction to a block.
	entered map[uint64]uint64
	edges   map[[2]uint64]uint64
}

const fig6Ring = 1 << 13

func (t *fig6Tracer) Entered(start uint64) uint64 { return t.entered[start] }
func (t *fig6Tracer) Edge(from, to uint64) uint64 { return t.edges[[2]uint64{from, to}] }
func (t *fig6Tracer) reload()                     { t.left = 1 + t.rng.Uint64N(2*t.cfg.Interval-1) }
func (t *fig6Tracer) reset(to uint64) {
	t.prevTo, t.known, t.nrec, t.inRec, t.cur = to, 0, 0, false, nil
}
func (t *fig6Tracer) record(i int) *fig6Rec      { return &t.recs[i%fig6Ring] }
func (t *fig6Tracer) procOf(pc uint64) *cfg.Proc { p, _ := t.prog.Graph(pc); return p }
func (t *fig6Tracer) inCur(pc uint64) bool {
	return t.cur != nil && pc >= t.cur.Start && pc < t.cur.End
}
func (t *fig6Tracer) lastRec() *fig6Rec { return t.record(t.nrec - 1) }
func (t *fig6Tracer) enough(n int) bool { return n <= t.nrec && n <= fig6Ring }
func (t *fig6Tracer) insn(pc uint64) (cfg.Insn, bool) {
	if !t.inCur(pc) {
		return cfg.Insn{}, false
	}
	return t.cur.Insn(pc)
}

// Transfer implements hwsim.TransferObserver.
func (t *fig6Tracer) Transfer(tr *hwsim.Transfer) {
	if t.pid == 0 && tr.Kind == hwsim.TransferUserResume {
		t.pid = tr.PID
	}
	if tr.PID != t.pid {
		return
	}
	switch tr.Kind {
	case hwsim.TransferKernelEntry:
		t.resume = tr.From
	case hwsim.TransferUserResume:
		if !t.started || tr.To != t.resume {
			t.started = true
			t.reset(tr.To)
			t.enter = enterCall // the program's start, or a signal handler's
		}
	case hwsim.TransferUser:
		if !t.started {
			return
		}
		t.run(tr.From)
		in, _ := t.insn(tr.From)
		switch {
		case mepaths.IsCall(in):
			t.enter = enterCall
		case mepaths.IsReturn(in):
			t.enter = enterReturn
		case !t.inCur(tr.To):
			t.enter = enterCall // a tail call (or a branch elsewhere)
		default:
			t.enter = enterOther
		}
		t.jumped = true
		t.prevTo = tr.To
	}
}

// run follows the instructions [prevTo, end] executed in sequence.
func (t *fig6Tracer) run(end uint64) {
	if end < t.prevTo || end-t.prevTo > 1<<22 {
		t.reset(t.prevTo)
		return
	}
	for pc := t.prevTo; pc <= end; pc += 4 {
		t.instrs++
		if !t.inRec || t.jumped || pc >= t.rec.end {
			if !t.inCur(pc) {
				t.cur = t.procOf(pc)
			}
			if t.cur == nil {
				t.reset(pc + 4)
				continue
			}
			b, _ := t.cur.BlockOf(pc)
			blk := t.cur.Blocks[b]
			if t.inRec {
				*t.lastRec() = t.rec
				t.edges[[2]uint64{t.rec.last, pc}]++
			}
			t.entered[pc]++
			enter := t.enter
			if !t.jumped && t.inRec && pc == t.cur.Start {
				enter = enterCall // ran off the previous procedure's end into this one
			}
			t.rec = fig6Rec{start: pc, end: blk.End, enter: enter}
			t.inRec, t.jumped, t.enter = true, false, enterOther
			t.nrec++
		}
		t.rec.last = pc
		if t.left--; t.left == 0 {
			t.reload()
			t.sample(pc)
		}
		if in, _ := t.cur.Insn(pc); mepaths.IsCond(in) {
			t.rec.cond = true
			bit := uint16(0)
			if pc == end {
				bit = 1
			}
			t.hist = t.hist<<1 | bit
			t.known = min(t.known+1, 16)
		}
		t.ring[t.nring%len(t.ring)] = pc
		t.nring++
	}
}

// sample keeps the instruction at pc if its history and the blocks before
// it reach back MaxHistory conditional branches.
func (t *fig6Tracer) sample(pc uint64) {
	if t.known < MaxHistory {
		return
	}
	*t.lastRec() = t.rec
	n, conds := 1, 0
	for conds < MaxHistory {
		if n++; !t.enough(n) {
			return
		}
		if t.record(t.nrec - n).cond {
			conds++
		}
	}
	s := fig6Sample{pc: pc, hist: t.hist, dist: 1 + t.rng.IntN(t.cfg.PairWindow)}
	if s.dist <= t.nring {
		s.partner = t.ring[(t.nring-s.dist)%len(t.ring)]
	}
	for i := t.nrec - n; i < t.nrec; i++ {
		s.recs = append(s.recs, *t.record(i))
	}
	t.samples = append(t.samples, s)
}

// truth is the segment of h branches (mode's) that led to s's
// instruction, as executed: newest block first; a call-like entry into
// a routine ends an intraprocedural one unless it came back through a
// return (then it is a callee's beginning).
func (s *fig6Sample) truth(h int, mode mepaths.Mode) (mepaths.Path, bool) {
	n := len(s.recs)
	path := mepaths.Path{{Start: s.recs[n-1].start, End: s.recs[n-1].end}}
	depth, used := 0, 0
	for i := n - 2; i >= 0; i-- {
		switch s.recs[i+1].enter {
		case enterCall:
			if depth > 0 {
				depth--
			} else if mode == mepaths.Intraprocedural {
				return path, true
			}
		case enterReturn:
			depth++
		}
		r := s.recs[i]
		path = append(path, mepaths.Node{Start: r.start, End: r.end})
		if r.cond {
			if used++; used == h {
				return path, true
			}
		}
	}
	return nil, false
}

// RunFigure6 runs the experiment on every workload.
func RunFigure6(c Fig6Config) (*Figure6, error) {
	if c.Interval < 1 || c.PairWindow < 1 || c.PairWindow > 64 || len(c.Workloads) == 0 {
		return nil, fmt.Errorf("paperfigs: figure 6: interval %d, pair window %d, %d workloads: want >= 1, 1 to 64, at least one",
			c.Interval, c.PairWindow, len(c.Workloads))
	}
	f := &Figure6{Model: c.Model}
	var names []string
	var total fig6Tally
	for i, w := range c.Workloads {
		t, err := traceFig6(c, w, c.Seed+uint64(i))
		if err != nil {
			return nil, err
		}
		var tally fig6Tally
		if err := tally.add(t); err != nil {
			return nil, err
		}
		f.Workloads = append(f.Workloads, tally.result(w.Name))
		total.merge(&tally)
		names = append(names, w.Name)
	}
	f.Total = total.result(strings.Join(names, "+"))
	if f.Total.Samples == 0 {
		return nil, fmt.Errorf("paperfigs: figure 6: no instruction sampled")
	}
	return f, nil
}

// traceFig6 runs one workload under the tracer.
func traceFig6(c Fig6Config, w Fig6Workload, seed uint64) (*fig6Tracer, error) {
	mod, err := alpha.ModelByName(c.Model)
	if err != nil {
		return nil, err
	}
	image, err := workloads.Binary(w.Name)
	if err != nil {
		return nil, err
	}
	path := "/bin/" + w.Name
	im, err := elfimage.Parse(image, path)
	if err != nil {
		return nil, err
	}
	prog, err := mepaths.NewProgram(im)
	if err != nil {
		return nil, err
	}
	hc := hwsim.DefaultConfig()
	hc.CPUs, hc.Model, hc.Timing = 1, mod, false // the path does not depend on timing
	hc.Files = map[string][]byte{path: image}
	hc.Stdout, hc.Stderr = io.Discard, io.Discard
	m, err := hwsim.New(hc)
	if err != nil {
		return nil, err
	}
	t := &fig6Tracer{prog: prog, cfg: c, rng: rand.New(rand.NewPCG(seed, 0x6f16)), recs: make([]fig6Rec, fig6Ring),
		entered: map[uint64]uint64{}, edges: map[[2]uint64]uint64{}}
	t.reload()
	m.SetTransferObserver(t)
	args := w.Args
	if args == nil {
		for _, wl := range workloads.All() {
			if wl.Name == w.Name {
				args = wl.DefaultArgs
			}
		}
	}
	if _, err := m.Spawn(path, append([]string{path}, args...), []string{"PATH=/bin"}); err != nil {
		return nil, err
	}
	if m.Run(400_000_000_000) {
		return nil, fmt.Errorf("paperfigs: %s did not finish", w.Name)
	}
	return t, nil
}

// fig6Tally counts successes per mode, scheme and history length.
type fig6Tally struct {
	samples, skipped           int
	instrs                     uint64
	counts, history, pairs     [2][MaxHistory]int
	historyUnique, pairsUnique [2][MaxHistory]int
	complete, found            [2][MaxHistory]int
}

// missingEdges reports whether path runs through a procedure whose graph
// lacks some edges.
func missingEdges(prog *mepaths.Program, path mepaths.Path) bool {
	for _, n := range path {
		if g, err := prog.Graph(n.Start); err != nil || g.MissingEdges {
			return true
		}
	}
	return false
}

func (y *fig6Tally) add(t *fig6Tracer) error {
	y.instrs = t.instrs
	for _, s := range t.samples {
		if longest, ok := s.truth(MaxHistory, mepaths.Interprocedural); !ok || missingEdges(t.prog, longest) {
			y.skipped++
			continue
		}
		y.samples++
		for mi, mode := range []mepaths.Mode{mepaths.Intraprocedural, mepaths.Interprocedural} {
			for h := 1; h <= MaxHistory; h++ {
				truth, ok := s.truth(h, mode)
				if !ok {
					return fmt.Errorf("paperfigs: figure 6: a sample's blocks do not reach back %d branches", h)
				}
				q := mepaths.Query{PC: s.pc, History: s.hist, Bits: h, Mode: mode, Limit: 64}
				r, err := t.prog.Reconstruct(q)
				if err != nil {
					return err
				}
				is := func(p mepaths.Path) bool { return slices.Equal(p, truth) }
				if !r.Truncated && r.Blocked == 0 {
					y.complete[mi][h-1]++
					if slices.ContainsFunc(r.Paths, is) {
						y.found[mi][h-1]++
					}
				}
				counted, ok, err := t.prog.Likeliest(q, t, nil)
				if err != nil {
					return err
				}
				countsOK := ok && is(counted)
				// choose is a scheme's one segment: the counts' choice
				// among the candidates left, or among all when there were
				// too many to enumerate.
				choose := func(r mepaths.Result) (bool, error) {
					if r.Truncated {
						return countsOK, nil
					}
					p, ok, err := t.prog.Likeliest(q, t, r.Paths)
					return ok && is(p), err
				}
				rp := r
				if s.partner != 0 {
					rp = r.WithPartner(s.pc, s.partner, s.dist)
				}
				hOK, err := choose(r)
				if err != nil {
					return err
				}
				pOK, err := choose(rp)
				if err != nil {
					return err
				}
				for _, c := range []struct {
					ok bool
					n  *[2][MaxHistory]int
				}{{countsOK, &y.counts}, {hOK, &y.history}, {pOK, &y.pairs}} {
					if c.ok {
						c.n[mi][h-1]++
					}
				}
				if p, ok := r.Unique(); ok && is(p) {
					y.historyUnique[mi][h-1]++
				}
				if p, ok := rp.Unique(); ok && is(p) {
					y.pairsUnique[mi][h-1]++
				}
			}
		}
	}
	return nil
}

func (y *fig6Tally) merge(o *fig6Tally) {
	y.samples += o.samples
	y.skipped += o.skipped
	y.instrs += o.instrs
	for m := range 2 {
		for h := range MaxHistory {
			y.counts[m][h] += o.counts[m][h]
			y.history[m][h] += o.history[m][h]
			y.pairs[m][h] += o.pairs[m][h]
			y.historyUnique[m][h] += o.historyUnique[m][h]
			y.pairsUnique[m][h] += o.pairsUnique[m][h]
			y.complete[m][h] += o.complete[m][h]
			y.found[m][h] += o.found[m][h]
		}
	}
}

func (y *fig6Tally) result(name string) Fig6Result {
	r := Fig6Result{Workload: name, Samples: y.samples, MissingEdges: y.skipped, Instructions: y.instrs}
	n := float64(max(y.samples, 1))
	for m, c := range []*Fig6Curves{&r.Intra, &r.Inter} {
		for h := range MaxHistory {
			c.Counts[h] = float64(y.counts[m][h]) / n
			c.History[h] = float64(y.history[m][h]) / n
			c.Pairs[h] = float64(y.pairs[m][h]) / n
			c.HistoryUnique[h] = float64(y.historyUnique[m][h]) / n
			c.PairsUnique[h] = float64(y.pairsUnique[m][h]) / n
			c.Complete[h] = float64(y.complete[m][h]) / n
			c.TruthFound[h] = float64(y.found[m][h]) / float64(max(y.complete[m][h], 1))
		}
	}
	return r
}

// WriteFigure6SVG draws the paper's two graphs from the total: success
// against the history available, intraprocedural and interprocedural,
// three schemes each.
func WriteFigure6SVG(w io.Writer, f *Figure6) error {
	c := svgchart.New()
	t := &f.Total
	for i, g := range []struct {
		name string
		c    *Fig6Curves
	}{{"Intraprocedural", &t.Intra}, {"Interprocedural", &t.Inter}} {
		p := c.Panel(i, g.name, "available branch history (conditional branches)", "identified single correct path (%)",
			svgchart.Axis{Min: 1, Max: MaxHistory}, svgchart.Axis{Min: 0, Max: 100})
		for k, s := range []struct {
			label, color string
			v            *[MaxHistory]float64
		}{{"history bits + paired sampling", "#c33", &g.c.Pairs}, {"history bits", "#36c", &g.c.History}, {"execution counts", "#393", &g.c.Counts}} {
			var pts []svgchart.XY
			for h, v := range s.v {
				pts = append(pts, svgchart.XY{X: float64(h + 1), Y: 100 * v})
			}
			p.Line(pts, s.color)
			for _, v := range pts {
				p.Dot(v, s.color)
			}
			p.Label(svgchart.XY{X: 1.3, Y: 22 - 7*float64(k)}, s.label, s.color) // a legend, bottom left
		}
	}
	title := fmt.Sprintf("ProfileMe Figure 6: path reconstruction on %s (%s), %d sampled instructions", t.Workload, f.Model, t.Samples)
	return c.Write(w, title, fmt.Sprintf("true segment among the history candidates at 11 bits: intra %.1f%%, inter %.1f%%; ground truth: hwsim's transfer observer",
		100*t.Intra.TruthFound[MaxHistory-1], 100*t.Inter.TruthFound[MaxHistory-1]))
}

// WriteSVG draws the figure (WriteFigure6SVG).
func (f *Figure6) WriteSVG(w io.Writer) error { return WriteFigure6SVG(w, f) }

// WriteText summarizes the figure for dcpi me figure6: per workload and
// in total, the shares of samples each history length resolves, as
// tables.
func (f *Figure6) WriteText(w io.Writer) error {
	for _, r := range append(f.Workloads, f.Total) {
		fmt.Fprintf(w, "Figure 6: %s on %s, %d sampled instructions (%d more left out: their true segment runs through a procedure with unresolved jumps)\n",
			r.Workload, f.Model, r.Samples, r.MissingEdges)
		for _, g := range []struct {
			name string
			c    *Fig6Curves
		}{{"intraprocedural", &r.Intra}, {"interprocedural", &r.Inter}} {
			fmt.Fprintf(w, "  %s\n", g.name)
			fmt.Fprintln(w, "   bits  counts  history  hist+pairs | bits alone  +pairs | walks complete  truth among them")
			for h := range MaxHistory {
				fmt.Fprintf(w, "   %4d  %5.1f%%  %6.1f%%  %9.1f%% | %9.1f%%  %5.1f%% | %13.1f%%  %6.1f%%\n", h+1,
					100*g.c.Counts[h], 100*g.c.History[h], 100*g.c.Pairs[h], 100*g.c.HistoryUnique[h], 100*g.c.PairsUnique[h],
					100*g.c.Complete[h], 100*g.c.TruthFound[h])
			}
		}
	}
	return nil
}
