package cct

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
)

// RenderOptions shape Render's text.
type RenderOptions struct {
	// Metric orders each record's children (largest inclusive value
	// first) and Top keeps that many of them (0: all).
	Metric int
	Top    int
	// Name names a procedure; nil prints its address.
	Name func(proc uint64) string
}

// Inclusive returns n's metric i summed over n and its tree descendants.
func (n *Node) Inclusive(i int) uint64 {
	v := n.Metrics[i]
	for _, c := range n.Children {
		v += c.Inclusive(i)
	}
	return v
}

// Render writes t as an indented tree, one record a line: the procedure,
// the call site, every metric (self, and inclusive for the ordering
// metric) and the paths run; recursive calls as "-> name (recursion)".
// The output depends only on the tree and the options.
func (t *Tree) Render(w io.Writer, o RenderOptions) error {
	if o.Metric < 0 || o.Metric >= len(t.Metrics) && len(t.Metrics) > 0 {
		return fmt.Errorf("cct: render by metric %d of %d", o.Metric, len(t.Metrics))
	}
	name := o.Name
	if name == nil {
		name = func(p uint64) string { return fmt.Sprintf("%#x", p) }
	}
	incl := map[*Node]uint64{}
	var fill func(n *Node) uint64
	fill = func(n *Node) uint64 {
		var v uint64
		if len(t.Metrics) > 0 {
			v = n.Metrics[o.Metric]
		}
		for _, c := range n.Children {
			v += fill(c)
		}
		incl[n] = v
		return v
	}
	fill(t.Root)
	var b strings.Builder
	var walk func(n *Node, depth int)
	walk = func(n *Node, depth int) {
		b.Reset()
		b.WriteString(strings.Repeat("  ", depth))
		if n == t.Root {
			b.WriteString("T")
		} else {
			b.WriteString(name(n.Proc))
			if n.CallSite != 0 {
				fmt.Fprintf(&b, " @%#x", n.CallSite)
			}
		}
		for i, m := range t.Metrics {
			fmt.Fprintf(&b, " %s=%d", m, n.Metrics[i])
		}
		if len(t.Metrics) > 0 {
			fmt.Fprintf(&b, " incl.%s=%d", t.Metrics[o.Metric], incl[n])
		}
		if len(n.Paths) > 0 {
			fmt.Fprintf(&b, " paths=%d", len(n.Paths))
		}
		fmt.Fprintln(w, b.String())
		rec := slices.Clone(n.Recursive)
		slices.SortFunc(rec, func(a, c Backedge) int {
			return cmp.Or(cmp.Compare(a.CallSite, c.CallSite), cmp.Compare(a.To.depth, c.To.depth))
		})
		for _, r := range rec {
			fmt.Fprintf(w, "%s-> %s @%#x (recursion)\n", strings.Repeat("  ", depth+1), name(r.To.Proc), r.CallSite)
		}
		kids := n.Sorted()
		slices.SortStableFunc(kids, func(a, c *Node) int { return cmp.Compare(incl[c], incl[a]) })
		if o.Top > 0 && len(kids) > o.Top {
			hidden := kids[o.Top:]
			kids = kids[:o.Top]
			var rest uint64
			for _, k := range hidden {
				rest += incl[k]
			}
			defer fmt.Fprintf(w, "%s(%d more, incl.%s=%d)\n", strings.Repeat("  ", depth+1), len(hidden), t.metricName(o.Metric), rest)
		}
		for _, c := range kids {
			walk(c, depth+1)
		}
	}
	walk(t.Root, 0)
	return nil
}

func (t *Tree) metricName(i int) string {
	if i < len(t.Metrics) {
		return t.Metrics[i]
	}
	return "?"
}
