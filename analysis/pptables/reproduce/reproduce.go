// Package reproduce runs the workloads of the PLDI'97 paper's tables
// (Ammons, Ball and Larus, sec. 6) on the simulated machine — original,
// instrumented for paths, flow with hardware metrics, and the calling
// context modes — and fills each workload's row of Tables 1, 2, 4 and 5
// with package pptables' arithmetic (dcpi pp tables).
package reproduce

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"dcpi/analysis/cfg"
	"dcpi/analysis/instrument"
	"dcpi/analysis/paths"
	"dcpi/analysis/pptables"
	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
	"dcpi/workloads"
)

// DefaultWorkloads are dcpi pp tables' default workloads and sizes:
// programs that run in seconds four times over with ground truth
// (ptrchase smaller than its default).
var DefaultWorkloads = []string{"sort", "interp", "hashdb", "ptrchase:65536,400000", "recurse", "strproc", "matmul", "stream"}

// ParseWorkloadArg splits "name:a,b" into a workload and its arguments.
func ParseWorkloadArg(s string) (string, []string, error) {
	name, rest, hasArgs := strings.Cut(s, ":")
	w, ok := workloads.ByName(name)
	if !ok {
		return "", nil, fmt.Errorf("no workload %q (workloads: %s)", name, strings.Join(workloads.Names(), ", "))
	}
	if !hasArgs {
		return name, w.DefaultArgs, nil
	}
	if rest == "" {
		return name, nil, nil
	}
	return name, strings.Split(rest, ","), nil
}

// Row is one workload's line in every table.
type Row struct {
	Workload    string   `json:"workload"`
	Args        []string `json:"args"`
	BaseCycles  uint64   `json:"base_cycles"`
	PathsRatio  float64  `json:"paths_overhead"`
	FlowHWRatio float64  `json:"flow_hw_overhead"`
	// ContextRatio is the CCT mode's, calls only; ContextHWRatio the
	// CCT mode's with metrics (the paper's Context+HW).
	ContextRatio   float64 `json:"context_overhead"`
	ContextHWRatio float64 `json:"context_hw_overhead"`
	// ContextFlowRatio is the CCT mode's with paths per context (the
	// paper's Context+Flow).
	ContextFlowRatio float64 `json:"context_flow_overhead"`
	// Perturbation (the paper's F) is the flow+HW run's ground truth
	// over the original's, PerturbationC (C) the context+HW run's; both
	// in pptables.PerturbationMetrics' order.
	Perturbation  []float64         `json:"perturbation"`
	PerturbationC []float64         `json:"perturbation_c"`
	Hot           pptables.Table4   `json:"table4"`
	Procs         pptables.Table5   `json:"table5"`
	Special       map[string]uint64 `json:"uncounted"`
	Original      pptables.Totals   `json:"original_truth"`
	FlowHW        pptables.Totals   `json:"flow_hw_truth"`
	ContextHW     pptables.Totals   `json:"context_hw_truth"`
}

// Run runs one workload five times and fills its row.
func Run(name string, argv []string) (Row, error) {
	row := Row{Workload: name, Args: argv}
	orig, err := workloads.Binary(name)
	if err != nil {
		return row, err
	}
	base, err := simulate(name, orig, argv)
	if err != nil {
		return row, err
	}
	variants := []instrument.Options{
		{Mode: instrument.ModePaths, DumpPath: "pp.out"},
		{Mode: instrument.ModePaths, DumpPath: "pp.out", Metrics: true},
		{Mode: instrument.ModeCCT, DumpPath: "pp.out"},
		{Mode: instrument.ModeCCT, DumpPath: "pp.out", Metrics: true},
		{Mode: instrument.ModeCCT, DumpPath: "pp.out", CCTPaths: true},
	}
	elfs := make([][]byte, len(variants))
	runs := make([]result, len(variants))
	for i, o := range variants {
		ins, err := instrument.Instrument(orig, name, o)
		if err != nil {
			return row, err
		}
		elfs[i] = ins.ELF
		if runs[i], err = simulate(name, ins.ELF, argv); err != nil {
			return row, err
		}
	}
	pr, hr, cr, cmr, cfr := runs[0], runs[1], runs[2], runs[3], runs[4]
	hwELF, cmELF, cfELF := elfs[1], elfs[3], elfs[4]
	if _, err := instrument.ReadCCT(cfELF, cfr.dump); err != nil {
		return row, fmt.Errorf("context+flow dump: %w", err)
	}
	for _, r := range []result{pr, hr, cr, cmr, cfr} {
		if !bytes.Equal(r.stdout, base.stdout) {
			return row, fmt.Errorf("an instrumented run's output differs from the original's")
		}
	}
	// The context+HW run's own tree must read back: a run whose records
	// are unreadable measured nothing.
	if _, err := instrument.ReadCCT(cmELF, cmr.dump); err != nil {
		return row, fmt.Errorf("context+HW dump: %w", err)
	}
	row.BaseCycles = base.cycles
	row.PathsRatio = pptables.Ratio(pr.cycles, base.cycles)
	row.FlowHWRatio = pptables.Ratio(hr.cycles, base.cycles)
	row.ContextRatio = pptables.Ratio(cr.cycles, base.cycles)
	row.ContextHWRatio = pptables.Ratio(cmr.cycles, base.cycles)
	row.ContextFlowRatio = pptables.Ratio(cfr.cycles, base.cycles)
	row.Original, row.FlowHW, row.ContextHW = base.truth, hr.truth, cmr.truth
	row.Perturbation = pptables.Perturbation(base.truth, hr.truth)
	row.PerturbationC = pptables.Perturbation(base.truth, cmr.truth)
	pc, err := instrument.ReadPaths(hwELF, hr.dump)
	if err != nil {
		return row, err
	}
	row.Special = pc.Special
	stats, err := pathStats(orig, pc.Profile)
	if err != nil {
		return row, err
	}
	row.Hot = pptables.HotPaths(stats, pptables.HotThreshold)
	row.Procs = pptables.HotProcedures(stats, pptables.HotThreshold)
	return row, nil
}

