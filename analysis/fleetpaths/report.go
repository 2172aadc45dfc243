package fleetpaths

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"dcpi/analysis/cct"
	"dcpi/analysis/paths"
	"dcpi/storage"
	"dcpi/wire"
)

// Reader reads the fleet's merged path profiles: the coordinator's
// reader, or a local database (Local).
type Reader interface {
	PathImages(ctx context.Context) ([]storage.PathImage, error)
	PathProfile(ctx context.Context, src wire.PathSource, image wire.ImageKey, hosts []string) (*wire.PathProfile, error)
}

// Options select what WriteMerged writes.
type Options struct {
	Sources []wire.PathSource
	Image   string   // "": all; else a path, base name or key
	Hosts   []string // nil: every host's uploads
	Top     int      // hot paths and contexts per image
}

// ParseSources parses --source: instrumented, oracle or all.
func ParseSources(s string) ([]wire.PathSource, error) {
	if s == "all" {
		return []wire.PathSource{wire.SourceInstrumented, wire.SourceOracle}, nil
	}
	src, err := wire.ParsePathSource(s)
	if err != nil {
		return nil, fmt.Errorf("--source: want instrumented, oracle or all, not %q", s)
	}
	return []wire.PathSource{src}, nil
}

// sourceLabel heads each merged profile: what its figures are.
func sourceLabel(src wire.PathSource) string {
	if src == wire.SourceOracle {
		return "hwsim ground truth (dcpi pp oracle), merged over hosts: not an instrumented profile"
	}
	return "instrumented path profile, merged over hosts"
}

func matchImage(sel string, im storage.PathImage) bool {
	return sel == "" || sel == im.Image.String() || sel == im.ImagePath || sel == filepath.Base(im.ImagePath)
}

