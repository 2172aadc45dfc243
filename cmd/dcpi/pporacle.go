package main

import (
	"bytes"
	"cmp"
	"debug/dwarf"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"dcpi/analysis/cct"
	"dcpi/analysis/oracle"
	"dcpi/hwsim"
	"dcpi/simhost"
	"dcpi/simhost/localrun"
	"dcpi/simhost/simrun"
)

// ppOracleLabel heads every report: the figures are the simulator's.
const ppOracleLabel = "hwsim ground truth (the simulator's transfer observer), not an instrumented profile"

func newPPOracleCommand() *cobra.Command {
	var (
		top      int
		asJSON   bool
		saveFile string
	)
	cmd := &cobra.Command{
		Use:   "oracle [flags] -- PROGRAM [args...]",
		Short: "Run a program on the simulator and print its ground-truth paths and calling context tree",
		Long: `oracle runs PROGRAM (an Alpha ELF file or an embedded workload, as
"dcpi sim run" takes it) on a simulated host and follows every control
transfer it executes (hwsim's transfer observer): a shadow stack per
process, Ball-Larus path numbering of every procedure it enters, and the
calling context tree with calls, instructions and cycles per context. It
prints, labelled as the simulator's ground truth (never an instrumented
profile):

  - the hot paths: the top N by instructions executed, each with its
    procedure, path ID, count, instructions, cycles and blocks (address
    ranges and source lines);
  - paths per procedure (the shape of Ammons, Ball and Larus's Table 5):
    paths executed, of how many, and the procedure's share of
    instructions and cycles;
  - the CCT's statistics (their Table 3) and its top contexts;
  - the oracle's counters (activations whose paths are unknown, kernel
    entries, ...).

Kernel time is charged to no context. The program's output passes
through (to standard error with --json). --save FILE writes the path
counts and the trees in the format docs/paths.md describes, for comparing
an instrumented profile against.`,
		Example: `  dcpi pp oracle -- tiny
  dcpi pp oracle --top 5 -- recurse 1
  dcpi pp oracle --json --save recurse.oracle.json -- recurse 1`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("need a PROGRAM to run (after --)")
			}
			if top < 1 {
				return fmt.Errorf("--top must be at least 1, not %d", top)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			hc, err := programMachineConfig(cmd)
			if err != nil {
				return err
			}
			if asJSON {
				hc.Stdout = cmd.ErrOrStderr()
			}
			return runPPOracle(cmd.OutOrStdout(), hc, args, top, asJSON, saveFile)
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false)
	f.Int("cpus", 1, "number of simulated CPUs")
	f.Uint64("seed", 1, "seed for everything random on the machine")
	f.String("model", "ev5", "CPU model: ev5 (21164), ev56, pca56, ev6, ev67")
	f.Bool("timing", true, "run the timing model: the 21164's, or the 21264's out-of-order core with --model ev6 or ev67 (false: one cycle per instruction)")
	f.IntVar(&top, "top", 10, "hot paths and contexts to print")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON (the program's output goes to standard error)")
	f.StringVar(&saveFile, "save", "", "write the path counts and calling context trees to this file (docs/paths.md)")
	return cmd
}

func runPPOracle(w io.Writer, hc hwsim.Config, args []string, top int, asJSON bool, saveFile string) error {
	p, err := simhost.InstallFile(hc.Files, args[0])
	if err != nil {
		return err
	}
	m, err := hwsim.New(hc)
	if err != nil {
		return err
	}
	o := oracle.New(oracle.FilesResolver(hc.Files))
	o.Attach(m)
	proc, err := m.Spawn(p, append([]string{p}, args[1:]...), []string{"PATH=/bin", "HOME=/", "TERM=dumb", "LANG=C"})
	if err != nil {
		return fmt.Errorf("run %s: %w", p, err)
	}
	m.Run(0)
	o.Finish()
	for path, err := range o.ResolveErrors() {
		fmt.Fprintf(os.Stderr, "dcpi pp oracle: %s: no paths: %v\n", path, err)
	}
	rep := buildPPOracleReport(o, hc.Files, args, top)
	rep.ExitStatus = proc.ExitStatus()
	if saveFile != "" {
		if err := simhost.WriteFileWith(saveFile, o.WriteSaved); err != nil {
			return fmt.Errorf("save: %w", err)
		}
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = rep.render(w)
	}
	if err != nil {
		return err
	}
	if code := localrun.ExitCode(rep.ExitStatus); code != 0 {
		return exitError{code: code}
	}
	return nil
}

type ppOracleReport struct {
	Source     string          `json:"source"`
	Command    []string        `json:"command"`
	ExitStatus int             `json:"exit_status"`
	Images     []ppOracleImage `json:"images"`
	Counters   oracle.Counters `json:"counters"`
	Notes      []string        `json:"notes,omitempty"`
}

type ppOracleImage struct {
	Path         string        `json:"path"`
	ID           string        `json:"id"`
	Instructions uint64        `json:"instructions"`
	Cycles       uint64        `json:"cycles"`
	HotPaths     []ppHotPath   `json:"hot_paths"`
	Procs        []ppProcPaths `json:"procedures"`
	CCT          cct.Stats     `json:"cct_stats"`
	TopContexts  []ppContext   `json:"top_contexts"`
}

type ppHotPath struct {
	Proc         string    `json:"procedure"`
	Entry        uint64    `json:"entry"`
	ID           uint64    `json:"path"`
	Count        uint64    `json:"count"`
	Instructions uint64    `json:"instructions"`
	Cycles       uint64    `json:"cycles"`
	IMiss        uint64    `json:"imiss"`
	DMiss        uint64    `json:"dmiss"`
	Blocks       []ppBlock `json:"blocks"` // address ranges [start, end) in path order
	// Metrics are an instrumented path's own measurements (--metrics),
	// named by the report's metrics.
	Metrics []uint64 `json:"metrics,omitempty"`
}

type ppBlock struct {
	Start uint64 `json:"start"`
	End   uint64 `json:"end"`
	Line  string `json:"line,omitempty"`
}

// ppProcPaths is one row of the Table 5 shape.
type ppProcPaths struct {
	Proc         string  `json:"procedure"`
	Entry        uint64  `json:"entry"`
	Executed     int     `json:"paths_executed"`
	NumPaths     uint64  `json:"paths"` // 0: not numbered
	Unknown      uint64  `json:"unknown_activations,omitempty"`
	Instructions uint64  `json:"instructions"`
	Cycles       uint64  `json:"cycles"`
	InsnShare    float64 `json:"instruction_share"`
	CycleShare   float64 `json:"cycle_share"`
}

type ppContext struct {
	Chain        []string `json:"chain"`
	Calls        uint64   `json:"calls"`
	Instructions uint64   `json:"instructions"`
	Cycles       uint64   `json:"cycles"`
}

func buildPPOracleReport(o *oracle.Oracle, files map[string][]byte, args []string, top int) *ppOracleReport {
	rep := &ppOracleReport{Source: ppOracleLabel, Command: args, Counters: o.Counters, Notes: o.Notes}
	for _, path := range o.ImagePaths() {
		im := o.Images[path]
		lines := newLineTable(files[path])
		tot := im.Tree.Totals()
		ri := ppOracleImage{Path: path, ID: im.ID, Instructions: tot[1], Cycles: tot[2]}
		name := func(entry uint64) string {
			if p := im.Procs[entry]; p != nil && p.Name != "" {
				return p.Name
			}
			return fmt.Sprintf("%#x", entry)
		}
		for _, p := range im.SortedProcs() {
			row := ppProcPaths{Proc: p.Name, Entry: p.Entry, Executed: len(p.Paths), Unknown: p.Unknown, Instructions: p.UnknownIns}
			if p.Numbering != nil {
				row.NumPaths = p.Numbering.NumPaths
			}
			for id, s := range p.Paths {
				row.Instructions += s.Instructions
				row.Cycles += s.Cycles
				hp := ppHotPath{Proc: p.Name, Entry: p.Entry, ID: id, Count: s.Count, Instructions: s.Instructions, Cycles: s.Cycles, IMiss: s.IMiss, DMiss: s.DMiss}
				ri.HotPaths = append(ri.HotPaths, hp)
			}
			if row.Executed == 0 && row.Unknown == 0 {
				continue
			}
			row.InsnShare = share(row.Instructions, tot[1])
			row.CycleShare = share(row.Cycles, tot[2])
			ri.Procs = append(ri.Procs, row)
		}
		slices.SortFunc(ri.HotPaths, func(a, b ppHotPath) int {
			return cmp.Or(cmp.Compare(b.Instructions, a.Instructions), cmp.Compare(a.Entry, b.Entry), cmp.Compare(a.ID, b.ID))
		})
		ri.HotPaths = ri.HotPaths[:min(top, len(ri.HotPaths))]
		for i := range ri.HotPaths {
			hp := &ri.HotPaths[i]
			p := im.Procs[hp.Entry]
			blocks, _ := p.Numbering.Blocks(hp.ID)
			// Blocks in path order, consecutive ones in one range.
			for _, b := range blocks {
				bl := p.CFG.Blocks[b]
				if n := len(hp.Blocks); n > 0 && hp.Blocks[n-1].End == bl.Start {
					hp.Blocks[n-1].End = bl.End
					continue
				}
				hp.Blocks = append(hp.Blocks, ppBlock{Start: bl.Start, End: bl.End, Line: lines.at(bl.Start)})
			}
		}
		slices.SortFunc(ri.Procs, func(a, b ppProcPaths) int {
			return cmp.Or(cmp.Compare(b.Instructions, a.Instructions), cmp.Compare(a.Entry, b.Entry))
		})
		ri.CCT = im.Tree.Stats(cct.Layout{
			CallSites: func(proc uint64) int {
				if p := im.Procs[proc]; p != nil && p.CFG != nil {
					return len(p.CFG.Calls)
				}
				return -1
			},
			PathReaches: func(proc, id, site uint64) bool {
				p := im.Procs[proc]
				if p == nil || p.Numbering == nil {
					return false
				}
				sb, ok := p.CFG.BlockOf(site)
				blocks, err := p.Numbering.Blocks(id)
				return ok && err == nil && slices.Contains(blocks, sb)
			},
		})
		ri.TopContexts = topContexts(im.Tree, name, top)
		rep.Images = append(rep.Images, ri)
	}
	return rep
}

func share(x, of uint64) float64 {
	if of == 0 {
		return 0
	}
	return float64(x) / float64(of)
}

// topContexts returns the n records with the most instructions of their
// own, each with its chain of procedures from the root.
func topContexts(t *cct.Tree, name func(uint64) string, n int) []ppContext {
	var nodes []*cct.Node
	t.Walk(func(x *cct.Node) {
		if x != t.Root {
			nodes = append(nodes, x)
		}
	})
	sort.SliceStable(nodes, func(i, j int) bool { return nodes[i].Metrics[1] > nodes[j].Metrics[1] })
	var out []ppContext
	for _, x := range nodes[:min(n, len(nodes))] {
		var chain []string
		for a := x; a != nil && a != t.Root; a = a.Parent {
			chain = append(chain, name(a.Proc))
		}
		slices.Reverse(chain)
		out = append(out, ppContext{Chain: chain, Calls: x.Metrics[0], Instructions: x.Metrics[1], Cycles: x.Metrics[2]})
	}
	return out
}

func (r *ppOracleReport) render(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n# command: %s (exit status %d)\n", r.Source, strings.Join(r.Command, " "), localrun.ExitCode(r.ExitStatus))
	for _, im := range r.Images {
		fmt.Fprintf(&b, "\nimage %s (%s): %d instructions, %d cycles in user code\n", im.Path, im.ID, im.Instructions, im.Cycles)
		fmt.Fprintf(&b, "\nhot paths (top %d by instructions):\n", len(im.HotPaths))
		fmt.Fprintf(&b, "  %-28s %8s %10s %12s %12s %6s %9s %9s\n", "procedure", "path", "count", "instructions", "cycles", "CPI", "imiss", "dmiss")
		for _, hp := range im.HotPaths {
			fmt.Fprintf(&b, "  %-28s %8d %10d %12d %12d %6s %9d %9d\n", hp.Proc, hp.ID, hp.Count, hp.Instructions, hp.Cycles, simrun.CPI(hp.Cycles, hp.Instructions), hp.IMiss, hp.DMiss)
			for _, bl := range hp.Blocks {
				fmt.Fprintln(&b, strings.TrimRight(fmt.Sprintf("      %#x-%#x %s", bl.Start, bl.End, bl.Line), " "))
			}
		}
		fmt.Fprintf(&b, "\npaths per procedure:\n  %-28s %9s %12s %7s %7s %s\n", "procedure", "executed", "of", "%insns", "%cycles", "unknown activations")
		for _, p := range im.Procs {
			of := fmt.Sprint(p.NumPaths)
			if p.NumPaths == 0 {
				of = "unnumbered"
			}
			fmt.Fprintf(&b, "  %-28s %9d %12s %6.2f%% %6.2f%% %d\n", p.Proc, p.Executed, of, 100*p.InsnShare, 100*p.CycleShare, p.Unknown)
		}
		s := im.CCT
		fmt.Fprintf(&b, "\ncalling context tree (Table 3): %d records, %d bytes (%.1f per record), out-degree %.2f, height avg %.1f max %d, max replication %d, call sites %d/%d used, %d on one path\n",
			s.Nodes, s.Size, s.AvgNodeSize, s.AvgOutDegree, s.HeightAvg, s.HeightMax, s.MaxReplication, s.CallSitesUsed, s.CallSitesAll, s.CallSitesOnePath)
		fmt.Fprintf(&b, "\ntop contexts (by own instructions):\n  %8s %12s %12s  %s\n", "calls", "instructions", "cycles", "context")
		for _, c := range im.TopContexts {
			fmt.Fprintf(&b, "  %8d %12d %12d  %s\n", c.Calls, c.Instructions, c.Cycles, strings.Join(c.Chain, " > "))
		}
	}
	c := r.Counters
	fmt.Fprintf(&b, "\noracle counters: %d kernel entries, %d activations with unknown paths, %d entered mid-procedure, %d instructions outside procedures, %d unwound frames, %d longjmps, %d restarted system calls, %d unmatched returns, %d unexpected resumes, %d inconsistencies\n",
		c.KernelEntries, c.UnknownActivations, c.EnteredMidProcedure, c.UnknownCode, c.Unwound, c.Longjmps, c.RestartedSyscalls, c.UnmatchedReturns, c.UnexpectedResumes, c.Inconsistent)
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// lineTable maps addresses to source lines from an image's DWARF, when
// it has any.
type lineTable struct {
	addrs []uint64
	lines []string
}

func newLineTable(data []byte) *lineTable {
	t := &lineTable{}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return t
	}
	d, err := f.DWARF()
	if err != nil {
		return t
	}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		lr, err := d.LineReader(e)
		if err != nil || lr == nil {
			continue
		}
		var le dwarf.LineEntry
		for lr.Next(&le) == nil {
			line := "" // past a sequence's end: no line (glibc has no DWARF)
			if !le.EndSequence && le.File != nil {
				line = fmt.Sprintf("%s:%d", baseName(le.File.Name), le.Line)
			}
			t.addrs = append(t.addrs, le.Address)
			t.lines = append(t.lines, line)
		}
	}
	idx := make([]int, len(t.addrs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return t.addrs[idx[a]] < t.addrs[idx[b]] })
	addrs, lines := make([]uint64, len(idx)), make([]string, len(idx))
	for i, j := range idx {
		addrs[i], lines[i] = t.addrs[j], t.lines[j]
	}
	t.addrs, t.lines = addrs, lines
	return t
}

// at returns the line of the last entry at or before addr ("" if none).
func (t *lineTable) at(addr uint64) string {
	i := sort.Search(len(t.addrs), func(i int) bool { return t.addrs[i] > addr }) - 1
	if i < 0 {
		return ""
	}
	return t.lines[i]
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}
