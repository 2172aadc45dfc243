// Package pprofout is dcpi pprof's export of a profile database: the
// sampling periods chosen from its node registry (profiledb.Periods) and
// checked against the profile, --by-host and --by-epoch expanded to the
// database's hosts and epochs, the image files found along the way
// (written for PPROF_BINARY_PATH on request), and the summary of what was
// written. dcpi web's pprof download is the same export.
package pprofout

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	"github.com/google/pprof/profile"

	"dcpi/analysis"
	"dcpi/analysis/pprofexport"
	"dcpi/analysis/symbolize"
	"dcpi/profiledb"
	"dcpi/wire"
)

// Options select and shape an export.
type Options struct {
	Selection       profiledb.Selection
	ByHost, ByEpoch bool // keep hosts, epochs apart (labelled)
	Flat            bool // the flat profile even where stacks were recorded
	// PeriodFlags are --period's E=N overrides.
	PeriodFlags []string
	Files       symbolize.ImageFinder
	// Note hears of hosts given the default configuration's periods.
	Note io.Writer
}

// Export is an exported profile and the image files read for it.
type Export struct {
	Profile *profile.Profile
	Found   []Found
}

// Run exports what o selects from db, reading samples through src (db
// with a symbol cache).
func Run(ctx context.Context, db profiledb.DB, src analysis.Source, o Options) (*Export, error) {
	sel := o.Selection
	pc, err := profiledb.SelectedPeriods(ctx, db, sel.Filter.Hosts, o.PeriodFlags)
	if err != nil {
		return nil, err
	}
	ex := &Export{}
	q := pprofexport.PprofQuery{Filter: sel.Filter, Events: sel.Events, ImagePaths: sel.ImagePaths, ByHost: o.ByHost, ByEpoch: o.ByEpoch,
		Periods: pc.Periods, Files: o.Files, Flat: o.Flat,
		Found: func(rec *wire.ImageRecord, data []byte, where string) {
			ex.Found = append(ex.Found, Found{rec, data, where})
		}}
	if o.ByHost && q.Filter.Hosts == nil {
		if q.Filter.Hosts, err = db.Hosts(ctx); err != nil {
			return nil, fmt.Errorf("--by-host: %w", err)
		}
	}
	if o.ByEpoch && q.Filter.Epochs == nil {
		if q.Filter.Epochs, err = db.EpochNumbers(ctx); err != nil {
			return nil, fmt.Errorf("--by-epoch: %w", err)
		}
		if len(q.Filter.Epochs) == 0 {
			return nil, fmt.Errorf("--by-epoch: the database lists no epochs (a dcpi node database has no epoch records); give them with --epochs A-B")
		}
	}
	if ex.Profile, err = pprofexport.Pprof(ctx, src, q); err != nil {
		return nil, err
	}
	note := o.Note
	if note == nil {
		note = io.Discard
	}
	return ex, pc.Check(pprofexport.SampleTypes(ex.Profile), len(ex.Profile.Sample), note)
}

// Found is an image whose file the export read.
type Found struct {
	Rec   *wire.ImageRecord
	Data  []byte
	Where string
}

// WriteBinaries writes each image file to dir/BUILDID/NAME (dir/NAME for an
// image without a build ID), where pprof's PPROF_BINARY_PATH looks first.
func (e *Export) WriteBinaries(dir string) error {
	for _, f := range e.Found {
		name := filepath.Join(dir, path.Base(f.Rec.Path))
		if f.Rec.Key.Kind() == wire.KindBuildID {
			name = filepath.Join(dir, hex.EncodeToString(f.Rec.Key.ID()), path.Base(f.Rec.Path))
		}
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(name, f.Data, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// WriteSummary says what was written to output, and where each image's
// file (its DWARF) came from; with asJSON as JSON.
func (e *Export) WriteSummary(w io.Writer, output string, asJSON bool) error {
	p := e.Profile
	type st struct {
		Type  string `json:"type"`
		Unit  string `json:"unit"`
		Total int64  `json:"total"`
	}
	types := make([]st, len(p.SampleType))
	for i, t := range p.SampleType {
		types[i] = st{Type: t.Type, Unit: t.Unit}
	}
	for _, s := range p.Sample {
		for i, v := range s.Value {
			types[i].Total += v
		}
	}
	type image struct {
		Path  string `json:"path"`
		File  string `json:"file,omitempty"` // where its bytes were found; "" not found
		Lines bool   `json:"lines"`          // locations carry DWARF file and line
	}
	where := map[string]string{}
	for _, f := range e.Found {
		where[f.Rec.Path] = f.Where
	}
	images := make([]image, len(p.Mapping))
	for i, m := range p.Mapping {
		images[i] = image{Path: m.File, File: where[m.File], Lines: m.HasLineNumbers}
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"output": output, "sample_types": types, "samples": len(p.Sample),
			"locations": len(p.Location), "functions": len(p.Function), "mappings": len(p.Mapping), "images": images})
	}
	fmt.Fprintf(w, "wrote %s:", output)
	for _, t := range types {
		fmt.Fprintf(w, " %s = %d,", t.Type, t.Total)
	}
	if _, err := fmt.Fprintf(w, " %d samples at %d locations in %d functions of %d images\n", len(p.Sample), len(p.Location), len(p.Function), len(p.Mapping)); err != nil {
		return err
	}
	for _, im := range images {
		switch {
		case im.File == "":
			fmt.Fprintf(w, "  %s: file not found (symbol names only; give --image-dir)\n", im.Path)
		case im.Lines:
			fmt.Fprintf(w, "  %s: %s, with source lines\n", im.Path, im.File)
		default:
			fmt.Fprintf(w, "  %s: %s, no DWARF line information\n", im.Path, im.File)
		}
	}
	return nil
}
