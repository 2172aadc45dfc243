package profileme

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"dcpi/analysis"
	"dcpi/analysis/mepaths"
	"dcpi/analysis/symbolize"
	"dcpi/storage"
	"dcpi/wire"
)

// HistorySource reads stored (PC, path-history) counts (storage.DB, or
// the cluster's query service).
type HistorySource interface {
	MeHistory(ctx context.Context, q storage.Query, fn func(r *storage.MeHistRow) error) error
}

// PathQuery asks for the hot paths ProfileMe's history bits reconstruct
// (the ProfileMe paper, sec. 5.3; analysis/mepaths).
type PathQuery struct {
	Filter     storage.Query
	ImagePaths []string
	// Procedure, when set, keeps that procedure's samples only.
	Procedure string
	// Bits is how many history bits to use (1 to 16); Interval is S.
	Bits     int
	Interval float64
	Limit    int // paths listed (0: all)
	// Files finds the images' bytes: reconstruction needs their code.
	Files symbolize.ImageFinder
}

// Path is one reconstructed path and the samples that led to it.
type Path struct {
	Procedure string `json:"procedure"`
	Image     string `json:"image"`
	// Blocks are the path segment's basic blocks' start addresses, from
	// the sampled instructions' block back to the oldest of Bits
	// conditional branches or the procedure's entry (analysis/mepaths);
	// a callee's blocks are included where the segment runs back through
	// a call.
	Blocks  []uint64 `json:"blocks"`
	Samples Estimate `json:"samples"` // k samples, k·S instructions fetched at its end
}

// PathsReport is the hot paths, and what became of every sample.
type PathsReport struct {
	Interval float64 `json:"interval"`
	Bits     int     `json:"bits"`
	// Samples is every sample selected; Reconstructed those whose path
	// was reconstructed alone, Ambiguous those with several candidates
	// (or whose walk met a call it cannot follow, or ran too long),
	// NoPath those with none (a graph missing the edges taken, or
	// history polluted by an interrupt), NoCode those whose image or
	// procedure could not be read.
	Samples, Reconstructed, Ambiguous, NoPath, NoCode uint64
	Paths                                             []Path `json:"paths"`
}

// Paths reconstructs the paths of the selected (PC, history) counts
// and sums the samples per path, hottest first.
func Paths(ctx context.Context, syms *symbolize.Symbolizer, src HistorySource, q PathQuery) (*PathsReport, error) {
	if q.Bits < 1 || q.Bits > 16 {
		return nil, fmt.Errorf("%w: %d history bits: want 1 to 16", analysis.ErrQuery, q.Bits)
	}
	if q.Files == nil {
		return nil, fmt.Errorf("%w: path reconstruction needs the images' files", analysis.ErrQuery)
	}
	rep := &PathsReport{Interval: q.Interval, Bits: q.Bits}
	type image struct {
		path string
		base uint64
		prog *mepaths.Program
		skip bool
	}
	images := map[wire.ImageKey]*image{}
	open := func(k wire.ImageKey) (*image, error) {
		if im := images[k]; im != nil {
			return im, nil
		}
		im := &image{skip: true}
		images[k] = im
		rec, err := syms.Image(ctx, k)
		if errors.Is(err, storage.ErrNotFound) {
			return im, nil
		}
		if err != nil {
			return nil, err
		}
		im.path = rec.Path
		if !analysis.MatchImagePath(q.ImagePaths, rec.Path) {
			return im, nil
		}
		table, err := syms.Table(ctx, k)
		if err != nil {
			return nil, err
		}
		data, where, err := q.Files.FindImage(ctx, rec)
		if err != nil {
			return im, nil // counted in NoCode
		}
		f, err := symbolize.OpenImageFile(rec, data, where)
		if err != nil {
			return im, nil
		}
		if im.prog, err = mepaths.NewProgram(f.ELF); err != nil {
			return im, nil
		}
		im.base, im.skip = table.Base, false
		return im, nil
	}
	type pathKey struct {
		image  wire.ImageKey
		blocks string
	}
	byPath := map[pathKey]*Path{}
	err := src.MeHistory(ctx, q.Filter, func(r *storage.MeHistRow) error {
		im, err := open(r.Image)
		if err != nil {
			return err
		}
		if im.path != "" && !analysis.MatchImagePath(q.ImagePaths, im.path) {
			return nil
		}
		rep.Samples += r.Count
		if im.skip {
			rep.NoCode += r.Count
			return nil
		}
		pc := im.base + r.Offset
		rg, err := im.prog.Procedure(pc)
		if err != nil {
			rep.NoCode += r.Count
			return nil
		}
		if q.Procedure != "" && rg.Name != q.Procedure {
			rep.Samples -= r.Count
			return nil
		}
		res, err := im.prog.Reconstruct(mepaths.Query{PC: pc, History: r.History, Bits: q.Bits, Limit: 256})
		if err != nil {
			rep.NoCode += r.Count
			return nil
		}
		path, ok := res.Unique()
		switch {
		case ok:
			rep.Reconstructed += r.Count
		case len(res.Paths) == 0 && !res.Truncated && res.Blocked == 0:
			rep.NoPath += r.Count
			return nil
		default:
			rep.Ambiguous += r.Count
			return nil
		}
		blocks := make([]uint64, len(path))
		for i, b := range path {
			blocks[i] = b.Start
		}
		k := pathKey{r.Image, fmt.Sprint(blocks)}
		mp := byPath[k]
		if mp == nil {
			mp = &Path{Procedure: rg.Name, Image: im.path, Blocks: blocks}
			byPath[k] = mp
		}
		mp.Samples.Samples += r.Count
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, p := range byPath {
		p.Samples = estimate(p.Samples.Samples, q.Interval)
		rep.Paths = append(rep.Paths, *p)
	}
	slices.SortFunc(rep.Paths, func(a, b Path) int {
		if c := cmp.Compare(b.Samples.Samples, a.Samples.Samples); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Procedure, b.Procedure); c != 0 {
			return c
		}
		return slices.Compare(a.Blocks, b.Blocks)
	})
	if q.Limit > 0 && len(rep.Paths) > q.Limit {
		rep.Paths = rep.Paths[:q.Limit]
	}
	return rep, nil
}

// WritePaths prints the hot paths, one a line, blocks oldest first
// (the order control ran them).
func WritePaths(w io.Writer, rep *PathsReport) error {
	share := func(n uint64) float64 {
		if rep.Samples == 0 {
			return 0
		}
		return 100 * float64(n) / float64(rep.Samples)
	}
	fmt.Fprintf(w, "ProfileMe paths from %d history bits: %d samples; reconstructed %.1f%%, ambiguous %.1f%%, no path %.1f%%, no code %.1f%%\n\n",
		rep.Bits, rep.Samples, share(rep.Reconstructed), share(rep.Ambiguous), share(rep.NoPath), share(rep.NoCode))
	for _, p := range rep.Paths {
		bs := make([]string, len(p.Blocks))
		for i, b := range p.Blocks {
			bs[len(p.Blocks)-1-i] = fmt.Sprintf("%#x", b)
		}
		if _, err := fmt.Fprintf(w, "%6d  %s  %s (%s): %s\n", p.Samples.Samples, est(p.Samples), p.Procedure, p.Image, strings.Join(bs, " -> ")); err != nil {
			return err
		}
	}
	return nil
}
