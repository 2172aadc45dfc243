package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	"github.com/google/pprof/profile"
	"github.com/spf13/cobra"

	"dcpi/analysis/pprofexport"
	"dcpi/profiledb"
	"dcpi/wire"
)

func newPprofCommand() *cobra.Command {
	var opts pprofOptions
	cmd := &cobra.Command{
		Use:   "pprof",
		Short: "Export a profile as a gzip'd profile.proto for go tool pprof",
		Long: `Write the selected samples as a pprof profile (gzip'd profile.proto,
github.com/google/pprof), so that go tool pprof (top, list, disasm, peek,
tags, -http, flame graphs) reads fleet profiles:

  sample types  per event E: E (unit count), the estimated number of events,
                samples x the event's mean sampling period, then E_samples
                (unit samples); the first is the default, and the profile's
                Period is its period (cycles: 63488, the mean of the default
                60K-64K). --period E=N sets a period, --period E=0 exports
                E's samples alone, as type E
  mappings      one per image, the user images by samples first (pprof's
                main binary) and the kernel last: its path, build ID, and,
                when its file is found, the text segment's range and file
                offset
  locations     one per instruction with samples: load base + offset; with
                the image's DWARF, its file and line, and the inlined
                procedures' frames innermost first
  functions     the procedures of the images' uploaded symbol tables
                (unknown_rtn where none covers), and with DWARF the inlined
                ones, with their files and start lines
  labels        host (string) with --by-host, epoch (number) with --by-epoch,
                or when the filters select exactly one
  call stacks   when the nodes recorded stacks for the selection, one sample
                per stack, its locations leaf first: the sampled instruction,
                then each caller's call site (return address - 4); a
                truncated stack ends in a "[truncated]" frame. Flame graphs
                (go tool pprof -http, View > Flame Graph), -peek and -traces
                then show who called what. Totals are the stacks': the flat
                profile's less the samples whose stacks were dropped. --flat
                exports the flat profile (one frame a sample) instead

The image files are found as dcpi list finds them (embedded, the recorded
path, --image-dir); an image whose file is not found keeps its symbol names
and no source lines. The periods are those the selected hosts registered
(events per sample: the counter's mean period times the events multiplexed
on it, so 16384 for imiss under --mux); an event the hosts disagree on is
refused (select hosts with --host, or give --period), and a host registered
by an earlier dcpi gets the default configuration's, with a note.

--binaries DIR writes the image files found to DIR (DIR/BUILDID/NAME), for
go tool pprof's -disasm and -list to read with PPROF_BINARY_PATH=DIR; pprof
disassembles with objdump, which for Alpha is alpha-linux-gnu-objdump: see
docs/tools.md for -tools.

Without --by-host the samples are summed over hosts (the fleet roll-up when
no --host is given). pprof names functions by name alone, so same-named
procedures of different images (say memcpy of two static binaries) share a
row in go tool pprof -top; dcpi prof keeps them apart.

Prints a summary line (or, with --json, {"output", "sample_types": [{"type",
"unit", "total"}], "samples", "locations", "functions", "mappings"}).`,
		Example: `  dcpi pprof --db /tmp/fleet/c1 -o fleet.pb.gz && go tool pprof -top fleet.pb.gz
  dcpi pprof --db /tmp/prof --binaries /tmp/bins -o p.pb.gz && PPROF_BINARY_PATH=/tmp/bins go tool pprof -list main p.pb.gz
  dcpi pprof --db /tmp/fleet/c1 --by-host --by-epoch -o tagged.pb.gz && go tool pprof -tags tagged.pb.gz
  dcpi pprof --db /tmp/fleet/c1 --event imiss --image sort -o imiss.pb.gz
  dcpi pprof --nats nats://127.0.0.1:4222 --label rack=r1 -o - > r1.pb.gz
  dcpi pprof --db /tmp/prof -o stacks.pb.gz && go tool pprof -http :8080 stacks.pb.gz   # flame graph`,
		Args: cobra.NoArgs,
		RunE: opts.run,
	}
	opts.register(cmd)
	return cmd
}

// pprofOptions are the flags of the command newPprofCommand makes.
type pprofOptions struct {
	qf          queryFlags
	output      string
	byHost      bool
	byEpoch     bool
	periodFlags []string
	imageDirs   []string
	binDir      string
	flat        bool
}

