package oracle

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"dcpi/analysis/cct"
	"dcpi/analysis/paths"
	"dcpi/hwsim"
)

// Label heads every report: the figures are the simulator's.
const Label = "hwsim ground truth (the simulator's transfer observer), not an instrumented profile"

// Report is dcpi pp oracle's report of a run: per image its hot paths,
// its paths per procedure and its calling context tree's shape and top
// contexts, and the oracle's counters.
type Report struct {
	Source     string        `json:"source"`
	Command    []string      `json:"command"`
	ExitStatus int           `json:"exit_status"`
	Images     []ReportImage `json:"images"`
	Counters   Counters      `json:"counters"`
	Notes      []string      `json:"notes,omitempty"`
}

// ReportImage is one image's part of a Report.
type ReportImage struct {
	Path         string          `json:"path"`
	ID           string          `json:"id"`
	Instructions uint64          `json:"instructions"`
	Cycles       uint64          `json:"cycles"`
	HotPaths     []paths.HotPath `json:"hot_paths"`
	Procs        []paths.ProcRow `json:"procedures"`
	CCT          cct.Stats       `json:"cct_stats"`
	TopContexts  []Context       `json:"top_contexts"`
}

// Context is one calling context: its chain of procedures from the
// root and its own metrics.
type Context struct {
	Chain        []string `json:"chain"`
	Calls        uint64   `json:"calls"`
	Instructions uint64   `json:"instructions"`
	Cycles       uint64   `json:"cycles"`
}

// NewReport is the report of the run o observed: command args, the
// programs' files (for their source lines), the top hot paths and
// contexts per image.
func NewReport(o *Oracle, files map[string][]byte, args []string, top int) *Report {
	rep := &Report{Source: Label, Command: args, Counters: o.Counters, Notes: o.Notes}
	for _, path := range o.ImagePaths() {
		im := o.Images[path]
		lines := paths.NewLineTable(files[path])
		tot := im.Tree.Totals()
		ri := ReportImage{Path: path, ID: im.ID, Instructions: tot[1], Cycles: tot[2]}
		name := func(entry uint64) string {
			if p := im.Procs[entry]; p != nil && p.Name != "" {
				return p.Name
			}
			return fmt.Sprintf("%#x", entry)
		}
		for _, p := range im.SortedProcs() {
			row := paths.ProcRow{Proc: p.Name, Entry: p.Entry, Executed: len(p.Paths), Unknown: p.Unknown, Instructions: p.UnknownIns}
			if p.Numbering != nil {
				row.NumPaths = p.Numbering.NumPaths
			}
			for id, s := range p.Paths {
				row.Instructions += s.Instructions
				row.Cycles += s.Cycles
				hp := paths.HotPath{Proc: p.Name, Entry: p.Entry, ID: id, Count: s.Count, Instructions: s.Instructions, Cycles: s.Cycles, IMiss: s.IMiss, DMiss: s.DMiss}
				ri.HotPaths = append(ri.HotPaths, hp)
			}
			if row.Executed == 0 && row.Unknown == 0 {
				continue
			}
			row.InsnShare = paths.Share(row.Instructions, tot[1])
			row.CycleShare = paths.Share(row.Cycles, tot[2])
			ri.Procs = append(ri.Procs, row)
		}
		slices.SortFunc(ri.HotPaths, func(a, b paths.HotPath) int {
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
				hp.Blocks = append(hp.Blocks, paths.Block{Start: bl.Start, End: bl.End, Line: lines.At(bl.Start)})
			}
		}
		slices.SortFunc(ri.Procs, func(a, b paths.ProcRow) int {
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

// topContexts returns the n records with the most instructions of their
// own, each with its chain of procedures from the root.
func topContexts(t *cct.Tree, name func(uint64) string, n int) []Context {
	var nodes []*cct.Node
	t.Walk(func(x *cct.Node) {
		if x != t.Root {
			nodes = append(nodes, x)
		}
	})
	sort.SliceStable(nodes, func(i, j int) bool { return nodes[i].Metrics[1] > nodes[j].Metrics[1] })
	var out []Context
	for _, x := range nodes[:min(n, len(nodes))] {
		var chain []string
		for a := x; a != nil && a != t.Root; a = a.Parent {
			chain = append(chain, name(a.Proc))
		}
		slices.Reverse(chain)
		out = append(out, Context{Chain: chain, Calls: x.Metrics[0], Instructions: x.Metrics[1], Cycles: x.Metrics[2]})
	}
	return out
}

// Write writes the report as text.
func (r *Report) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n# command: %s (exit status %d)\n", r.Source, strings.Join(r.Command, " "), hwsim.ExitCode(r.ExitStatus))
	for _, im := range r.Images {
		fmt.Fprintf(&b, "\nimage %s (%s): %d instructions, %d cycles in user code\n", im.Path, im.ID, im.Instructions, im.Cycles)
		fmt.Fprintf(&b, "\nhot paths (top %d by instructions):\n", len(im.HotPaths))
		fmt.Fprintf(&b, "  %-28s %8s %10s %12s %12s %6s %9s %9s\n", "procedure", "path", "count", "instructions", "cycles", "CPI", "imiss", "dmiss")
		for _, hp := range im.HotPaths {
			fmt.Fprintf(&b, "  %-28s %8d %10d %12d %12d %6s %9d %9d\n", hp.Proc, hp.ID, hp.Count, hp.Instructions, hp.Cycles, cpi(hp.Cycles, hp.Instructions), hp.IMiss, hp.DMiss)
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

func cpi(cycles, insns uint64) string {
	if insns == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(cycles)/float64(insns))
}

// Run runs the program at path (installed in hc.Files) with argv to its
// end on a machine hc describes, observed by an oracle that resolves
// images from hc.Files, and returns the oracle and the process. Images
// it could not number paths in are named on warn.
func Run(hc hwsim.Config, path string, argv []string, warn io.Writer) (*Oracle, *hwsim.Process, error) {
	m, err := hwsim.New(hc)
	if err != nil {
		return nil, nil, err
	}
	o := New(FilesResolver(hc.Files))
	o.Attach(m)
	proc, err := m.Spawn(path, argv, []string{"PATH=/bin", "HOME=/", "TERM=dumb", "LANG=C"})
	if err != nil {
		return nil, nil, fmt.Errorf("run %s: %w", path, err)
	}
	m.Run(0)
	o.Finish()
	for image, err := range o.ResolveErrors() {
		fmt.Fprintf(warn, "dcpi pp oracle: %s: no paths: %v\n", image, err)
	}
	return o, proc, nil
}
