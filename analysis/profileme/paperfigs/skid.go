package paperfigs

// The counters' skid measured directly: the ProfileMe paper's Figure 2
// shows where a counter's samples land relative to the instruction that
// caused the event, which on real hardware can only be inferred from a
// contrived loop. hwsim knows it (Config.SkidTruth): for every counter
// overflow, the instruction whose event overflowed the counter and the
// one the interrupt was taken at. Here committed workloads run with a
// DMISS counter on each core, and the figure is the distribution of that
// distance, in instructions and in cycles, per workload and core; and,
// for the hottest missing load of one workload, where its counter samples
// land beside where ProfileMe puts its D-miss samples.

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
	"dcpi/workloads"
)

// SkidRun is one workload the skid is measured on.
type SkidRun struct {
	Workload string   `json:"workload"`
	Args     []string `json:"args"`
}

// SkidOptions says what the skid figure runs.
type SkidOptions struct {
	Runs   []SkidRun
	Models []alpha.Model
	// Event is the counted event (not CYCLES, which overflows at a cycle
	// and has no causing instruction); CounterPeriod its period range.
	Event         alpha.Event
	CounterPeriod [2]uint64
	// Smear names the run (a Workload of Runs) whose hottest missing
	// load's samples are shown per PC, counter beside ProfileMe, with
	// ProfileMe's fetched-instruction interval range MeInterval; "" skips
	// it.
	Smear      string
	MeInterval [2]uint64
	Seed       uint64
}

// DefaultSkid runs five committed workloads, shortened so the ten runs
// take seconds, with a DMISS counter every 20-28 misses, and shows
// ptrchase's load per PC.
func DefaultSkid() SkidOptions {
	return SkidOptions{
		Runs: []SkidRun{
			{"ptrchase", []string{"65536", "150000"}},
			{"hashdb", []string{"4000", "20000"}},
			{"sort", []string{"16000"}},
			{"matmul", []string{"64"}},
			{"stream", []string{"65536", "1"}},
		},
		Models:        []alpha.Model{alpha.EV5, alpha.EV6},
		Event:         alpha.EvDMiss,
		CounterPeriod: [2]uint64{20, 28},
		Smear:         "ptrchase",
		MeInterval:    [2]uint64{96, 160},
		Seed:          1,
	}
}

// SkidBin is how many interrupts had one distance.
type SkidBin struct {
	Distance uint64 `json:"distance"`
	Count    uint64 `json:"count"`
}

// SkidDist is a distance's distribution: its histogram and quantiles.
type SkidDist struct {
	Bins      []SkidBin `json:"bins"` // by distance
	Min       uint64    `json:"min"`
	Q1        uint64    `json:"q1"`
	Median    uint64    `json:"median"`
	Q3        uint64    `json:"q3"`
	Max       uint64    `json:"max"`
	Mode      uint64    `json:"mode"`
	ModeShare float64   `json:"mode_share"`
	Distinct  int       `json:"distinct"`
}

// IQR is the interquartile range.
func (d *SkidDist) IQR() uint64 { return d.Q3 - d.Q1 }

func newSkidDist(values []uint64) SkidDist {
	var d SkidDist
	if len(values) == 0 {
		return d
	}
	slices.Sort(values)
	q := func(p float64) uint64 { return values[int(p*float64(len(values)-1))] }
	d.Min, d.Q1, d.Median, d.Q3, d.Max = values[0], q(0.25), q(0.5), q(0.75), values[len(values)-1]
	for i := 0; i < len(values); {
		j := i
		for j < len(values) && values[j] == values[i] {
			j++
		}
		d.Bins = append(d.Bins, SkidBin{Distance: values[i], Count: uint64(j - i)})
		i = j
	}
	d.Distinct = len(d.Bins)
	mode := slices.MaxFunc(d.Bins, func(a, b SkidBin) int {
		return cmp.Or(cmp.Compare(a.Count, b.Count), cmp.Compare(b.Distance, a.Distance))
	})
	d.Mode, d.ModeShare = mode.Distance, float64(mode.Count)/float64(len(values))
	return d
}

