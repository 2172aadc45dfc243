// Package webdb serves a profile database (profiledb.DB) to dcpi web's
// pages: it implements analysis/web's Backend with the command-line
// tools' filter parsing, sample sets, hints, image finder and sampling
// periods, so a page and a command given the same selection read the
// same samples and say the same things.
package webdb

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"dcpi/analysis"
	"dcpi/analysis/fleetpaths"
	"dcpi/analysis/imagefind"
	"dcpi/analysis/profileme"
	"dcpi/analysis/report"
	"dcpi/analysis/symbolize"
	valuesa "dcpi/analysis/values"
	"dcpi/analysis/web"
	"dcpi/hwsim"
	"dcpi/profiledb"
	"dcpi/profiledb/pprofout"
	"dcpi/profiledb/timerange"
	"dcpi/storage"
)

// Backend is the UI's data: a profile database with a symbol cache, with
// the command-line tools' filter parsing, image finder and sampling
// periods.
type Backend struct {
	db                    profiledb.DB
	sym                   *symbolize.Symbolizer
	imageDirs, sourceDirs []string
}

// New serves db to the pages, finding image files in imageDirs too and
// source files in sourceDirs.
func New(db profiledb.DB, imageDirs, sourceDirs []string) *Backend {
	return &Backend{db: db, sym: symbolize.New(db), imageDirs: imageDirs, sourceDirs: sourceDirs}
}

var _ web.Backend = (*Backend)(nil)

func (b *Backend) Source() analysis.Source { return b.sym }

func (b *Backend) Where() string { return b.db.Where() }

// Live: a cluster keeps collecting; a database on disk is a closed run's.
func (b *Backend) Live() bool {
	_, cluster := b.db.(*profiledb.Cluster)
	return cluster
}

// Select checks the filters with profiledb.Filters.Selection, as the tools check
// their flags (the messages name the flags; the pages' parameters have the
// same names), and maps a time range to its epochs with
// profiledb.SelectTime, as the tools do once their database is open.
func (b *Backend) Select(ctx context.Context, f web.Filters) (web.Selection, error) {
	qf := profiledb.Filters{Epochs: f.Epochs, Ranges: f.EpochRanges, Hosts: f.Hosts, Images: f.Images, Events: f.Events,
		Time: timerange.Flags{Since: f.Since, From: f.From, To: f.To}, Select: f.Select, Labels: f.Labels}
	for _, p := range f.PIDs {
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return web.Selection{}, fmt.Errorf("pid %q: want a process number", p)
		}
		qf.PIDs = append(qf.PIDs, uint(n))
	}
	var covered strings.Builder
	sel, err := qf.Selection()
	if err == nil {
		err = profiledb.Select(ctx, b.db, &sel, &covered)
	}
	if err != nil {
		return web.Selection{}, paramError{err}
	}
	return web.Selection{Filter: sel.Filter, Events: sel.Events, ImagePaths: sel.ImagePaths, Covered: strings.TrimSpace(covered.String())}, nil
}

// paramError is a flag's error as a page's: the message names the URL
// parameter ("since", not "--since"); the error is still the tool's.
type paramError struct{ err error }

func (e paramError) Error() string { return strings.TrimPrefix(e.err.Error(), "--") }
func (e paramError) Unwrap() error { return e.err }

// selection is a page's selection as the tools take it; its time range
// is already epochs (Select).
func selection(sel web.Selection) profiledb.Selection {
	return profiledb.Selection{Filter: sel.Filter, Events: sel.Events, ImagePaths: sel.ImagePaths}
}

func (b *Backend) Set(ctx context.Context, base web.Selection, spec string) (analysis.SampleSet, error) {
	return profiledb.ParseSetSpec(ctx, b.db, base.Filter, spec)
}

func (b *Backend) Hint(ctx context.Context, sel web.Selection) string {
	return profiledb.SelectionHint(ctx, b.db, b.sym, selection(sel))
}

func (b *Backend) Files() symbolize.ImageFinder {
	return imagefind.New(nil, b.db.ImageFile, b.imageDirs)
}

func (b *Backend) SourceFile(name string) ([]byte, error) {
	return imagefind.SourceReader(b.sourceDirs)(name)
}

func (b *Backend) CalcPeriods(ctx context.Context, hosts []string) (map[string]map[uint8]float64, error) {
	return profiledb.CalcPeriods(ctx, b.db, hosts, nil, io.Discard)
}

