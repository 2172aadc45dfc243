// Package fleetpaths owns the conversion between the analysis forms of a
// path profile and a calling context tree (paths.Profile, cct.Tree) and
// their wire form per image (wire.PathProfile, wire.PathUpload): what a
// host uploads (dcpi pp upload) and what the fleet's merged profile reads
// back as (dcpi pp fleet). It is pure.
//
// The source travels with the data: an upload names whether it holds an
// instrumented program's counts or the hwsim oracle's ground truth, the
// coordinator stores the two apart, and a profile read back is labelled
// with its source (the oracle's as paths.OracleSource, ground truth).
package fleetpaths

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"dcpi/analysis/cct"
	"dcpi/analysis/paths"
	"dcpi/wire"
)

// Image is one image's path profile and tree: the content of one upload.
type Image struct {
	Source      wire.PathSource
	Key         wire.ImageKey
	Path        string
	PathMetrics []string
	Procs       []paths.ProcProfile
	Tree        *cct.Tree // nil: none recorded
}

// ErrSource is wrapped by errors about a profile labelled with another
// source than the one it is uploaded as.
var ErrSource = errors.New("fleetpaths: profile source does not match")

// ProfileSource is the paths.Profile source label of a profile read back
// from the fleet: the oracle's own label for ground truth, so it is never
// taken for a measurement.
func ProfileSource(src wire.PathSource) string {
	if src == wire.SourceOracle {
		return paths.OracleSource
	}
	return "fleet-" + src.String()
}