// SkidSeries is one workload's skid on one core: the interrupts whose
// causing instruction was the workload's (user mode), their distance in
// completed instructions and in cycles.
type SkidSeries struct {
	Workload     string   `json:"workload"`
	Args         []string `json:"args"`
	Model        string   `json:"model"`
	Interrupts   uint64   `json:"interrupts"` // every counter interrupt of the run
	Instructions SkidDist `json:"instructions"`
	Cycles       SkidDist `json:"cycles"`
	// SamePC counts the user interrupts taken at the causing PC itself
	// (a loop's next iteration): a sample a profile credits to the right
	// instruction for the wrong reason.
	SamePC uint64 `json:"same_pc"`
}

// N is how many interrupts the series has.
func (s *SkidSeries) N() uint64 {
	var n uint64
	for _, b := range s.Instructions.Bins {
		n += b.Count
	}
	return n
}

// SkidSmear is one core's samples around one load: where the counter's
// interrupts caused by the load were taken (Counter, by instruction
// offset from the load in the procedure; Elsewhere outside it), and where
// ProfileMe's D-miss samples in the procedure were.
type SkidSmear struct {
	Model     string   `json:"model"`
	Counter   []uint64 `json:"counter"`   // by PCs index of the procedure
	Elsewhere uint64   `json:"elsewhere"` // counter samples outside it
	ProfileMe []uint64 `json:"profileme"`
}

// SkidFigure is the measured figure.
type SkidFigure struct {
	Event  string       `json:"event"`
	Period [2]uint64    `json:"period"`
	Series []SkidSeries `json:"series"`
	// The smear: the workload, the load's procedure, its instructions and
	// the load's index among them.
	SmearWorkload string      `json:"smear_workload,omitempty"`
	Procedure     string      `json:"procedure,omitempty"`
	PCs           []uint64    `json:"pcs,omitempty"`
	Load          uint64      `json:"load_pc,omitempty"`
	LoadIndex     int         `json:"load_index"`
	Smears        []SkidSmear `json:"smears,omitempty"`
}

// Find returns the series of workload and model, or nil.
func (f *SkidFigure) Find(workload, model string) *SkidSeries {
	for i := range f.Series {
		if f.Series[i].Workload == workload && f.Series[i].Model == model {
			return &f.Series[i]
		}
	}
	return nil
}

