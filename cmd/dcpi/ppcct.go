package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"dcpi/analysis/cct"
	"dcpi/analysis/instrument"
)

// ppCCTLabel heads a CCT-mode report: the tree is the one the instrumented
// program built itself, unlike the oracle's.
const ppCCTLabel = "instrumented calling context tree (dcpi pp instrument --mode cct): contexts the program built itself"

// ppCCTReport is a CCT-mode dump: the paper's Table 3 of the tree, the
// named counters, and the tree.
type ppCCTReport struct {
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

	tree *cct.Tree
	name func(uint64) string
}

func buildPPCCTReport(p *instrument.CCTProfile) (*ppCCTReport, error) {
	m := p.Manifest
	names := map[uint64]string{}
	sites := map[uint64]int{}
	for _, pi := range m.Procs {
		names[pi.Start] = pi.Name
		sites[pi.Start] = len(pi.CallSites)
	}
	rep := &ppCCTReport{Source: ppCCTLabel, ID: m.ImageID(), Records: p.Records, HeapBytes: p.HeapBytes, Chunks: p.Chunks,
		Special: p.Special, Unreached: p.Unreached, Skipped: len(m.Skipped), tree: p.Tree}
	rep.name = func(a uint64) string { return procName(names[a], a) }
	rep.Stats = p.Tree.Stats(cct.Layout{CallSites: func(proc uint64) int {
		if k, ok := sites[proc]; ok {
			return k
		}
		return -1
	}})
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
func (r *ppCCTReport) render(w io.Writer, by string, top int) error {
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
	fmt.Fprintf(&b, "run-time heap: %d bytes in %d chunks (the largest process's)\n", r.HeapBytes, r.Chunks)
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
	_, err := io.WriteString(w, b.String())
	return err
}

// printCCTCounts prints a CCT-mode dump (dcpi pp counts); save writes the
// tree (instrument.CCTProfile.WriteSaved) for dcpi pp upload.
func printCCTCounts(w io.Writer, bin, dump []byte, save, by string, top int, asJSON bool) error {
	p, err := instrument.ReadCCT(bin, dump)
	if err != nil {
		return err
	}
	rep, err := buildPPCCTReport(p)
	if err != nil {
		return err
	}
	if by != "" && p.Tree.Metric(by) < 0 {
		return fmt.Errorf("--by %s: the tree's metrics are %s", by, strings.Join(p.Tree.Metrics, ", "))
	}
	if save != "" {
		if err := writeFileWith(save, p.WriteSaved); err != nil {
			return fmt.Errorf("save: %w", err)
		}
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.render(w, by, top)
}
