package paperfigs

// Figure 2 of the ProfileMe paper is the case for instruction sampling:
// a counter's interrupt names the instruction the CPU is at some cycles
// after the event, not the one that caused it. Here a loop of one load
// that misses the D-cache and 192 nops (workload missloop) runs with a
// DMISS counter, and again with ProfileMe, on the in-order 21164 and on
// the out-of-order 21264 core; the figure is the samples per instruction
// of the four runs.

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
	"dcpi/workloads"
)

// Figure2Options says what Figure 2 runs.
type Figure2Options struct {
	// Workload and Args name a committed workload and its arguments;
	// Procedure is the procedure whose load the figure shows: the
	// instruction in it with the most ProfileMe D-miss samples.
	Workload  string
	Args      []string
	Procedure string
	// Models are the CPU models run (timed: the 21264 core for EV6).
	Models []alpha.Model
	// CounterPeriod is the DMISS counter's period range, MeInterval
	// ProfileMe's fetched-instruction interval range.
	CounterPeriod [2]uint64
	MeInterval    [2]uint64
	// Seed seeds the machines (the counters' and ProfileMe's intervals).
	Seed uint64
}

// DefaultFigure2 is missloop's walk on the 21164 and the 21264: 20,000
// D-cache misses, counted every 60-68 misses, and one fetched instruction
// in 96-160 profiled.
func DefaultFigure2() Figure2Options {
	return Figure2Options{
		Workload: "missloop", Args: []string{"16384", "20000"}, Procedure: "walk",
		Models:        []alpha.Model{alpha.EV5, alpha.EV6},
		CounterPeriod: [2]uint64{60, 68}, MeInterval: [2]uint64{96, 160}, Seed: 1,
	}
}

// Figure 2's methods.
const (
	MethodCounter   = "counter"   // DMISS counter samples at the interrupted PC
	MethodProfileMe = "profileme" // profiled instructions that missed the D-cache
)

// Figure2Series is one run's D-miss samples per instruction of the
// procedure (Counts[i] is Figure2.PCs[i]'s).
type Figure2Series struct {
	Model  string   `json:"model"`
	Method string   `json:"method"`
	Counts []uint64 `json:"counts"`
	Total  uint64   `json:"total"`
	AtLoad uint64   `json:"at_load"`
	// Peak is the offset, in instructions from the load, of the
	// instruction with the most samples; PCs counts the instructions
	// with any.
	Peak int `json:"peak_offset"`
	PCs  int `json:"pcs_with_samples"`
}

// AtLoadShare is the share of the series' samples at the load.
func (s *Figure2Series) AtLoadShare() float64 {
	if s.Total == 0 {
		return 0
	}
	return float64(s.AtLoad) / float64(s.Total)
}

// Figure2 is the measured figure.
type Figure2 struct {
	Workload  string          `json:"workload"`
	Args      []string        `json:"args"`
	Procedure string          `json:"procedure"`
	PCs       []uint64        `json:"pcs"` // the procedure's instructions
	Load      uint64          `json:"load_pc"`
	LoadIndex int             `json:"load_index"` // in PCs
	Series    []Figure2Series `json:"series"`
}

// Offset is PCs[i]'s distance from the load in instructions.
func (f *Figure2) Offset(i int) int { return i - f.LoadIndex }

// Find returns the series of model and method, or nil.
func (f *Figure2) Find(model, method string) *Figure2Series {
	for i := range f.Series {
		if f.Series[i].Model == model && f.Series[i].Method == method {
			return &f.Series[i]
		}
	}
	return nil
}

