package web

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	"dcpi/analysis/report"
)

// box is one frame of a flame graph or icicle: a node of the call tree at
// its depth, spanning [X, X+W) of the drawn width (fractions of 1: of the
// root's samples, or of the focused node's when zoomed).
type box struct {
	Depth int
	X, W  float64
	Proc  report.StackProc
	Total uint64
	Self  uint64
	Pct   float64 // Total, percent of the root's (zoomed or not)
	Hue   int     // the procedure's colour, stable across pages
	// Key names the box's path from the root (pathKey), the same for the
	// same path in two trees (the differential flame graph's match).
	Key string
	// Path is the procedures from the root's child down to this box, the
	// page's focus= to zoom on it (nil for the root).
	Path []string
	// Ancestor: a box above the focused one, drawn the full width.
	Ancestor bool
}

// pathKey is the key of proc's node under the node keyed parent.
func pathKey(parent string, proc report.StackProc) string {
	return parent + "\x00" + proc.Procedure + "\x01" + proc.Image
}

// focusSep separates a focus path's procedures, as folded stacks do.
const focusSep = ";"

// flameFocus follows focus, procedure names from the root's child down,
// to the node it names: the chain root..node. At each level the child
// with the most samples of that name is taken. A name no child has ends
// the walk: ok is false and the chain stops at the last node found, so a
// stale link (the profile moved on) still draws the nearest zoom.
func flameFocus(root *report.TreeNode, focus []string) (chain []*report.TreeNode, ok bool) {
	chain = []*report.TreeNode{root}
	n := root
	for _, name := range focus {
		var next *report.TreeNode
		for _, c := range n.Children {
			if c.Proc.Procedure == name && (next == nil || c.Total > next.Total) {
				next = c
			}
		}
		if next == nil {
			return chain, false
		}
		chain, n = append(chain, next), next
	}
	return chain, true
}

// flameLayout lays out the call tree below root, depth first: every node
// whose samples are at least minFrac of the root's, at most maxDepth
// levels below it (the root itself is depth 0). Children sit side by side
// under their parent in the tree's order (largest first), so a box's
// width is its share of the samples and its children never overhang it.
func flameLayout(root *report.TreeNode, minFrac float64, maxDepth int) (boxes []box, depth int) {
	return flameLayoutChain([]*report.TreeNode{root}, minFrac, maxDepth)
}

// flameLayoutChain is flameLayout zoomed on the chain's last node (from
// flameFocus): the chain's other nodes are drawn above it the full
// width, as ancestors; the focused node's subtree fills the width, each
// box's width its share of the focused node's samples and minFrac a
// fraction of them; every box's Pct stays a share of the root's.
func flameLayoutChain(chain []*report.TreeNode, minFrac float64, maxDepth int) (boxes []box, depth int) {
	root, focus := chain[0], chain[len(chain)-1]
	if root == nil || root.Total == 0 || focus.Total == 0 {
		return nil, 0
	}
	rootTotal, total := float64(root.Total), float64(focus.Total)
	key, path := "", []string(nil)
	for d, n := range chain[:len(chain)-1] {
		if d > 0 {
			path = append(slices.Clip(path), n.Proc.Procedure)
		}
		key = pathKey(key, n.Proc)
		boxes = append(boxes, box{Depth: d, X: 0, W: 1, Proc: n.Proc, Total: n.Total, Self: n.Self, Pct: 100 * float64(n.Total) / rootTotal,
			Hue: hue(n.Proc.Procedure), Key: key, Path: path, Ancestor: true})
	}
	var walk func(n *report.TreeNode, d int, x float64, parent string, path []string)
	walk = func(n *report.TreeNode, d int, x float64, parent string, path []string) {
		w := float64(n.Total) / total
		k := pathKey(parent, n.Proc)
		boxes = append(boxes, box{Depth: d, X: x, W: w, Proc: n.Proc, Total: n.Total, Self: n.Self, Pct: 100 * float64(n.Total) / rootTotal,
			Hue: hue(n.Proc.Procedure), Key: k, Path: path})
		depth = max(depth, d)
		if d == maxDepth {
			return
		}
		for _, c := range n.Children {
			if float64(c.Total)/total >= minFrac {
				walk(c, d+1, x, k, append(slices.Clip(path), c.Proc.Procedure))
			}
			x += float64(c.Total) / total
		}
	}
	if len(chain) > 1 {
		path = append(slices.Clip(path), focus.Proc.Procedure)
	}
	walk(focus, len(chain)-1, 0, key, path)
	return boxes, depth
}