// result is one simulated run.
type result struct {
	stdout []byte
	cycles uint64 // the process's, user and vmunix
	truth  pptables.Totals
	dump   []byte
}

// simulate runs image as /bin/name on a one-CPU 21164 with ground
// truth and rdpic's default events.
func simulate(name string, image []byte, argv []string) (result, error) {
	var res result
	c := hwsim.DefaultConfig()
	c.CPUs = 1
	c.GroundTruth = true
	path := "/bin/" + name
	c.Files = map[string][]byte{path: image}
	var out, dump bytes.Buffer
	c.Stdout = &out
	c.OpenAppend = func(p string) (io.Writer, error) {
		if p != "pp.out" {
			return nil, fmt.Errorf("only pp.out")
		}
		return &dump, nil
	}
	m, err := hwsim.New(c)
	if err != nil {
		return res, err
	}
	p, err := m.Spawn(path, append([]string{path}, argv...), []string{"PATH=/bin"})
	if err != nil {
		return res, err
	}
	if m.Run(1_000_000_000_000) {
		return res, fmt.Errorf("did not finish")
	}
	if f := m.Faults(); len(f) > 0 {
		return res, fmt.Errorf("faulted: %v", f)
	}
	if p.ExitStatus() != 0 {
		return res, fmt.Errorf("exit status %#x", p.ExitStatus())
	}
	res.stdout, res.cycles, res.dump = out.Bytes(), p.Cycles, dump.Bytes()
	if g := m.GroundTruth()[path]; g != nil {
		for _, e := range g.PCs {
			res.truth.Cycles += e.HeadCycles
			res.truth.Instructions += e.Executed
			res.truth.DMiss += e.Events[alpha.EvDMiss]
			res.truth.IMiss += e.Events[alpha.EvIMiss]
			res.truth.Mispredicts += e.Events[alpha.EvBranchMP]
			res.truth.WBFull += e.Events[alpha.EvWBFull]
		}
	}
	return res, nil
}

// pathStats gives each path of prof (metrics: cycles, dmiss, imiss) its
// instructions, from its blocks in the original image: the length of
// each block times the path's count.
func pathStats(orig []byte, prof *paths.Profile) ([]pptables.PathStat, error) {
	miss := -1
	for i, m := range prof.Metrics {
		if m == "dmiss" {
			miss = i
		}
	}
	if miss < 0 {
		return nil, fmt.Errorf("the profile has no dmiss metric (metrics %v)", prof.Metrics)
	}
	im, err := elfimage.Parse(orig, "original")
	if err != nil {
		return nil, err
	}
	code, err := cfg.NewCode(im, cfg.Options{})
	if err != nil {
		return nil, err
	}
	var out []pptables.PathStat
	for _, img := range prof.Images {
		for _, pr := range img.Procs {
			var n *paths.Numbering
			if r, err := code.At(pr.Entry); err == nil && r.Start == pr.Entry {
				if p, err := code.Build(r); err == nil {
					if n, err = paths.Number(p); err != nil || n.NumPaths != pr.NumPaths {
						n = nil
					}
				}
			}
			if n == nil {
				return nil, fmt.Errorf("procedure %s at %#x: cannot number its paths again", pr.Name, pr.Entry)
			}
			for _, x := range pr.Paths {
				blocks, err := n.Blocks(x.ID)
				if err != nil {
					return nil, fmt.Errorf("procedure %s path %d: %w", pr.Name, x.ID, err)
				}
				var insns uint64
				for _, b := range blocks {
					insns += uint64(n.Proc.Blocks[b].Len())
				}
				out = append(out, pptables.PathStat{Proc: pr.Name, ID: x.ID, Count: x.Count, Instructions: insns * x.Count, Misses: x.Metrics[miss]})
			}
		}
	}
	return out, nil
}

