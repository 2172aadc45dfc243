package web

import (
	"hash/fnv"

	"dcpi/analysis/report"
)

// box is one frame of a flame graph or icicle: a node of the call tree at
// its depth, spanning [X, X+W) of the root's samples (fractions of 1).
type box struct {
	Depth int
	X, W  float64
	Proc  report.StackProc
	Total uint64
	Self  uint64
	Pct   float64 // Total, percent of the root's
	Hue   int     // the procedure's colour, stable across pages
	// Key names the box's path from the root (pathKey), the same for the
	// same path in two trees (the differential flame graph's match).
	Key string
}

// pathKey is the key of proc's node under the node keyed parent.
func pathKey(parent string, proc report.StackProc) string {
	return parent + "\x00" + proc.Procedure + "\x01" + proc.Image
}

// flameLayout lays out the call tree below root, depth first: every node
// whose samples are at least minFrac of the root's, at most maxDepth
// levels below it (the root itself is depth 0). Children sit side by side
// under their parent in the tree's order (largest first), so a box's
// width is its share of the samples and its children never overhang it.
func flameLayout(root *report.TreeNode, minFrac float64, maxDepth int) (boxes []box, depth int) {
	if root == nil || root.Total == 0 {
		return nil, 0
	}
	total := float64(root.Total)
	var walk func(n *report.TreeNode, d int, x float64, parent string)
	walk = func(n *report.TreeNode, d int, x float64, parent string) {
		w := float64(n.Total) / total
		k := pathKey(parent, n.Proc)
		boxes = append(boxes, box{Depth: d, X: x, W: w, Proc: n.Proc, Total: n.Total, Self: n.Self, Pct: 100 * w, Hue: hue(n.Proc.Procedure), Key: k})
		depth = max(depth, d)
		if d == maxDepth {
			return
		}
		for _, c := range n.Children {
			if float64(c.Total)/total >= minFrac {
				walk(c, d+1, x, k)
			}
			x += float64(c.Total) / total
		}
	}
	walk(root, 0, 0, "")
	return boxes, depth
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
	h := fnv.New32a()
	h.Write([]byte(name))
	return int(h.Sum32() % 55)
}
