package instrument

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"io"
	"slices"
	"strings"

	"dcpi/analysis/cfg"
	"dcpi/analysis/paths"
	"dcpi/hwsim/elfimage"
)

// PathsLabel heads a paths-mode report: the counts are the instrumented
// program's own, unlike the oracle's.
const PathsLabel = "instrumented path profile (dcpi pp instrument --mode paths): counts the program measured itself"

// PathsReport is a paths-mode dump rendered with the oracle report's
// hot-path shape (paths.HotPath); instructions are a path's length times
// its count. Cycles and events are measured only with --metrics (Metrics
// names them; each hot path carries its own).
type PathsReport struct {
	Source       string            `json:"source"`
	ID           string            `json:"id"`
	Metrics      []string          `json:"metrics,omitempty"`
	Records      int               `json:"records"`
	Executions   uint64            `json:"path_executions"`
	HotPaths     []paths.HotPath   `json:"hot_paths"`
	Procs        []paths.ProcRow   `json:"procedures"`
	Special      map[string]uint64 `json:"special"`
	HashOverflow map[string]uint64 `json:"hash_overflow,omitempty"`
	Skipped      int               `json:"procedures_not_counted"`
}

// NewPathsReport ranks pc's paths by count. With the original image
// (original, may be nil) each hot path gets its blocks and source lines,
// and instructions.
func NewPathsReport(pc *PathCounts, original []byte, top int) (*PathsReport, error) {
	rep := &PathsReport{Source: PathsLabel, Records: pc.Records, Special: pc.Special, HashOverflow: pc.HashOverflow, Skipped: len(pc.Manifest.Skipped)}
	if len(pc.Profile.Metrics) > 0 {
		rep.Metrics = pc.Profile.Metrics
	}
	code, lines, err := originalCode(pc, original)
	if err != nil {
		return nil, err
	}
	numbered := map[uint64]*paths.Numbering{}
	number := func(entry uint64) *paths.Numbering {
		if code == nil {
			return nil
		}
		if n, ok := numbered[entry]; ok {
			return n
		}
		var n *paths.Numbering
		if r, err := code.At(entry); err == nil && r.Start == entry {
			if p, err := code.Build(r); err == nil {
				n, _ = paths.Number(p)
			}
		}
		numbered[entry] = n
		return n
	}
	for _, im := range pc.Profile.Images {
		rep.ID = im.ID
		for _, p := range im.Procs {
			row := paths.ProcRow{Proc: p.Name, Entry: p.Entry, Executed: len(p.Paths), NumPaths: p.NumPaths}
			for _, x := range p.Paths {
				rep.Executions += x.Count
				hp := paths.HotPath{Proc: p.Name, Entry: p.Entry, ID: x.ID, Count: x.Count}
				if len(rep.Metrics) > 0 {
					hp.Metrics = x.Metrics
				}
				rep.HotPaths = append(rep.HotPaths, hp)
			}
			rep.Procs = append(rep.Procs, row)
		}
	}
	slices.SortFunc(rep.HotPaths, func(a, b paths.HotPath) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Entry, b.Entry), cmp.Compare(a.ID, b.ID))
	})
	for i := range rep.HotPaths {
		hp := &rep.HotPaths[i]
		n := number(hp.Entry)
		if n == nil || n.NumPaths != procNumPaths(pc, hp.Entry) {
			continue
		}
		blocks, err := n.Blocks(hp.ID)
		if err != nil {
			continue
		}
		var insns uint64
		for _, b := range blocks {
			bl := n.Proc.Blocks[b]
			insns += uint64(bl.Len())
			if i < top {
				if k := len(hp.Blocks); k > 0 && hp.Blocks[k-1].End == bl.Start {
					hp.Blocks[k-1].End = bl.End
					continue
				}
				hp.Blocks = append(hp.Blocks, paths.Block{Start: bl.Start, End: bl.End, Line: lines.At(bl.Start)})
			}
		}
		hp.Instructions = insns * hp.Count
	}
	sumProcInstructions(rep)
	slices.SortFunc(rep.Procs, func(a, b paths.ProcRow) int {
		return cmp.Or(cmp.Compare(b.Executed, a.Executed), cmp.Compare(a.Entry, b.Entry))
	})
	if top > 0 {
		rep.HotPaths = rep.HotPaths[:min(top, len(rep.HotPaths))]
		rep.Procs = rep.Procs[:min(top, len(rep.Procs))]
	}
	return rep, nil
}