func (opts *pprofOptions) run(cmd *cobra.Command, args []string) error {
	sel, err := opts.qf.selection()
	if err != nil {
		return err
	}
	o, err := opts.qf.open(cmd, "dcpi-pprof", &sel)
	if err != nil {
		return err
	}
	defer o.close()
	pc, err := profiledb.SelectedPeriods(cmd.Context(), o.DB, sel.Filter.Hosts, opts.periodFlags)
	if err != nil {
		return err
	}
	periods := pc.Periods
	var found []pprofImageFound
	q := pprofexport.PprofQuery{Filter: sel.Filter, Events: sel.Events, ImagePaths: sel.ImagePaths, ByHost: opts.byHost, ByEpoch: opts.byEpoch,
		Periods: periods, Files: newImageFinder(nil, o, opts.imageDirs), // the summary below says which file each image came from
		Found: func(rec *wire.ImageRecord, data []byte, where string) {
			found = append(found, pprofImageFound{rec, data, where})
		}, Flat: opts.flat}
	if opts.byHost && q.Filter.Hosts == nil {
		if q.Filter.Hosts, err = o.Hosts(cmd.Context()); err != nil {
			return fmt.Errorf("--by-host: %w", err)
		}
	}
	if opts.byEpoch && q.Filter.Epochs == nil {
		if q.Filter.Epochs, err = o.EpochNumbers(cmd.Context()); err != nil {
			return fmt.Errorf("--by-epoch: %w", err)
		}
		if len(q.Filter.Epochs) == 0 {
			return fmt.Errorf("--by-epoch: the database lists no epochs (a dcpi node database has no epoch records); give them with --epochs A-B")
		}
	}
	p, err := pprofexport.Pprof(cmd.Context(), o.src, q)
	if err != nil {
		return err
	}
	if err := pc.Check(pprofexport.SampleTypes(p), len(p.Sample), cmd.ErrOrStderr()); err != nil {
		return err
	}
	if opts.output == "" {
		return fmt.Errorf("--output: give a file name, or - for standard output")
	}
	if opts.binDir != "" {
		if err := writeBinaries(opts.binDir, found); err != nil {
			return fmt.Errorf("--binaries: %w", err)
		}
	}
	var w io.Writer = cmd.OutOrStdout()
	summary := cmd.OutOrStdout()
	if opts.output != "-" {
		fh, err := os.Create(opts.output)
		if err != nil {
			return fmt.Errorf("--output: %w", err)
		}
		defer fh.Close()
		w = fh
	} else {
		summary = cmd.ErrOrStderr()
	}
	if err := p.Write(w); err != nil {
		return fmt.Errorf("write %s: %w", opts.output, err)
	}
	if fh, ok := w.(*os.File); ok {
		if err := fh.Close(); err != nil {
			return fmt.Errorf("write %s: %w", opts.output, err)
		}
	}
	return pprofSummary(summary, opts.output, p, found, opts.qf.json)
}

func (opts *pprofOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	opts.qf.register(f, "sample type `NAME`, in order; the first is the default (repeatable; default: every event present)")
	f.StringVarP(&opts.output, "output", "o", "dcpi.pb.gz", "write the profile to `FILE` (- for standard output)")
	f.BoolVar(&opts.byHost, "by-host", false, "keep hosts apart, labelled host=H")
	f.BoolVar(&opts.byEpoch, "by-epoch", false, "keep epochs apart, labelled epoch=N")
	f.StringArrayVar(&opts.periodFlags, "period", nil, "event `E=N`: E's mean sampling period, N events per sample (0: samples only; repeatable; default: the hosts' registered periods)")
	f.StringArrayVar(&opts.imageDirs, "image-dir", nil, "look for image files under `DIR` too (repeatable)")
	f.StringVar(&opts.binDir, "binaries", "", "write the image files found to `DIR`, for PPROF_BINARY_PATH")
	f.BoolVar(&opts.flat, "flat", false, "export the flat profile even where call stacks were recorded")
}

// pprofImageFound is an image whose file the export read.
type pprofImageFound struct {
	rec   *wire.ImageRecord
	data  []byte
	where string
}

// writeBinaries writes each image file to dir/BUILDID/NAME (dir/NAME for an
// image without a build ID), where pprof's PPROF_BINARY_PATH looks first.
func writeBinaries(dir string, found []pprofImageFound) error {
	for _, f := range found {
		name := filepath.Join(dir, path.Base(f.rec.Path))
		if f.rec.Key.Kind() == wire.KindBuildID {
			name = filepath.Join(dir, hex.EncodeToString(f.rec.Key.ID()), path.Base(f.rec.Path))
		}
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(name, f.data, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// pprofSummary says what was written, and where each image's file (its
// DWARF) came from.
func pprofSummary(w io.Writer, output string, p *profile.Profile, found []pprofImageFound, asJSON bool) error {
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
	for _, f := range found {
		where[f.rec.Path] = f.where
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