// RunFigure2 runs the workload on hwsim once per model and method, each
// time alone on a one-CPU machine, and tallies each run's D-miss samples
// over the procedure's instructions.
func RunFigure2(o Figure2Options) (*Figure2, error) {
	if len(o.Models) == 0 {
		return nil, fmt.Errorf("paperfigs: Figure 2 with no CPU model")
	}
	if err := errors.Join(checkInterval("counter period", o.CounterPeriod), checkInterval("ProfileMe interval", o.MeInterval)); err != nil {
		return nil, err
	}
	image, err := workloads.Binary(o.Workload)
	if err != nil {
		return nil, err
	}
	path := workloads.BinDir + "/" + o.Workload
	im, err := elfimage.Parse(image, path)
	if err != nil {
		return nil, err
	}
	sym, ok := im.SymbolNamed(o.Procedure)
	if !ok || sym.Size == 0 {
		return nil, fmt.Errorf("paperfigs: %s has no procedure %q", o.Workload, o.Procedure)
	}
	f := &Figure2{Workload: o.Workload, Args: o.Args, Procedure: o.Procedure}
	index := map[uint64]int{}
	for pc := sym.Addr; pc < sym.Addr+sym.Size; pc += 4 {
		index[pc] = len(f.PCs)
		f.PCs = append(f.PCs, pc)
	}
	for _, model := range o.Models {
		for _, method := range []string{MethodCounter, MethodProfileMe} {
			s := Figure2Series{Model: model.Name, Method: method, Counts: make([]uint64, len(f.PCs))}
			if err := fig2Run(o, model, method, path, image, index, s.Counts); err != nil {
				return nil, err
			}
			f.Series = append(f.Series, s)
		}
	}
	// The load is where ProfileMe says the misses are.
	me := make([]uint64, len(f.PCs))
	for _, s := range f.Series {
		if s.Method == MethodProfileMe {
			for i, n := range s.Counts {
				me[i] += n
			}
		}
	}
	f.LoadIndex = slices.Index(me, slices.Max(me))
	if me[f.LoadIndex] == 0 {
		return nil, fmt.Errorf("paperfigs: no ProfileMe D-miss samples in %s of %s", o.Procedure, o.Workload)
	}
	f.Load = f.PCs[f.LoadIndex]
	for i := range f.Series {
		s := &f.Series[i]
		peak := 0
		for j, n := range s.Counts {
			s.Total += n
			if n > 0 {
				s.PCs++
			}
			if n > s.Counts[peak] {
				peak = j
			}
		}
		s.AtLoad, s.Peak = s.Counts[f.LoadIndex], f.Offset(peak)
		if s.Total == 0 {
			return nil, fmt.Errorf("paperfigs: no %s D-miss samples in %s of %s on the %s", s.Method, o.Procedure, o.Workload, s.Model)
		}
	}
	return f, nil
}

// fig2Run runs the workload once on model with method's sampling and adds
// its D-miss samples at the procedure's PCs (index) to counts.
func fig2Run(o Figure2Options, model alpha.Model, method, path string, image []byte, index map[uint64]int, counts []uint64) error {
	c := hwsim.DefaultConfig()
	c.CPUs, c.Model, c.Timing, c.Seed = 1, model, true, o.Seed
	c.Files = map[string][]byte{path: image}
	c.Stdout, c.Stderr = io.Discard, io.Discard
	m, err := hwsim.New(c)
	if err != nil {
		return err
	}
	tally := fig2Tally{index: index, counts: counts}
	switch method {
	case MethodCounter:
		err = m.StartProfiling(hwsim.ProfileConfig{
			Counters:        []hwsim.CounterSpec{{Events: []alpha.Event{alpha.EvDMiss}, PeriodMin: o.CounterPeriod[0], PeriodMax: o.CounterPeriod[1]}},
			InterruptCycles: hwsim.DefaultProfile().InterruptCycles,
		}, &tally)
	case MethodProfileMe:
		err = m.StartProfileMe(hwsim.ProfileMeConfig{IntervalMin: o.MeInterval[0], IntervalMax: o.MeInterval[1], Copies: 4}, &tally)
	default:
		err = fmt.Errorf("paperfigs: unknown method %q", method)
	}
	if err != nil {
		return err
	}
	if _, err := m.Spawn(path, append([]string{path}, o.Args...), []string{"PATH=" + workloads.BinDir}); err != nil {
		return err
	}
	if m.Run(200_000_000_000) {
		return fmt.Errorf("paperfigs: %s did not finish on the %s", o.Workload, model.Name)
	}
	m.StopProfileMe()
	m.FlushProfileMe()
	return nil
}

// fig2Tally counts D-miss samples at the procedure's PCs: a DMISS
// counter's at the interrupted PC, ProfileMe's at the profiled
// instruction's when it missed.
type fig2Tally struct {
	index  map[uint64]int
	counts []uint64
}

func (t *fig2Tally) add(pc uint64, kernel bool) {
	if i, ok := t.index[pc]; ok && !kernel {
		t.counts[i]++
	}
}

