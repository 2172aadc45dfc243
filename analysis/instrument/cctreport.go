package instrument

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"dcpi/analysis/cct"
	"dcpi/analysis/cfg"
	"dcpi/analysis/paths"
	"dcpi/hwsim/elfimage"
)

// CCTLabel heads a CCT-mode report: the tree is the one the instrumented
// program built itself, unlike the oracle's.
const CCTLabel = "instrumented calling context tree (dcpi pp instrument --mode cct): contexts the program built itself"

// CCTReport is a CCT-mode dump: the paper's Table 3 of the tree, the
// named counters, and the tree.
type CCTReport struct {
	Source   string `json:"source"`
	ID       string `json:"id"`
	Records  int    `json:"records"`
	Contexts int    `json:"contexts"`
	Calls    uint64 `json:"calls"`
	// Metrics names each record's metrics (calls; with --metrics cycles
	// and two events, the record's own) and Totals sums them over the
	// tree.
	Metrics   []string          `json:"metrics"`
	Totals    []uint64          `json:"totals"`
	Stats     cct.Stats         `json:"cct_stats"`
	HeapBytes uint64            `json:"heap_bytes"`
	Chunks    int               `json:"heap_chunks"`
	Special   map[string]uint64 `json:"special"`
	Unreached int               `json:"unreached_records"`
	Skipped   int               `json:"procedures_not_instrumented"`
	Tree      json.RawMessage   `json:"tree"`
	// With --mode cct --paths (Context+Flow): the paths run, the
	// (context, path) pairs counted, the hottest of them, and whether
	// Stats.CallSitesOnePath was computed (it needs --original).
	Paths     bool          `json:"paths,omitempty"`
	PathRuns  uint64        `json:"path_runs,omitempty"`
	PathPairs int           `json:"context_paths,omitempty"`
	HotPaths  []ContextPath `json:"hot_context_paths,omitempty"`
	OnePath   bool          `json:"one_path_computed,omitempty"`

	tree *cct.Tree
	name func(uint64) string
}

// ContextPath is one path's count in one calling context.
type ContextPath struct {
	Context string `json:"context"` // the chain of procedures from the root
	Proc    string `json:"proc"`
	ID      uint64 `json:"id"`
	Count   uint64 `json:"count"`
}

// NewCCTReport builds the report of p; with paths, top hot (context,
// path) pairs, and with the original image (may be nil) Table 3's One
// Path column.
func NewCCTReport(p *CCTProfile, original []byte, top int) (*CCTReport, error) {
	m := p.Manifest
	names := map[uint64]string{}
	sites := map[uint64]int{}
	for _, pi := range m.Procs {
		names[pi.Start] = pi.Name
		sites[pi.Start] = len(pi.CallSites)
	}
	rep := &CCTReport{Source: CCTLabel, ID: m.ImageID(), Records: p.Records, HeapBytes: p.HeapBytes, Chunks: p.Chunks,
		Special: p.Special, Unreached: p.Unreached, Skipped: len(m.Skipped), tree: p.Tree}
	rep.name = func(a uint64) string { return paths.ProcName(names[a], a) }
	layout := cct.Layout{CallSites: func(proc uint64) int {
		if k, ok := sites[proc]; ok {
			return k
		}
		return -1
	}}
	if m.CCTPaths && original != nil {
		reaches, err := pathReaches(m, original)
		if err != nil {
			return nil, err
		}
		layout.PathReaches, rep.OnePath = reaches, true
	}
	rep.Stats = p.Tree.Stats(layout)
	if m.CCTPaths {
		rep.Paths = true
		chain := map[*cct.Node]string{p.Tree.Root: ""}
		p.Tree.Walk(func(n *cct.Node) {
			if n == p.Tree.Root {
				return
			}
			chain[n] = chain[n.Parent] + "/" + rep.name(n.Proc)
			for id, c := range n.Paths {
				rep.PathRuns += c
				rep.PathPairs++
				rep.HotPaths = append(rep.HotPaths, ContextPath{Context: chain[n], Proc: rep.name(n.Proc), ID: id, Count: c})
			}
		})
		slices.SortFunc(rep.HotPaths, func(a, b ContextPath) int {
			return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Context, b.Context), cmp.Compare(a.ID, b.ID))
		})
		if top > 0 && len(rep.HotPaths) > top {
			rep.HotPaths = rep.HotPaths[:top]
		}
	}
	rep.Contexts = rep.Stats.Nodes
	rep.Metrics, rep.Totals = p.Tree.Metrics, p.Tree.Totals()
	if i := p.Tree.Metric("calls"); i >= 0 {
		rep.Calls = rep.Totals[i]
	}
	tb, err := p.Tree.MarshalJSON()
	if err != nil {
		return nil, err
	}
	rep.Tree = tb
	return rep, nil
}

