package oracle

import (
	"sort"

	"dcpi/analysis/paths"
)

// PathProfile returns the path counts of every image as a paths.Profile
// (metrics per path: instructions, cycles, imiss, dmiss), the form an instrumented
// profile is compared against. Procedures that could not be numbered
// appear with num_paths 0 and their unknown activations.
func (o *Oracle) PathProfile() *paths.Profile {
	p := &paths.Profile{Source: paths.OracleSource, Metrics: []string{MetricInstructions, MetricCycles, MetricIMiss, MetricDMiss}}
	for _, path := range o.ImagePaths() {
		im := o.Images[path]
		ip := paths.ImageProfile{ID: im.ID, Path: im.Path}
		for _, pr := range im.SortedProcs() {
			pp := paths.ProcProfile{Entry: pr.Entry, Name: pr.Name, Unknown: pr.Unknown}
			if pr.Numbering != nil {
				pp.NumPaths = pr.Numbering.NumPaths
			}
			for id, s := range pr.Paths {
				pp.Paths = append(pp.Paths, paths.PathCount{ID: id, Count: s.Count, Metrics: []uint64{s.Instructions, s.Cycles, s.IMiss, s.DMiss}})
			}
			if len(pp.Paths) == 0 && pp.Unknown == 0 {
				continue
			}
			ip.Procs = append(ip.Procs, pp)
		}
		p.Images = append(p.Images, ip)
	}
	p.Sort()
	return p
}

// ImagePaths returns the paths of the images the oracle saw, sorted.
func (o *Oracle) ImagePaths() []string {
	out := make([]string, 0, len(o.Images))
	for path := range o.Images {
		out = append(out, path)
	}
	sort.Strings(out)
	return out
}