// WriteMerged writes the fleet's merged path profiles and calling context
// trees that o selects (dcpi pp fleet): per image and source, the hot
// paths, the paths per procedure and the tree's top contexts.
func WriteMerged(ctx context.Context, w io.Writer, r Reader, o Options) error {
	srcs, image, hosts, top := o.Sources, o.Image, o.Hosts, o.Top
	ims, err := r.PathImages(ctx)
	if err != nil {
		return err
	}
	var b strings.Builder
	shown := 0
	for _, im := range ims {
		if !slices.Contains(srcs, im.Source) || !matchImage(image, im) {
			continue
		}
		p, err := r.PathProfile(ctx, im.Source, im.Image, hosts)
		if errors.Is(err, storage.ErrNotFound) {
			continue // none of the selected hosts uploaded it
		}
		if err != nil {
			return err
		}
		prof, tree, err := FromWire(im.Source, im.Image, p)
		if err != nil {
			return err
		}
		uploaders := im.Hosts
		if hosts != nil {
			uploaders = slices.DeleteFunc(slices.Clone(im.Hosts), func(h string) bool { return !slices.Contains(hosts, h) })
		}
		if shown > 0 {
			b.WriteString("\n")
		}
		shown++
		fmt.Fprintf(&b, "# %s\nimage %s (%s), source %s (%s), hosts %s\n", sourceLabel(im.Source), cmp.Or(im.ImagePath, "?"), im.Image, im.Source, prof.Source, strings.Join(uploaders, ", "))
		writePaths(&b, prof, top)
		if tree != nil {
			writeTree(&b, tree, prof, top)
		}
	}
	if shown == 0 {
		var have []string
		for _, im := range ims {
			have = append(have, fmt.Sprintf("%s %s (hosts %s)", im.Source, cmp.Or(im.ImagePath, im.Image.String()), strings.Join(im.Hosts, ", ")))
		}
		if len(have) == 0 {
			return errors.New("no path profiles uploaded (dcpi pp upload)")
		}
		return fmt.Errorf("no path profile matches; uploaded: %s", strings.Join(have, "; "))
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// writePaths prints the hot paths and the paths per procedure of a
// one-image profile.
func writePaths(b *strings.Builder, p *paths.Profile, top int) {
	ins := slices.Index(p.Metrics, paths.MetricInstructions)
	weight := func(pc paths.PathCount) uint64 {
		if ins >= 0 {
			return pc.Metrics[ins]
		}
		return pc.Count
	}
	type hot struct {
		proc *paths.ProcProfile
		pc   paths.PathCount
	}
	var hots []hot
	var total uint64
	procs := p.Images[0].Procs
	for i := range procs {
		for _, pc := range procs[i].Paths {
			hots = append(hots, hot{&procs[i], pc})
			total += weight(pc)
		}
	}
	slices.SortStableFunc(hots, func(x, y hot) int {
		return cmp.Or(cmp.Compare(weight(y.pc), weight(x.pc)), cmp.Compare(x.proc.Entry, y.proc.Entry), cmp.Compare(x.pc.ID, y.pc.ID))
	})
	by := "count"
	if ins >= 0 {
		by = "instructions"
	}
	fmt.Fprintf(b, "\nhot paths (top %d by %s):\n  %-28s %8s %10s", min(top, len(hots)), by, "procedure", "path", "count")
	for _, m := range p.Metrics {
		fmt.Fprintf(b, " %12s", m)
	}
	b.WriteString("\n")
	for _, h := range hots[:min(top, len(hots))] {
		fmt.Fprintf(b, "  %-28s %8d %10d", paths.ProcName(h.proc.Name, h.proc.Entry), h.pc.ID, h.pc.Count)
		for _, v := range h.pc.Metrics {
			fmt.Fprintf(b, " %12d", v)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "\npaths per procedure:\n  %-28s %9s %12s %7s %s\n", "procedure", "executed", "of", "share", "unknown activations")
	type row struct {
		p *paths.ProcProfile
		w uint64
	}
	var rows []row
	for i := range procs {
		r := row{p: &procs[i]}
		for _, pc := range procs[i].Paths {
			r.w += weight(pc)
		}
		rows = append(rows, r)
	}
	slices.SortStableFunc(rows, func(x, y row) int { return cmp.Compare(y.w, x.w) })
	for _, r := range rows {
		of := fmt.Sprint(r.p.NumPaths)
		if r.p.NumPaths == 0 {
			of = "unnumbered"
		}
		fmt.Fprintf(b, "  %-28s %9d %12s %6.2f%% %d\n", paths.ProcName(r.p.Name, r.p.Entry), len(r.p.Paths), of, 100*share(r.w, total), r.p.Unknown)
	}
}

// writeTree prints the tree's size and its top contexts by their own
// instructions (or their first metric).
func writeTree(b *strings.Builder, t *cct.Tree, p *paths.Profile, top int) {
	names := map[uint64]string{}
	for _, pr := range p.Images[0].Procs {
		names[pr.Entry] = pr.Name
	}
	name := func(e uint64) string { return paths.ProcName(names[e], e) }
	var nodes []*cct.Node
	t.Walk(func(n *cct.Node) {
		if n != t.Root {
			nodes = append(nodes, n)
		}
	})
	by := max(t.Metric(paths.MetricInstructions), 0)
	fmt.Fprintf(b, "\ncalling context tree: %d records; metric totals", len(nodes))
	tot := t.Totals()
	for i, m := range t.Metrics {
		fmt.Fprintf(b, " %s=%d", m, tot[i])
	}
	if len(t.Metrics) == 0 {
		b.WriteString(" (none)\n")
		return
	}
	slices.SortStableFunc(nodes, func(x, y *cct.Node) int { return cmp.Compare(y.Metrics[by], x.Metrics[by]) })
	fmt.Fprintf(b, "\n\ntop contexts (by own %s):\n ", t.Metrics[by])
	for _, m := range t.Metrics {
		fmt.Fprintf(b, " %12s", m)
	}
	b.WriteString("  context\n")
	for _, n := range nodes[:min(top, len(nodes))] {
		var chain []string
		for a := n; a != nil && a != t.Root; a = a.Parent {
			chain = append(chain, name(a.Proc))
		}
		slices.Reverse(chain)
		b.WriteString(" ")
		for _, v := range n.Metrics {
			fmt.Fprintf(b, " %12d", v)
		}
		fmt.Fprintf(b, "  %s\n", strings.Join(chain, " > "))
	}
}

// share is x's fraction of of (0 when of is 0).
func share(x, of uint64) float64 {
	if of == 0 {
		return 0
	}
	return float64(x) / float64(of)
}