// sumProcInstructions gives each procedure the instructions of its paths.
func sumProcInstructions(rep *PathsReport) {
	for i := range rep.Procs {
		r := &rep.Procs[i]
		for _, hp := range rep.HotPaths {
			if hp.Entry == r.Entry {
				r.Instructions += hp.Instructions
			}
		}
	}
}

// originalCode is the original program's code and line table, when
// given (nil otherwise), checked against the manifest's SHA-256.
func originalCode(pc *PathCounts, original []byte) (*cfg.Code, *paths.LineTable, error) {
	if original == nil {
		return nil, nil, nil
	}
	if fmt.Sprintf("%x", sha256.Sum256(original)) != pc.Manifest.Original {
		return nil, nil, fmt.Errorf("--original: not the file this program was instrumented from (SHA-256 differs from the manifest's)")
	}
	im, err := elfimage.Parse(original, "original")
	if err != nil {
		return nil, nil, err
	}
	code, err := cfg.NewCode(im, cfg.Options{})
	if err != nil {
		return nil, nil, err
	}
	return code, paths.NewLineTable(original), nil
}

func procNumPaths(pc *PathCounts, entry uint64) uint64 {
	for _, p := range pc.Manifest.Procs {
		if p.Start == entry {
			return p.NumPaths
		}
	}
	return 0
}

// Write writes the report as text.
func (r *PathsReport) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", r.Source)
	fmt.Fprintf(&b, "image %s: %d records, %d path executions counted; %d procedures not counted (dcpi pp instrument lists them)\n", r.ID, r.Records, r.Executions, r.Skipped)
	fmt.Fprintf(&b, "\nhot paths (top %d by count):\n", len(r.HotPaths))
	fmt.Fprintf(&b, "  %-28s %20s %10s %12s", "procedure", "path", "count", "instructions")
	for _, m := range r.Metrics {
		fmt.Fprintf(&b, " %12s", m)
	}
	b.WriteString("\n")
	for _, hp := range r.HotPaths {
		insns := "-"
		if hp.Instructions > 0 {
			insns = fmt.Sprint(hp.Instructions)
		}
		fmt.Fprintf(&b, "  %-28s %20d %10d %12s", hp.Proc, hp.ID, hp.Count, insns)
		for _, v := range hp.Metrics {
			fmt.Fprintf(&b, " %12d", v)
		}
		b.WriteString("\n")
		for _, bl := range hp.Blocks {
			fmt.Fprintln(&b, strings.TrimRight(fmt.Sprintf("      %#x-%#x %s", bl.Start, bl.End, bl.Line), " "))
		}
	}
	fmt.Fprintf(&b, "\npaths per procedure:\n  %-28s %9s %20s\n", "procedure", "executed", "of")
	for _, p := range r.Procs {
		fmt.Fprintf(&b, "  %-28s %9d %20d\n", p.Proc, p.Executed, p.NumPaths)
	}
	fmt.Fprintf(&b, "\nuncounted paths: %d lost (activations a longjmp skipped), %d out of range, %d stack overflows, %d unmatched exits\n",
		r.Special["lost"], r.Special["out_of_range"], r.Special["stack_overflow"], r.Special["unmatched"])
	names := make([]string, 0, len(r.HashOverflow))
	for n := range r.HashOverflow {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(&b, "  %s: %d path executions found the hash table full\n", n, r.HashOverflow[n])
	}
	_, err := io.WriteString(w, b.String())
	return err
}