// Groups is dcpi prof --by label --limit limit over sel.
func (b *Backend) Groups(ctx context.Context, sel web.Selection, label string, limit int) (*report.GroupTable, error) {
	r, err := profiledb.Prof(ctx, b.db, b.sym, selection(sel), profiledb.ProfOptions{By: label, Limit: limit})
	if err != nil {
		return nil, err
	}
	return r.Groups, nil
}

// Report runs dcpi me, dcpi values or dcpi pp fleet over sel with the
// commands' defaults, writing the report as the command prints it.
func (b *Backend) Report(ctx context.Context, r web.ToolReport, sel web.Selection, w io.Writer) error {
	ps := selection(sel)
	hint := func() string { return profiledb.SelectionHint(ctx, b.db, b.sym, ps) }
	switch r.Tool {
	case "me":
		window := float64(hwsim.DefaultPairWindow(true))
		if ri, ok := profiledb.RunInfoOf(b.db); ok && ri.MePairWindow > 0 {
			window = ri.MePairWindow // the profile's, as dcpi me reads it
		}
		out, err := profileme.Run(ctx, b.sym, b.db, profileme.Options{Filter: sel.Filter, ImagePaths: sel.ImagePaths, Procedure: r.Procedure,
			Interval: profiledb.MeIntervalOf(b.db, hwsim.DefaultProfileMe().MeanInterval()), Limit: 20, PairWindow: window, IssueWidth: 4,
			Files: b.Files(), Where: b.db.Where(), Hint: hint})
		if err != nil {
			return err
		}
		return out.WriteText(w)
	case "values":
		view, err := valuesa.ParseView(r.View)
		if err != nil {
			return err
		}
		res, err := valuesa.Run(ctx, b.db, b.sym, valuesa.Options{Query: valuesa.Query{View: view, Epochs: sel.Filter.Epochs,
			Hosts: sel.Filter.Hosts, Images: sel.Filter.Images, Limit: 30, MinSamples: 1, Files: b.Files()},
			Where: b.db.Where(), Note: io.Discard,
			ReadPeriods: func(ctx context.Context) (map[string]map[uint8]float64, error) {
				return profiledb.CalcPeriods(ctx, b.db, sel.Filter.Hosts, nil, io.Discard)
			},
			Hint: func() string { return profiledb.EmptyHint(ctx, b.db, sel.Filter) }})
		if err != nil {
			return err
		}
		return res.WriteText(w)
	case "paths":
		srcs, _ := fleetpaths.ParseSources("all")
		return fleetpaths.WriteMerged(ctx, w, b.db, fleetpaths.Options{Sources: srcs, Image: r.Image, Hosts: sel.Filter.Hosts, Top: 10})
	}
	return fmt.Errorf("no report %q (want me, values or paths)", r.Tool)
}

// Pprof exports sel as dcpi pprof does without flags: the hosts'
// registered periods, the images' DWARF where found, call stacks where
// recorded.
func (b *Backend) Pprof(ctx context.Context, sel web.Selection) (*profile.Profile, error) {
	ex, err := pprofout.Run(ctx, b.db, b.sym, pprofout.Options{Selection: selection(sel), Files: b.Files()})
	if err != nil {
		return nil, err
	}
	return ex.Profile, nil
}

func (b *Backend) Epochs(ctx context.Context) ([]web.Epoch, error) {
	infos, err := b.db.Epochs(ctx)
	if err != nil {
		return nil, err
	}
	eps := make([]web.Epoch, len(infos))
	for i, e := range infos {
		eps[i] = web.Epoch{Number: e.Number, MergedThrough: e.MergedThrough, State: e.State.String(), Start: e.Start, End: e.End, Acked: e.AckedBy(), Waiting: e.Waiting}
	}
	return eps, nil
}

// Hosts lists the node registry with each host's stored samples (one
// totals query per host).
func (b *Backend) Hosts(ctx context.Context) ([]web.Host, error) {
	infos, err := b.db.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	hosts := make([]web.Host, len(infos))
	for i, n := range infos {
		h := web.Host{Name: n.Host, Labels: n.Labels, CPUs: n.CPUs, Registered: n.Registered, Updated: n.Updated, LastHeartbeat: n.LastHeartbeat}
		if n.LivenessKnown {
			h.Liveness = map[bool]string{true: "live", false: "down"}[n.Live]
		}
		if h.Samples, err = b.db.Totals(ctx, storage.Query{Hosts: []string{n.Host}}); err != nil {
			return nil, err
		}
		hosts[i] = h
	}
	slices.SortFunc(hosts, func(a, b web.Host) int { return strings.Compare(a.Name, b.Name) })
	return hosts, nil
}
