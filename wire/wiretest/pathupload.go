package wiretest

import (
	"fmt"
	"math/rand/v2"

	"dcpi/wire"
)

// PathOptions shapes RandPathProfile. The zero value draws from a wide
// space (codec tests); small Procs, Paths and Tree make profiles that
// collide when merged (storage and coordinator tests).
type PathOptions struct {
	Procs int // procedures drawn from entries 0x1000, 0x1100, ...: at most this many (0: 8)
	Paths int // path IDs below this per procedure (0: 16)
	Tree  int // tree records at most (0: 12; -1: no tree)
	// Procedure entries a tree draws from: the same space as Procs.
}

// PathMetrics and TreeMetrics are the metric names RandPathProfile uses,
// those of the hwsim oracle's save file.
var (
	PathMetrics = []string{"instructions", "cycles", "imiss", "dmiss"}
	TreeMetrics = []string{"calls", "instructions", "cycles", "imiss", "dmiss"}
)

// RandPathProfile returns a random valid path profile: procedure i has
// entry 0x1000+0x100*i, name "proc<i>" and Paths paths; a tree of random
// shape over the same procedures, with recursion folded as cct does.
func RandPathProfile(r *rand.Rand, o PathOptions) wire.PathProfile {
	if o.Procs <= 0 {
		o.Procs = 8
	}
	if o.Paths <= 0 {
		o.Paths = 16
	}
	if o.Tree == 0 {
		o.Tree = 12
	}
	p := wire.PathProfile{ImagePath: "/bin/prog", PathMetrics: PathMetrics}
	for i := range o.Procs {
		if r.IntN(3) == 0 {
			continue
		}
		pr := wire.PathProc{Entry: 0x1000 + 0x100*uint64(i), Name: fmt.Sprintf("proc%d", i), NumPaths: uint64(o.Paths), Unknown: uint64(r.IntN(2))}
		for id := range o.Paths {
			if r.IntN(2) == 0 {
				continue
			}
			c := 1 + uint64(r.IntN(100))
			pr.Paths = append(pr.Paths, wire.PathRun{ID: uint64(id), Count: c, Metrics: []uint64{c * 7, c * 9, uint64(r.IntN(3)), uint64(r.IntN(3))}})
		}
		p.Procs = append(p.Procs, pr)
	}
	if o.Tree > 0 {
		p.TreeMetrics = TreeMetrics
		p.Tree = randTree(r, o)
	}
	return p
}

// randTree builds a tree by the cct rules (a call to a procedure already on
// the chain becomes a backedge) and lists it in canonical preorder.
func randTree(r *rand.Rand, o PathOptions) []wire.TreeNode {
	type node struct {
		proc, site uint64
		parent     *node
		kids       map[[2]uint64]*node
		metrics    []uint64
		paths      map[uint64]uint64
		backs      map[[2]uint64]*node // (site, target's creation order)
		order      int
	}
	root := &node{kids: map[[2]uint64]*node{}, metrics: make([]uint64, len(TreeMetrics))}
	all := []*node{root}
	for try := 0; len(all) < o.Tree && try < 4*o.Tree; try++ {
		parent := all[r.IntN(len(all))]
		proc := 0x1000 + 0x100*uint64(r.IntN(o.Procs))
		site := uint64(0)
		if parent != root {
			site = parent.proc + 4*uint64(1+r.IntN(4))
		}
		var anc *node
		for a := parent; a != root; a = a.parent {
			if a.proc == proc {
				anc = a
			}
		}
		if anc != nil {
			if parent.backs == nil {
				parent.backs = map[[2]uint64]*node{}
			}
			parent.backs[[2]uint64{site, uint64(anc.order)}] = anc
			continue
		}
		k := [2]uint64{site, proc}
		if parent.kids[k] != nil {
			continue
		}
		n := &node{proc: proc, site: site, parent: parent, kids: map[[2]uint64]*node{}, metrics: make([]uint64, len(TreeMetrics)), order: len(all)}
		c := 1 + uint64(r.IntN(50))
		n.metrics = []uint64{c, c * 10, c * 15, uint64(r.IntN(2)), uint64(r.IntN(2))}
		if r.IntN(2) == 0 {
			n.paths = map[uint64]uint64{uint64(r.IntN(o.Paths)): c}
		}
		parent.kids[k] = n
		all = append(all, n)
	}
	var out []wire.TreeNode
	index := map[*node]int{}
	var walk func(n *node, parent int)
	walk = func(n *node, parent int) {
		i := len(out)
		index[n] = i
		tn := wire.TreeNode{Parent: parent, Proc: n.proc, CallSite: n.site, Metrics: n.metrics}
		for id := range uint64(o.Paths) {
			if c := n.paths[id]; c > 0 {
				tn.Paths = append(tn.Paths, wire.PathTally{ID: id, Count: c})
			}
		}
		out = append(out, tn)
		keys := make([][2]uint64, 0, len(n.kids))
		for k := range n.kids {
			keys = append(keys, k)
		}
		sortKeys(keys)
		for _, k := range keys {
			walk(n.kids[k], i)
		}
	}
	walk(root, 0)
	for _, n := range all {
		var bs []wire.TreeBackedge
		for k, to := range n.backs {
			bs = append(bs, wire.TreeBackedge{CallSite: k[0], To: index[to]})
		}
		sortBacks(bs)
		out[index[n]].Recursive = bs
	}
	return out
}

func sortKeys(ks [][2]uint64) {
	for i := 1; i < len(ks); i++ {
		for j := i; j > 0 && (ks[j][0] < ks[j-1][0] || ks[j][0] == ks[j-1][0] && ks[j][1] < ks[j-1][1]); j-- {
			ks[j], ks[j-1] = ks[j-1], ks[j]
		}
	}
}

func sortBacks(bs []wire.TreeBackedge) {
	for i := 1; i < len(bs); i++ {
		for j := i; j > 0 && (bs[j].CallSite < bs[j-1].CallSite || bs[j].CallSite == bs[j-1].CallSite && bs[j].To < bs[j-1].To); j-- {
			bs[j], bs[j-1] = bs[j-1], bs[j]
		}
	}
}

// RandPathUpload is a random valid upload of host for image, its ID drawn
// from r.
func RandPathUpload(r *rand.Rand, host string, image wire.ImageKey, src wire.PathSource, o PathOptions) *wire.PathUpload {
	u := &wire.PathUpload{Host: host, Image: image, Source: src, Profile: RandPathProfile(r, o)}
	for i := range u.ID {
		u.ID[i] = byte(r.Uint32())
	}
	u.ID[0] |= 1
	return u
}