// matchedSamples is the samples of the tree's nodes whose procedure
// contains needle (lowercase), a node under a matching one not counted
// again: the share a search highlights, over the whole tree, not just
// the boxes drawn.
func matchedSamples(n *report.TreeNode, needle string) uint64 {
	if strings.Contains(strings.ToLower(n.Proc.Procedure), needle) {
		return n.Total
	}
	var sum uint64
	for _, c := range n.Children {
		sum += matchedSamples(c, needle)
	}
	return sum
}

// flatTree is the call tree of a profile without stacks: the root and one
// child per row, so the flame graph shows the flat profile's shares.
func flatTree(t *report.ProfTable) *report.TreeNode {
	root := &report.TreeNode{Proc: report.StackProc{Procedure: "[all]"}}
	if len(t.Columns) == 0 {
		return root
	}
	root.Total = t.Columns[0].Total
	for _, r := range t.Rows {
		root.Children = append(root.Children, &report.TreeNode{Proc: report.StackProc{Procedure: r.Procedure, Image: r.Image},
			Total: r.Counts[0], Self: r.Counts[0]})
	}
	return root
}

// hue gives a procedure name a warm colour (0-60 degrees, flame graphs'
// palette), the same on every page.
func hue(name string) int {
	return int(hash32(name) % 55)
}

func hash32(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

// imageHues are the hues images are coloured by, far apart so that
// neighbouring images stay told apart; more images than hues repeat
// them, in the order of their samples.
var imageHues = []int{28, 205, 120, 275, 48, 175, 340, 90, 230, 0}

// imagePalette gives each image of the boxes a hue, the image with the
// most samples (its boxes' own, Self) the first, and lists them for the
// legend.
func imagePalette(boxes []box) (map[string]int, []legendEntry) {
	self := map[string]uint64{}
	var total uint64
	for _, b := range boxes {
		if !b.Ancestor {
			self[b.Proc.Image] += b.Self
			total += b.Self
		}
	}
	images := slices.Collect(maps.Keys(self))
	slices.SortFunc(images, func(a, b string) int {
		if c := cmp.Compare(self[b], self[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	hues := map[string]int{}
	var legend []legendEntry
	for i, im := range images {
		hues[im] = imageHues[i%len(imageHues)]
		if self[im] == 0 {
			continue // the root, [truncated]: no samples of their own
		}
		e := legendEntry{Image: im, Color: hsl{hues[im], 70, 62}}
		if total > 0 {
			e.Pct = 100 * float64(self[im]) / float64(total)
		}
		if im == "" {
			e.Image = "(no image)"
		}
		legend = append(legend, e)
	}
	return hues, legend
}

// legendEntry is one image of a flame graph coloured by image, with its
// share of the drawn boxes' own samples.
type legendEntry struct {
	Image string
	Color hsl
	Pct   float64
}

// boxFill is a box's CSS colour: by image, a hue per image and a
// lightness per procedure (neighbours in one image stay distinct); by
// procedure, the warm palette.
func boxFill(b box, byImage bool, hues map[string]int) hsl {
	if !byImage {
		return hsl{b.Hue, 85, 62}
	}
	return hsl{hues[b.Proc.Image], 70, 56 + int(hash32(b.Proc.Procedure)%16)}
}

// focusParam splits focus= into its procedures ("" is no focus).
func focusParam(req request) ([]string, error) {
	v, err := req.one("focus")
	if err != nil || v == "" {
		return nil, err
	}
	if len(v) > 64<<10 {
		return nil, badf("focus: %d bytes; a call path is shorter", len(v))
	}
	return strings.Split(v, focusSep), nil
}

// colorParam is color=image (the default) or color=procedure.
func colorParam(req request) (byImage bool, err error) {
	v, err := req.one("color")
	switch {
	case err != nil:
		return false, err
	case v == "" || v == "image":
		return true, nil
	case v == "procedure":
		return false, nil
	}
	return false, badf("color=%q: want image or procedure", v)
}

// focusNote says what a zoomed graph shows, or that the focus named a
// path the profile no longer has.
func focusNote(chain []*report.TreeNode, ok bool, focus []string) string {
	if !ok {
		return fmt.Sprintf("No call path %s in this selection; zoomed on the nearest, %s.", strings.Join(focus, " → "), chainName(chain))
	}
	return ""
}

func chainName(chain []*report.TreeNode) string {
	if len(chain) == 1 {
		return "the whole graph"
	}
	var names []string
	for _, n := range chain[1:] {
		names = append(names, n.Proc.Procedure)
	}
	return strings.Join(names, " → ")
}
