package mefig

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"

	"dcpi/analysis/cfg"
	"dcpi/analysis/mepaths"
	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
	"dcpi/workloads"
)

// Figure 6 of the ProfileMe paper (sec. 5.3): how often the path that led
// to a sampled instruction is reconstructed, exactly and alone, from its
// PC and its path-history bits (1 to 11 of them), and from a paired
// sample's other PC too, against the pair's distance. Like the paper, the
// experiment is trace-driven: hwsim's transfer observer (the oracle's
// ground truth of every control transfer) gives, at instructions sampled
// at random, both the history register's value (the last conditional
// branches' directions, user mode only) and the true path; reconstruction
// (analysis/mepaths) sees only the PC, the bits and the partner's PC.

// Fig6Config is the experiment.
type Fig6Config struct {
	Model    string
	Workload string
	Args     []string
	// Interval is the mean instructions between sampled instructions.
	Interval uint64
	// PairWindow is the largest pair distance (the paper: 50), PairBits
	// the history bits used in the distance panel.
	PairWindow int
	PairBits   int
	Seed       uint64
}

// DefaultFig6 is what dcpi me figure6 runs.
func DefaultFig6() Fig6Config {
	return Fig6Config{Model: "ev5", Workload: "sort", Args: []string{"4000"}, Interval: 499, PairWindow: 50, PairBits: 4, Seed: 1}
}

// Figure6 is the figure's data: success rates (0 to 1) by history bits
// (index 0 is no bits: the PC alone) with history alone and with the
// partner, and by pair distance bucket at PairBits bits.
type Figure6 struct {
	Model, Workload string
	Samples         int
	// TruthFound is the share of samples whose true path is among the
	// candidates at 11 bits: the reconstruction's soundness.
	TruthFound   float64
	History      [12]float64
	WithPairs    [12]float64
	PairBits     int
	Distances    []int     // bucket upper bounds
	ByDistance   []float64 // success with the partner at PairBits bits
	HistoryAtPB  float64   // success without the partner at PairBits bits, for comparison
	Ambiguous11  float64   // share with more than one candidate at 11 bits
	Instructions uint64    // user instructions traced
	// MissingEdges is the samples left out because their procedure has
	// an unresolved jump: its graph lacks edges the true path may take.
	MissingEdges int
}

// fig6Sample is one sampled instruction: its procedure, PC, history,
// true path (newest block first) and the 50 instructions before it.
type fig6Sample struct {
	g       *mepaths.Graph
	pc      uint64
	hist    uint16
	truth   mepaths.Path
	partner uint64
	dist    int
}

type fig6Frame struct {
	g      *mepaths.Graph
	prefix []int // blocks of the current acyclic path prefix, oldest first
	valid  bool  // the prefix's start was seen (a call or a backedge)
	jumped bool  // control just branched within the procedure (to any block, itself included)
}

// fig6Tracer follows one process's transfers.
type fig6Tracer struct {
	code    *cfg.Code
	graphs  map[uint64]*mepaths.Graph
	pid     int
	started bool
	prevTo  uint64
	resume  uint64
	stack   []fig6Frame
	hist    uint16
	known   int // valid history bits
	ring    [64]uint64
	nring   int
	left    uint64
	rng     *rand.Rand
	cfg     Fig6Config
	samples []fig6Sample
	skipped int // samples in procedures with unresolved jumps
	instrs  uint64
}

func (t *fig6Tracer) graph(pc uint64) *mepaths.Graph {
	r, err := t.code.At(pc)
	if err != nil {
		return nil
	}
	if g, ok := t.graphs[r.Start]; ok {
		return g
	}
	var g *mepaths.Graph
	if p, err := t.code.Build(r); err == nil {
		g = mepaths.NewGraph(p)
	}
	t.graphs[r.Start] = g
	return g
}

func (t *fig6Tracer) reset(to uint64) {
	t.stack, t.prevTo, t.known = t.stack[:0], to, 0
}

func (t *fig6Tracer) reload() {
	t.left = 1 + t.rng.Uint64N(2*t.cfg.Interval-1)
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
		}
	case hwsim.TransferUser:
		if !t.started {
			return
		}
		t.run(tr.From)
		t.transfer(tr.From, tr.To)
		t.prevTo = tr.To
	}
}