// RunSkid runs every workload on every model, alone on a one-CPU machine
// with the skid's ground truth, and then the smear's ProfileMe runs.
func RunSkid(o SkidOptions) (*SkidFigure, error) {
	switch {
	case len(o.Models) == 0:
		return nil, fmt.Errorf("paperfigs: skid with no CPU model")
	case len(o.Runs) == 0:
		return nil, fmt.Errorf("paperfigs: skid with no workload")
	case o.Event == alpha.EvCycles || o.Event == alpha.EvIssues || o.Event >= alpha.NumEvents:
		return nil, fmt.Errorf("paperfigs: skid of %v: want an event an instruction causes (CYCLES overflows at a cycle, not at an instruction)", o.Event)
	case o.CounterPeriod[0] < 2*alpha.InterruptSkid || o.CounterPeriod[1] < o.CounterPeriod[0]:
		return nil, fmt.Errorf("paperfigs: counter period %d-%d: want %d <= min <= max", o.CounterPeriod[0], o.CounterPeriod[1], 2*alpha.InterruptSkid)
	}
	if err := checkInterval("ProfileMe interval", o.MeInterval); err != nil {
		return nil, err
	}
	ri := slices.IndexFunc(o.Runs, func(r SkidRun) bool { return r.Workload == o.Smear })
	if o.Smear != "" && ri < 0 {
		return nil, fmt.Errorf("paperfigs: smear workload %q is not one of the runs", o.Smear)
	}
	f := &SkidFigure{Event: o.Event.String(), Period: o.CounterPeriod, LoadIndex: -1}
	type key struct {
		run   int
		model string
	}
	skids := map[key][]hwsim.Skid{}
	for ri, r := range o.Runs {
		for _, model := range o.Models {
			s := SkidSeries{Workload: r.Workload, Args: r.Args, Model: model.Name}
			all, err := skidRun(o, r, model)
			if err != nil {
				return nil, err
			}
			s.Interrupts = uint64(len(all))
			var user []hwsim.Skid
			var inst, cyc []uint64
			for _, k := range all {
				if k.CauseKernel() {
					continue
				}
				user = append(user, k)
				inst, cyc = append(inst, k.Instructions()), append(cyc, k.Cycles())
				if k.PC == k.CausePC {
					s.SamePC++
				}
			}
			if len(user) == 0 {
				return nil, fmt.Errorf("paperfigs: no %v counter interrupts caused by %s on the %s", o.Event, r.Workload, model.Name)
			}
			s.Instructions, s.Cycles = newSkidDist(inst), newSkidDist(cyc)
			skids[key{ri, model.Name}] = user
			f.Series = append(f.Series, s)
		}
	}
	if o.Smear == "" {
		return f, nil
	}
	// The load: the PC whose events overflowed the counter most often,
	// over every model.
	causes := map[uint64]int{}
	for _, model := range o.Models {
		for _, k := range skids[key{ri, model.Name}] {
			causes[k.CausePC]++
		}
	}
	load := slices.MaxFunc(slices.Collect(maps.Keys(causes)), func(a, b uint64) int {
		return cmp.Or(cmp.Compare(causes[a], causes[b]), cmp.Compare(b, a))
	})
	run := o.Runs[ri]
	image, err := workloads.Binary(run.Workload)
	if err != nil {
		return nil, err
	}
	path := workloads.BinDir + "/" + run.Workload
	im, err := elfimage.Parse(image, path)
	if err != nil {
		return nil, err
	}
	name, _, ok := im.SymbolFor(load)
	sym, found := im.SymbolNamed(name)
	if !ok || !found || sym.Size == 0 {
		return nil, fmt.Errorf("paperfigs: %s's hot load %#x is in no sized procedure", run.Workload, load)
	}
	f.SmearWorkload, f.Procedure, f.Load = run.Workload, sym.Name, load
	index := map[uint64]int{}
	for pc := sym.Addr; pc < sym.Addr+sym.Size; pc += 4 {
		index[pc] = len(f.PCs)
		f.PCs = append(f.PCs, pc)
	}
	f.LoadIndex = index[load]
	for _, model := range o.Models {
		sm := SkidSmear{Model: model.Name, Counter: make([]uint64, len(f.PCs)), ProfileMe: make([]uint64, len(f.PCs))}
		for _, k := range skids[key{ri, model.Name}] {
			if k.CausePC != load {
				continue
			}
			if i, ok := index[k.PC]; ok && !k.Kernel {
				sm.Counter[i]++
			} else {
				sm.Elsewhere++
			}
		}
		fo := Figure2Options{Args: run.Args, MeInterval: o.MeInterval, Seed: o.Seed, Workload: run.Workload}
		if err := fig2Run(fo, model, MethodProfileMe, path, image, index, sm.ProfileMe); err != nil {
			return nil, err
		}
		f.Smears = append(f.Smears, sm)
	}
	return f, nil
}

// skidRun runs r on model with a counter of o.Event and returns the skid
// of every counter interrupt.
func skidRun(o SkidOptions, r SkidRun, model alpha.Model) ([]hwsim.Skid, error) {
	image, err := workloads.Binary(r.Workload)
	if err != nil {
		return nil, err
	}
	path := workloads.BinDir + "/" + r.Workload
	c := hwsim.DefaultConfig()
	c.CPUs, c.Model, c.Timing, c.Seed, c.SkidTruth = 1, model, true, o.Seed, true
	c.Files = map[string][]byte{path: image}
	c.Stdout, c.Stderr = io.Discard, io.Discard
	m, err := hwsim.New(c)
	if err != nil {
		return nil, err
	}
	err = m.StartProfiling(hwsim.ProfileConfig{
		Counters:        []hwsim.CounterSpec{{Events: []alpha.Event{o.Event}, PeriodMin: o.CounterPeriod[0], PeriodMax: o.CounterPeriod[1]}},
		InterruptCycles: hwsim.DefaultProfile().InterruptCycles,
	}, nopHandler{})
	if err != nil {
		return nil, err
	}
	if _, err := m.Spawn(path, append([]string{path}, r.Args...), []string{"PATH=" + workloads.BinDir}); err != nil {
		return nil, err
	}
	if m.Run(200_000_000_000) {
		return nil, fmt.Errorf("paperfigs: %s did not finish on the %s", r.Workload, model.Name)
	}
	if f := m.Faults(); len(f) > 0 {
		return nil, fmt.Errorf("paperfigs: %s on the %s: %v", r.Workload, model.Name, f[0])
	}
	return m.Skids()[0], nil
}

// nopHandler takes counter interrupts and keeps nothing: the skid's
// ground truth is the run's result.
type nopHandler struct{}

func (nopHandler) CounterInterrupt(hwsim.Sample) uint64 { return 0 }

