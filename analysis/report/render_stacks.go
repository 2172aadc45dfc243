package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// WriteText prints a by-caller table: each procedure with its self and
// inclusive samples, then its callers, indented, with their shares of the
// inclusive samples.
func (t *CallerTable) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Call stacks of %s: %d samples\n\n", t.Event, t.Total)
	fmt.Fprintf(&b, "%12s %12s %7s  %s\n", "inclusive", "self", "incl%", "procedure / its callers")
	for _, r := range t.Rows {
		fmt.Fprintf(&b, "%12d %12d %6.2f%%  %s\n", r.Inclusive, r.Self, r.Percent, r.Proc)
		for _, c := range r.Callers {
			fmt.Fprintf(&b, "%12d %12s %6.2f%%      <- %s\n", c.Samples, "", c.Percent, c.Caller)
		}
	}
	if t.Omitted > 0 {
		fmt.Fprintf(&b, "(%d more procedures)\n", t.Omitted)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteText prints the tree indented by depth, each node with its total
// and self samples and its total's share of the root's; nodes under
// minPercent of the root are left out (and counted in a line of their
// parent), and so is everything below maxDepth levels (0: no limit).
func (t *CallTree) WriteText(w io.Writer, minPercent float64, maxDepth int) error {
	root, topDown := t.Root, t.TopDown
	var b strings.Builder
	view := "bottom-up (sampled procedure first, then its callers)"
	if topDown {
		view = "top-down (outermost caller first)"
	}
	fmt.Fprintf(&b, "Call tree, %s: %d samples\n\n", view, root.Total)
	fmt.Fprintf(&b, "%12s %12s %7s  %s\n", "total", "self", "total%", "procedure")
	var walk func(n *TreeNode, depth int)
	walk = func(n *TreeNode, depth int) {
		var hidden, hiddenNodes uint64
		for _, c := range n.Children {
			if share(c.Total, root.Total) < minPercent || maxDepth > 0 && depth >= maxDepth {
				hidden += c.Total
				hiddenNodes++
				continue
			}
			fmt.Fprintf(&b, "%12d %12d %6.2f%%  %s%s\n", c.Total, c.Self, share(c.Total, root.Total), strings.Repeat("  ", depth), c.Proc)
			walk(c, depth+1)
		}
		if hiddenNodes > 0 {
			fmt.Fprintf(&b, "%12d %12s %6.2f%%  %s(%d more)\n", hidden, "", share(hidden, root.Total), strings.Repeat("  ", depth), hiddenNodes)
		}
	}
	walk(root, 0)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes t as one indented JSON object: {"event", "total",
// "rows": [{"proc": {"procedure", "image"}, "self", "inclusive",
// "percent", "callers": [{"caller", "samples", "percent"}]}],
// "omitted_rows"}.
func (t *CallerTable) WriteJSON(w io.Writer) error { return writeIndented(w, t) }

// WriteJSON writes the tree from its root, indented: {"proc":
// {"procedure", "image"}, "total", "self", "children": [...]}.
func (t *CallTree) WriteJSON(w io.Writer) error { return writeIndented(w, t.Root) }

// writeIndented writes v as JSON indented by two spaces, as the reports'
// WriteJSON do.
func writeIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