// run follows the instructions [prevTo, end] executed in sequence.
func (t *fig6Tracer) run(end uint64) {
	if end < t.prevTo || end-t.prevTo > 1<<22 {
		t.reset(t.prevTo)
		return
	}
	var g *mepaths.Graph
	for pc := t.prevTo; pc <= end; pc += 4 {
		t.instrs++
		if g == nil || pc < g.Proc.Start || pc >= g.Proc.End {
			if g = t.graph(pc); g == nil {
				t.known = 0
				t.stack = t.stack[:0]
				continue
			}
			if n := len(t.stack); n == 0 || t.stack[n-1].g != g {
				t.stack = append(t.stack[:0], fig6Frame{g: g}) // entered without a call seen
			}
		}
		f := &t.stack[len(t.stack)-1]
		b, _ := g.Proc.BlockOf(pc)
		if n := len(f.prefix); n == 0 || f.prefix[n-1] != b || f.jumped {
			f.jumped = false
			if n > 0 && g.IsBack(f.prefix[n-1], b) {
				// A backedge, taken or fallen through (a rotated loop's
				// body falls into its test): a new path prefix.
				f.prefix, f.valid = f.prefix[:0], true
			}
			f.prefix = append(f.prefix, b)
		}
		if t.left--; t.left == 0 {
			t.reload()
			if !f.valid || t.known < 11 {
				// no sample: the path's start or the history is unknown
			} else if g.Proc.MissingEdges {
				t.skipped++ // the graph lacks edges the truth may take
			} else {
				d := 1 + t.rng.IntN(t.cfg.PairWindow)
				s := fig6Sample{g: g, pc: pc, hist: t.hist, dist: d}
				if d <= t.nring {
					s.partner = t.ring[(t.nring-d)%len(t.ring)]
				}
				s.truth = make(mepaths.Path, len(f.prefix))
				for i, blk := range f.prefix {
					s.truth[len(f.prefix)-1-i] = blk
				}
				t.samples = append(t.samples, s)
			}
		}
		if in, _ := g.Proc.Insn(pc); mepaths.IsCond(in) {
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

// transfer follows control from from to to: a call starts a frame, a
// return ends one, a backedge starts a new path prefix.
func (t *fig6Tracer) transfer(from, to uint64) {
	if len(t.stack) == 0 {
		return
	}
	f := &t.stack[len(t.stack)-1]
	in, _ := f.g.Proc.Insn(from)
	switch {
	case mepaths.IsCall(in):
		if g := t.graph(to); g != nil && len(t.stack) < 4096 {
			t.stack = append(t.stack, fig6Frame{g: g, valid: to == g.Proc.Start || slices.Contains(g.Proc.Entries, to)})
		} else {
			t.stack = t.stack[:0]
		}
	case in.Dec.Op == alpha.OpJMP && (in.Dec.Imm>>14)&3 == 2:
		t.stack = t.stack[:len(t.stack)-1]
	default:
		if to >= f.g.Proc.Start && to < f.g.Proc.End {
			f.jumped = true // run sees the edge (and a backedge, a self-loop's too)
			return
		}
		if g := t.graph(to); g != nil {
			*f = fig6Frame{g: g, valid: to == g.Proc.Start}
		} else {
			t.stack = t.stack[:0]
		}
	}
}

// RunFigure6 runs the experiment.
func RunFigure6(c Fig6Config) (*Figure6, error) {
	t, err := traceFig6(c)
	if err != nil {
		return nil, err
	}
	return fig6Of(t, c)
}

// traceFig6 runs the workload under the tracer.
func traceFig6(c Fig6Config) (*fig6Tracer, error) {
	if c.Interval < 1 || c.PairWindow < 1 || c.PairWindow > 64 || c.PairBits < 0 || c.PairBits > 11 {
		return nil, fmt.Errorf("mefig: figure 6: interval %d, pair window %d, pair bits %d: want >= 1, 1 to 64, 0 to 11", c.Interval, c.PairWindow, c.PairBits)
	}
	mod, err := alpha.ModelByName(c.Model)
	if err != nil {
		return nil, err
	}
	image, err := workloads.Binary(c.Workload)
	if err != nil {
		return nil, err
	}
	path := "/bin/" + c.Workload
	im, err := elfimage.Parse(image, path)
	if err != nil {
		return nil, err
	}
	code, err := cfg.NewCode(im, cfg.Options{})
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
	t := &fig6Tracer{code: code, graphs: map[uint64]*mepaths.Graph{}, cfg: c, rng: rand.New(rand.NewPCG(c.Seed, 0x6f16))}
	t.reload()
	m.SetTransferObserver(t)
	args := c.Args
	if args == nil {
		for _, w := range workloads.All() {
			if w.Name == c.Workload {
				args = w.DefaultArgs
			}
		}
	}
	if _, err := m.Spawn(path, append([]string{path}, args...), []string{"PATH=/bin"}); err != nil {
		return nil, err
	}
	if m.Run(400_000_000_000) {
		return nil, fmt.Errorf("mefig: %s did not finish", c.Workload)
	}
	return t, nil
}

func fig6Of(t *fig6Tracer, c Fig6Config) (*Figure6, error) {
	f := &Figure6{Model: c.Model, Workload: c.Workload, Samples: len(t.samples), PairBits: c.PairBits, Instructions: t.instrs,
		MissingEdges: t.skipped}
	if len(t.samples) == 0 {
		return nil, fmt.Errorf("mefig: figure 6: no instruction sampled in %s", c.Workload)
	}
	const buckets = 10
	width := (c.PairWindow + buckets - 1) / buckets
	byDist, nDist := make([]int, buckets), make([]int, buckets)
	var found, ambiguous, histPB int
	var hist, pairs [12]int
	for _, s := range t.samples {
		for bits := 0; bits <= 11; bits++ {
			for _, partner := range []uint64{0, s.partner} {
				r, err := s.g.Reconstruct(mepaths.Query{PC: s.pc, History: s.hist, Bits: bits, Partner: partner, Limit: 256})
				if err != nil {
					return nil, err
				}
				p, ok := r.Unique()
				ok = ok && slices.Equal(p, s.truth)
				if partner == 0 {
					if ok {
						hist[bits]++
					}
					if bits == 11 {
						if !r.Truncated && slices.ContainsFunc(r.Paths, func(p mepaths.Path) bool { return slices.Equal(p, s.truth) }) {
							found++
						}
						if r.Truncated || len(r.Paths) > 1 {
							ambiguous++
						}
					}
					if bits == c.PairBits && ok {
						histPB++
					}
					continue
				}
				if ok {
					pairs[bits]++
				}
				if bits == c.PairBits {
					k := min((s.dist-1)/width, buckets-1)
					nDist[k]++
					if ok {
						byDist[k]++
					}
				}
			}
		}
	}
	n := float64(len(t.samples))
	for i := range hist {
		f.History[i], f.WithPairs[i] = float64(hist[i])/n, float64(pairs[i])/n
	}
	f.TruthFound, f.Ambiguous11, f.HistoryAtPB = float64(found)/n, float64(ambiguous)/n, float64(histPB)/n
	for k := range buckets {
		f.Distances = append(f.Distances, min((k+1)*width, c.PairWindow))
		if nDist[k] > 0 {
			f.ByDistance = append(f.ByDistance, float64(byDist[k])/float64(nDist[k]))
		} else {
			f.ByDistance = append(f.ByDistance, 0)
		}
	}
	return f, nil
}

// WriteFigure6SVG draws the two panels: success against history bits
// (history alone, with the partner), and against pair distance.
func WriteFigure6SVG(w io.Writer, f *Figure6) error {
	c := newChart()
	left := c.panel(0, "path reconstructed (one path, the true one)", "history bits (conditional branches)", "success (%)",
		axis{min: 0, max: 11}, axis{min: 0, max: 100})
	var h, p []xy
	for i := range f.History {
		h = append(h, xy{float64(i), 100 * f.History[i]})
		p = append(p, xy{float64(i), 100 * f.WithPairs[i]})
	}
	left.line(h, "#36c")
	left.line(p, "#c33")
	for i := range h {
		left.dot(h[i], "#36c")
		left.dot(p[i], "#c33")
	}
	left.label(h[len(h)-1], "history bits", "#36c")
	left.label(xy{p[len(p)-1].x - 3, p[len(p)-1].y + 6}, "history bits + pairs", "#c33")
	right := c.panel(1, fmt.Sprintf("with the partner, %d history bits", f.PairBits), "pair distance (instructions, bucket's upper bound)", "success (%)",
		axis{min: 0, max: float64(f.Distances[len(f.Distances)-1])}, axis{min: 0, max: 100})
	var d []xy
	for i, v := range f.ByDistance {
		d = append(d, xy{float64(f.Distances[i]), 100 * v})
	}
	right.line(d, "#c33")
	for _, v := range d {
		right.dot(v, "#c33")
	}
	right.line([]xy{{0, 100 * f.HistoryAtPB}, {float64(f.Distances[len(f.Distances)-1]), 100 * f.HistoryAtPB}}, "#36c")
	right.label(xy{1, 100*f.HistoryAtPB + 3}, "history alone", "#36c")
	title := fmt.Sprintf("ProfileMe Figure 6: %s on %s, %d sampled instructions, intraprocedural acyclic path prefixes", f.Workload, f.Model, f.Samples)
	return c.write(w, title, fmt.Sprintf("true path among the candidates at 11 bits: %.1f%%; ground truth: hwsim's transfer observer", 100*f.TruthFound))
}