// WriteText prints per workload and core the distance's distribution.
func (f *SkidFigure) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Counter skid: %s counter, period %d-%d; distance from the instruction whose event overflowed the counter to the one the interrupt was taken at\n", f.Event, f.Period[0], f.Period[1])
	fmt.Fprintf(&b, "%-9s %-5s %6s | %-33s | %s\n", "workload", "model", "n", "instructions: mode(share) q1-med-q3 [min,max] distinct", "cycles: mode(share) q1-med-q3 [min,max]")
	for _, s := range f.Series {
		in, cy := &s.Instructions, &s.Cycles
		fmt.Fprintf(&b, "%-9s %-5s %6d | %4d (%5.1f%%) %4d-%4d-%4d [%d,%d] %d | %4d (%5.1f%%) %4d-%4d-%4d [%d,%d]\n",
			s.Workload, s.Model, s.N(), in.Mode, 100*in.ModeShare, in.Q1, in.Median, in.Q3, in.Min, in.Max, in.Distinct,
			cy.Mode, 100*cy.ModeShare, cy.Q1, cy.Median, cy.Q3, cy.Min, cy.Max)
	}
	if f.Procedure != "" {
		fmt.Fprintf(&b, "smear: %s's hottest load, %#x (%s+%#x): samples per instruction offset from it\n", f.SmearWorkload, f.Load, f.Procedure, f.Load-f.PCs[0])
		for _, sm := range f.Smears {
			fmt.Fprintf(&b, "  %-5s counter  : %s; outside %s: %d\n", sm.Model, f.offsets(sm.Counter), f.Procedure, sm.Elsewhere)
			fmt.Fprintf(&b, "  %-5s profileme: %s\n", sm.Model, f.offsets(sm.ProfileMe))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// offsets lists counts' nonzero entries as offset:count, largest first
// (at most eight).
func (f *SkidFigure) offsets(counts []uint64) string {
	var idx []int
	var total uint64
	for i, n := range counts {
		if n > 0 {
			idx = append(idx, i)
			total += n
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(counts[b], counts[a]) })
	var parts []string
	for k, i := range idx {
		if k == 8 {
			parts = append(parts, fmt.Sprintf("... (%d offsets)", len(idx)))
			break
		}
		parts = append(parts, fmt.Sprintf("%+d:%d", i-f.LoadIndex, counts[i]))
	}
	return fmt.Sprintf("%d samples %s", total, strings.Join(parts, " "))
}

// skidAxis is the widest distance the SVG draws; longer skids go in its
// last bar.
const skidAxis = 64

// WriteSVG draws the figure: per workload (rows) and core (columns) the
// share of interrupts at each distance in instructions; then, per core,
// the smear load's procedure with the counter's samples caused by the
// load and ProfileMe's D-miss samples per instruction.
func (f *SkidFigure) WriteSVG(w io.Writer) error {
	const (
		left, right, top = 50.0, 16.0, 60.0
		panelW, panelH   = 420.0, 90.0
		gapX, gapY       = 40.0, 48.0
	)
	var models []string
	var runs []string
	for _, s := range f.Series {
		if !slices.Contains(models, s.Model) {
			models = append(models, s.Model)
		}
		if !slices.Contains(runs, s.Workload) {
			runs = append(runs, s.Workload)
		}
	}
	width := left + float64(len(models))*(panelW+gapX) - gapX + right
	smearH := 0.0
	if f.Procedure != "" {
		smearH = 40 + float64(len(f.Smears))*(panelH+gapY)
	}
	height := top + float64(len(runs))*(panelH+gapY) + smearH + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="20" font-size="14" font-weight="bold">Counter skid on committed workloads (hwsim ground truth): %s counter, period %d-%d</text>`+"\n", left, esc(f.Event), f.Period[0], f.Period[1])
	fmt.Fprintf(&b, `<text x="%.0f" y="38">x: instructions completed from the one whose event overflowed the counter to the one the interrupt was taken at (%d+ in the last bar); y: share of interrupts</text>`+"\n", left, skidAxis)
	for ri, run := range runs {
		for mi, model := range models {
			s := f.Find(run, model)
			if s == nil {
				continue
			}
			x0, y0 := left+float64(mi)*(panelW+gapX), top+float64(ri)*(panelH+gapY)+16
			shares := make([]float64, skidAxis+1)
			n := float64(s.N())
			for _, bin := range s.Instructions.Bins {
				shares[min(bin.Distance, skidAxis)] += float64(bin.Count) / n
			}
			in := &s.Instructions
			title := fmt.Sprintf("%s on the %s: %d interrupts, mode %d (%.0f%%), quartiles %d-%d-%d, %d distances; cycles: mode %d (%.0f%%)",
				run, modelTitle(model), s.N(), in.Mode, 100*in.ModeShare, in.Q1, in.Median, in.Q3, in.Distinct, s.Cycles.Mode, 100*s.Cycles.ModeShare)
			skidBars(&b, x0, y0, panelW, panelH, title, shares, func(i int) string { return fmt.Sprint(i) }, 8, nil)
		}
	}
	if f.Procedure != "" {
		y := top + float64(len(runs))*(panelH+gapY) + 10
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="13" font-weight="bold">The smear of one load: %s's %#x (%s+%#x, red): the counter's samples it caused (blue) and ProfileMe's D-miss samples (orange) per instruction of %s</text>`+"\n",
			left, y, esc(f.SmearWorkload), f.Load, esc(f.Procedure), f.Load-f.PCs[0], esc(f.Procedure))
		pw := width - left - right
		for k, sm := range f.Smears {
			y0 := y + 30 + float64(k)*(panelH+gapY)
			var ct, mt uint64
			for i := range sm.Counter {
				ct += sm.Counter[i]
				mt += sm.ProfileMe[i]
			}
			c, m := make([]float64, len(f.PCs)), make([]float64, len(f.PCs))
			for i := range f.PCs {
				if ct > 0 {
					c[i] = float64(sm.Counter[i]) / float64(ct)
				}
				if mt > 0 {
					m[i] = float64(sm.ProfileMe[i]) / float64(mt)
				}
			}
			title := fmt.Sprintf("%s: counter %d samples (%.0f%% at the load, %d outside %s), ProfileMe %d (%.0f%% at the load)",
				modelTitle(sm.Model), ct+sm.Elsewhere, 100*safeShare(sm.Counter[f.LoadIndex], ct+sm.Elsewhere), sm.Elsewhere, f.Procedure, mt, 100*safeShare(sm.ProfileMe[f.LoadIndex], mt))
			skidBars(&b, left, y0, pw, panelH, title, c, func(i int) string { return fmt.Sprintf("%+d", i-f.LoadIndex) }, max(4, len(f.PCs)/32), m)
			fmt.Fprintf(&b, `<rect x="%.2f" y="%.2f" width="%.2f" height="3" fill="#d62728"/>`+"\n", left+float64(f.LoadIndex)*pw/float64(len(f.PCs)), y0+panelH+1, max(pw/float64(len(f.PCs))-0.5, 0.5))
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func safeShare(n, total uint64) float64 {
	if total == 0 {
		return 0
	}
	return float64(n) / float64(total)
}

// skidBars draws one panel of bars (shares, 0-1) at x0, y0, a second
// series (other, may be nil) beside each bar, with an axis label every
// labelEvery bars.
func skidBars(b *strings.Builder, x0, y0, w, h float64, title string, shares []float64, label func(int) string, labelEvery int, other []float64) {
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-weight="bold">%s</text>`+"\n", x0, y0-4, esc(title))
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x0, y0+h, x0+w, y0+h)
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x0, y0, x0, y0+h)
	top := slices.Max(shares)
	if other != nil {
		top = max(top, slices.Max(other))
	}
	if top == 0 {
		top = 1
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%.0f%%</text>`+"\n", x0-3, y0+8, 100*top)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">0</text>`+"\n", x0-3, y0+h)
	bw := w / float64(len(shares))
	bar := func(x, share, width float64, color string, i int) {
		if share == 0 {
			return
		}
		bh := h * share / top
		fmt.Fprintf(b, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"><title>%s: %.1f%%</title></rect>`+"\n", x, y0+h-bh, max(width, 0.4), bh, color, label(i), 100*share)
	}
	for i, s := range shares {
		x := x0 + float64(i)*bw
		if other == nil {
			bar(x, s, bw-0.5, "#4169e1", i)
		} else {
			bar(x, s, bw/2-0.25, "#4169e1", i)
			bar(x+bw/2, other[i], bw/2-0.25, "#ff7f0e", i)
		}
		if i%labelEvery == 0 {
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">%s</text>`+"\n", x+bw/2, y0+h+13, label(i))
		}
	}
}