func (t *fig2Tally) CounterInterrupt(s hwsim.Sample) uint64 {
	if s.Event == alpha.EvDMiss {
		t.add(s.PC, s.Kernel)
	}
	return 0
}

func (t *fig2Tally) ProfileMeInterrupt(_ int, samples []hwsim.MeSample, _ uint64) uint64 {
	for _, s := range samples {
		if s.Events&alpha.MeDMiss != 0 {
			t.add(s.PC, s.Kernel)
		}
	}
	return 0
}

// modelTitle names a model's core for the figure.
func modelTitle(model string) string {
	switch model {
	case "ev5":
		return "21164 (in order)"
	case "ev6", "ev67":
		return "21264 core (out of order)"
	}
	return model
}

// WriteSVG draws the figure: one panel per series, a bar per instruction
// of the procedure, the load's bar marked, each panel titled with its
// share at the load and its peak.
func (f *Figure2) WriteSVG(w io.Writer) error {
	const (
		width, left, right = 900.0, 60.0, 20.0
		panelH, gap, top   = 120.0, 46.0, 56.0
	)
	n := len(f.PCs)
	height := top + float64(len(f.Series))*(panelH+gap) + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="20" font-size="14" font-weight="bold">ProfileMe Figure 2: D-cache miss samples per instruction of %s in %s (%s)</text>`+"\n", left, esc(f.Procedure), esc(f.Workload), esc(strings.Join(f.Args, " ")))
	fmt.Fprintf(&b, `<text x="%.0f" y="38">x: instructions from the load at %#x (red, offset 0); a DMISS counter's samples land where the interrupt is taken, ProfileMe's on the instruction profiled</text>`+"\n", left, f.Load)
	bw := (width - left - right) / float64(n)
	for k, s := range f.Series {
		y0 := top + float64(k)*(panelH+gap) + 16
		maxN := slices.MaxFunc(s.Counts, cmp.Compare[uint64])
		what := "DMISS counter samples"
		if s.Method == MethodProfileMe {
			what = "ProfileMe samples with a D-miss"
		}
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-weight="bold">%s, %s: %d, %.0f%% at the load, peak at %+d</text>`+"\n",
			left, y0-4, esc(modelTitle(s.Model)), what, s.Total, 100*s.AtLoadShare(), s.Peak)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, y0+panelH, width-right, y0+panelH)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, y0, left, y0+panelH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%d</text>`+"\n", left-4, y0+8, maxN)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">0</text>`+"\n", left-4, y0+panelH)
		for i, c := range s.Counts {
			if c == 0 || maxN == 0 {
				continue
			}
			h := panelH * float64(c) / float64(maxN)
			color := "#4169e1"
			if i == f.LoadIndex {
				color = "#d62728"
			}
			fmt.Fprintf(&b, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"><title>%+d: %d</title></rect>`+"\n",
				left+float64(i)*bw, y0+panelH-h, max(bw-0.5, 0.5), h, color, f.Offset(i), c)
		}
		// Offsets along the axis every 16 instructions from the load.
		for i := range f.PCs {
			if off := f.Offset(i); off%16 == 0 {
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">%+d</text>`+"\n", left+(float64(i)+0.5)*bw, y0+panelH+13, off)
			}
		}
		fmt.Fprintf(&b, `<rect x="%.2f" y="%.2f" width="%.2f" height="3" fill="#d62728"/>`+"\n", left+float64(f.LoadIndex)*bw, y0+panelH+1, max(bw-0.5, 0.5))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteText prints the figure's numbers: per series its total, share at
// the load, peak and spread.
func (f *Figure2) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Figure 2: %s in %s %s, load at %#x (%s+%#x)\n", f.Procedure, f.Workload, strings.Join(f.Args, " "), f.Load, f.Procedure, f.Load-f.PCs[0])
	fmt.Fprintf(&b, "%-6s %-10s %8s %9s %6s %5s\n", "model", "method", "samples", "at load", "peak", "pcs")
	for _, s := range f.Series {
		fmt.Fprintf(&b, "%-6s %-10s %8d %8.1f%% %+6d %5d\n", s.Model, s.Method, s.Total, 100*s.AtLoadShare(), s.Peak, s.PCs)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