// Split cuts a path profile and its trees (by image ID, as the profile's
// images spell it) into one Image per image. A profile labelled as the
// oracle's can only be split as oracle data, and oracle data only from a
// profile so labelled. A tree of an image the profile does not list is an
// image with trees only.
func Split(src wire.PathSource, p *paths.Profile, trees map[string]*cct.Tree) ([]Image, error) {
	if err := src.Check(); err != nil {
		return nil, fmt.Errorf("fleetpaths: %w", err)
	}
	if (p.Source == paths.OracleSource) != (src == wire.SourceOracle) {
		return nil, fmt.Errorf("%w: profile source %q uploaded as %s", ErrSource, p.Source, src)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	byID := map[string]*Image{}
	var out []*Image
	get := func(id, path string) (*Image, error) {
		if im := byID[id]; im != nil {
			if path != "" && im.Path != "" && path != im.Path {
				return nil, fmt.Errorf("fleetpaths: image %s at two paths, %s and %s: upload them apart", id, im.Path, path)
			}
			im.Path = cmp.Or(im.Path, path)
			return im, nil
		}
		k, err := wire.ParseImageKey(id)
		if err != nil {
			return nil, fmt.Errorf("fleetpaths: image %s (%s): %w", id, path, err)
		}
		im := &Image{Source: src, Key: k, Path: path, PathMetrics: p.Metrics}
		byID[id] = im
		out = append(out, im)
		return im, nil
	}
	for _, ip := range p.Images {
		im, err := get(ip.ID, ip.Path)
		if err != nil {
			return nil, err
		}
		im.Procs = append(im.Procs, ip.Procs...)
	}
	for _, id := range slices.Sorted(maps.Keys(trees)) {
		im, err := get(id, "")
		if err != nil {
			return nil, err
		}
		im.Tree = trees[id]
	}
	res := make([]Image, len(out))
	for i, im := range out {
		res[i] = *im
	}
	return res, nil
}

// Profile is im in wire form.
func (im *Image) Profile() (wire.PathProfile, error) {
	p := wire.PathProfile{ImagePath: im.Path, PathMetrics: im.PathMetrics}
	for _, pr := range im.Procs {
		wp := wire.PathProc{Entry: pr.Entry, Name: pr.Name, NumPaths: pr.NumPaths, Unknown: pr.Unknown}
		for _, pc := range pr.Paths {
			wp.Paths = append(wp.Paths, wire.PathRun{ID: pc.ID, Count: pc.Count, Metrics: pc.Metrics})
		}
		p.Procs = append(p.Procs, wp)
	}
	slices.SortFunc(p.Procs, func(a, b wire.PathProc) int { return cmp.Compare(a.Entry, b.Entry) })
	if im.Tree != nil {
		p.TreeMetrics, p.Tree = im.Tree.Metrics, treeNodes(im.Tree)
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("fleetpaths: image %s: %w", im.Key, err)
	}
	return p, nil
}

// Upload is im as host's upload id.
func (im *Image) Upload(host string, id wire.UploadID) (*wire.PathUpload, error) {
	p, err := im.Profile()
	if err != nil {
		return nil, err
	}
	u := &wire.PathUpload{Host: host, ID: id, Image: im.Key, Source: im.Source, Profile: p}
	if err := u.Validate(); err != nil {
		return nil, err
	}
	return u, nil
}

// treeNodes lists t's records in the wire's canonical preorder (cct.Walk's
// order: children by call site, then procedure).
func treeNodes(t *cct.Tree) []wire.TreeNode {
	index := map[*cct.Node]int{}
	var out []wire.TreeNode
	t.Walk(func(n *cct.Node) {
		index[n] = len(out)
		wn := wire.TreeNode{Proc: n.Proc, CallSite: n.CallSite, Metrics: slices.Clone(n.Metrics)}
		if n.Parent != nil {
			wn.Parent = index[n.Parent]
		}
		for _, id := range slices.Sorted(maps.Keys(n.Paths)) {
			if c := n.Paths[id]; c > 0 {
				wn.Paths = append(wn.Paths, wire.PathTally{ID: id, Count: c})
			}
		}
		out = append(out, wn)
	})
	t.Walk(func(n *cct.Node) {
		wn := &out[index[n]]
		for _, b := range n.Recursive {
			wn.Recursive = append(wn.Recursive, wire.TreeBackedge{CallSite: b.CallSite, To: index[b.To]})
		}
		slices.SortFunc(wn.Recursive, func(a, b wire.TreeBackedge) int {
			return cmp.Or(cmp.Compare(a.CallSite, b.CallSite), cmp.Compare(a.To, b.To))
		})
	})
	return out
}

// FromWire is a merged profile of (src, key) back in analysis form: a
// paths.Profile of the one image, labelled ProfileSource(src), and its
// tree (nil if none was uploaded).
func FromWire(src wire.PathSource, key wire.ImageKey, p *wire.PathProfile) (*paths.Profile, *cct.Tree, error) {
	if err := p.Validate(); err != nil {
		return nil, nil, err
	}
	prof := &paths.Profile{Source: ProfileSource(src), Metrics: p.PathMetrics}
	ip := paths.ImageProfile{ID: key.String(), Path: p.ImagePath}
	for _, pr := range p.Procs {
		pp := paths.ProcProfile{Entry: pr.Entry, Name: pr.Name, NumPaths: pr.NumPaths, Unknown: pr.Unknown}
		for _, r := range pr.Paths {
			pp.Paths = append(pp.Paths, paths.PathCount{ID: r.ID, Count: r.Count, Metrics: r.Metrics})
		}
		ip.Procs = append(ip.Procs, pp)
	}
	prof.Images = []paths.ImageProfile{ip}
	if err := prof.Validate(); err != nil {
		return nil, nil, err
	}
	if len(p.Tree) == 0 {
		return prof, nil, nil
	}
	t := cct.New(p.TreeMetrics...)
	nodes := make([]*cct.Node, len(p.Tree))
	for i, wn := range p.Tree {
		n := t.Root
		if i > 0 {
			// Validate held that no procedure is twice on a chain, so
			// Child makes a new record rather than a backedge.
			n = t.Child(nodes[wn.Parent], wn.Proc, wn.CallSite)
		}
		copy(n.Metrics, wn.Metrics)
		for _, pt := range wn.Paths {
			n.AddPath(pt.ID, pt.Count)
		}
		nodes[i] = n
	}
	for i, wn := range p.Tree {
		for _, b := range wn.Recursive {
			nodes[i].Recursive = append(nodes[i].Recursive, cct.Backedge{CallSite: b.CallSite, To: nodes[b.To]})
		}
	}
	return prof, t, nil
}