// render prints the report, each record's children ordered by the
// inclusive value of metric by ("": calls).
// Write writes the report as text, each record's children ordered by
// the inclusive value of metric by (default calls).
func (r *CCTReport) Write(w io.Writer, by string, top int) error {
	order := 0
	if by != "" {
		if order = r.tree.Metric(by); order < 0 {
			return fmt.Errorf("--by %s: the tree's metrics are %s", by, strings.Join(r.tree.Metrics, ", "))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", r.Source)
	fmt.Fprintf(&b, "image %s: %d records (processes), %d contexts, %d calls; %d procedures not instrumented (dcpi pp instrument lists them)\n",
		r.ID, r.Records, r.Contexts, r.Calls, r.Skipped)
	if len(r.Metrics) > 1 {
		b.WriteString("metrics per context, each record's own (callees excluded; hwsim's rdpic and rpcc): totals")
		for i, m := range r.Metrics {
			fmt.Fprintf(&b, " %s=%d", m, r.Totals[i])
		}
		b.WriteString("\n")
	}
	s := r.Stats
	fmt.Fprintf(&b, "\ncalling context tree (Table 3): %d records, %d bytes (%.1f per record), out-degree %.2f, height avg %.1f max %d, max replication %d (%s), call sites %d/%d used\n",
		s.Nodes, s.Size, s.AvgNodeSize, s.AvgOutDegree, s.HeightAvg, s.HeightMax, s.MaxReplication, r.name(s.MaxReplicated), s.CallSitesUsed, s.CallSitesAll)
	if r.Paths {
		if r.OnePath {
			fmt.Fprintf(&b, "call sites used whose callee ran through exactly one path of the caller in its context (One Path): %d of %d\n", s.CallSitesOnePath, s.CallSitesUsed)
		} else {
			b.WriteString("One Path (call sites reached by exactly one path in their context): give --original to compute it\n")
		}
	}
	fmt.Fprintf(&b, "run-time heap: %d bytes in %d chunks (the largest process's)\n", r.HeapBytes, r.Chunks)
	if r.Paths {
		fmt.Fprintf(&b, "\npaths per context (Context+Flow): %d paths run, %d (context, path) pairs; the hottest:\n", r.PathRuns, r.PathPairs)
		for _, h := range r.HotPaths {
			fmt.Fprintf(&b, "%12d  path %-6d %s\n", h.Count, h.ID, h.Context)
		}
	}
	fmt.Fprintf(&b, "\ncontexts (children by inclusive %s, top %d per record):\n", r.tree.Metrics[order], top)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	b.Reset()
	if err := r.tree.Render(w, cct.RenderOptions{Metric: order, Top: top, Name: r.name}); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\nnot in the tree: %d activations lost (a longjmp skipped their exits), %d unmatched exits, %d stack overflows, %d contexts the exhausted heap charged to their caller, %d records unreached\n",
		r.Special["lost"], r.Special["unmatched"], r.Special["stack_overflow"], r.Special["heap_exhausted"], r.Unreached)
	if r.Paths {
		fmt.Fprintf(&b, "paths not counted: %d path sums out of range (the lost activations' and exhausted heap's paths are in the counts above)\n", r.Special["out_of_range"])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// pathReaches reports, from the original image (the one m was
// instrumented from), whether path id of the procedure at proc runs
// through the block of the call at callSite, numbering the procedure as
// the instrumenter did.
func pathReaches(m *Manifest, original []byte) (func(proc, id, callSite uint64) bool, error) {
	if fmt.Sprintf("%x", sha256.Sum256(original)) != m.Original {
		return nil, fmt.Errorf("--original: not the file this program was instrumented from (SHA-256 differs from the manifest's)")
	}
	im, err := elfimage.Parse(original, "original")
	if err != nil {
		return nil, err
	}
	code, err := cfg.NewCode(im, cfg.Options{})
	if err != nil {
		return nil, err
	}
	type numbered struct {
		p *cfg.Proc
		n *paths.Numbering
	}
	cache := map[uint64]*numbered{}
	return func(proc, id, site uint64) bool {
		x, ok := cache[proc]
		if !ok {
			x = &numbered{}
			if r, err := code.At(proc); err == nil && r.Start == proc {
				if p, err := code.Build(r); err == nil {
					if n, err := paths.Number(p); err == nil {
						x.p, x.n = p, n
					}
				}
			}
			cache[proc] = x
		}
		if x.n == nil {
			return false
		}
		sb, ok := x.p.BlockOf(site)
		blocks, err := x.n.Blocks(id)
		return ok && err == nil && slices.Contains(blocks, sb)
	}, nil
}