// RunAll runs each workload of specs ("name", or "name:a,b" with its
// arguments; DefaultWorkloads when there are none) in turn and returns
// their rows. A workload that fails stops the run, named in the error.
func RunAll(specs []string) ([]Row, error) {
	if len(specs) == 0 {
		specs = DefaultWorkloads
	}
	var rows []Row
	for _, s := range specs {
		name, argv, err := ParseWorkloadArg(s)
		if err != nil {
			return nil, err
		}
		r, err := Run(name, argv)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// WriteJSON writes the rows as indented JSON.
func WriteJSON(w io.Writer, rows []Row) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rows)
}

// Write prints Tables 1, 2, 4 and 5 of the rows, a workload a line.
func Write(w io.Writer, rows []Row) error {
	pct := func(a, b uint64) string { return fmt.Sprintf("%.1f%%", 100*pptables.Ratio(a, b)) }
	table := func(title, header string, line func(tw io.Writer, r Row)) error {
		fmt.Fprintf(w, "%s\n", title)
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, header+"\t")
		for _, r := range rows {
			line(tw, r)
			fmt.Fprintln(tw, "\t")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintln(w)
		return err
	}
	if err := table("Table 1: overhead, instrumented process cycles / original's (context: the CCT mode, calls only; context+HW: with metrics; context+flow: with paths per context)", "workload\targs\toriginal cycles\tpaths\tflow+HW\tcontext\tcontext+HW\tcontext+flow",
		func(tw io.Writer, r Row) {
			fmt.Fprintf(tw, "%s\t%s\t%.2fM\t%.2f×\t%.2f×\t%.2f×\t%.2f×\t%.2f×", r.Workload, strings.Join(r.Args, " "), float64(r.BaseCycles)/1e6, r.PathsRatio, r.FlowHWRatio, r.ContextRatio, r.ContextHWRatio, r.ContextFlowRatio)
		}); err != nil {
		return err
	}
	var hdr []string
	for _, m := range pptables.PerturbationMetrics {
		hdr = append(hdr, m+" F", "C")
	}
	if err := table("Table 2: perturbation, F = flow+HW / original, C = context+HW / original (hwsim ground truth of the program image, user mode; - where the original has none)",
		"workload\t"+strings.Join(hdr, "\t"),
		func(tw io.Writer, r Row) {
			fmt.Fprint(tw, r.Workload)
			for i, v := range r.Perturbation {
				for _, x := range []float64{v, r.PerturbationC[i]} {
					if x == 0 {
						fmt.Fprint(tw, "\t-")
					} else {
						fmt.Fprintf(tw, "\t%.2f", x)
					}
				}
			}
		}); err != nil {
		return err
	}
	if err := table("Table 4: paths by D-cache misses (hot: >= 1% of the misses; dense: a larger share of the misses than of the instructions)",
		"workload\tpaths\tinsts\tmisses\tdense\tinst\tmiss\tsparse\tinst\tmiss\tcold\tinst\tmiss",
		func(tw io.Writer, r Row) {
			h := r.Hot
			fmt.Fprintf(tw, "%s\t%d\t%.3g\t%.3g", r.Workload, h.All.Num, float64(h.All.Instructions), float64(h.All.Misses))
			for _, g := range []pptables.Group{h.Dense, h.Sparse, h.Cold} {
				fmt.Fprintf(tw, "\t%d\t%s\t%s", g.Num, pct(g.Instructions, h.All.Instructions), pct(g.Misses, h.All.Misses))
			}
		}); err != nil {
		return err
	}
	return table("Table 5: procedures by D-cache misses (hot, dense and sparse as for paths)",
		"workload\tdense\tpath/proc\tmisses\tsparse\tpath/proc\tmisses\tcold\tpath/proc\tmisses",
		func(tw io.Writer, r Row) {
			fmt.Fprint(tw, r.Workload)
			for _, g := range []pptables.ProcGroup{r.Procs.Dense, r.Procs.Sparse, r.Procs.Cold} {
				fmt.Fprintf(tw, "\t%d\t%.1f\t%s", g.Num, g.PathsPerProc(), pct(g.Misses, r.Procs.Misses))
			}
		})
}
