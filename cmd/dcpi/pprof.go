package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/spf13/cobra"

	"dcpi/analysis"
	"dcpi/analysis/pprofexport"
	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/storage"
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
	pc, err := pprofSelectedPeriods(o, sel.Filter.Hosts, opts.periodFlags)
	if err != nil {
		return err
	}
	periods := pc.periods
	var found []pprofImageFound
	q := pprofexport.PprofQuery{Filter: sel.Filter, Events: sel.Events, ImagePaths: sel.ImagePaths, ByHost: opts.byHost, ByEpoch: opts.byEpoch,
		Periods: periods, Files: newImageFinder(nil, o, opts.imageDirs), // the summary below says which file each image came from
		Found: func(rec *wire.ImageRecord, data []byte, where string) {
			found = append(found, pprofImageFound{rec, data, where})
		}, Flat: opts.flat}
	if opts.byHost && q.Filter.Hosts == nil {
		if q.Filter.Hosts, err = o.hosts(); err != nil {
			return fmt.Errorf("--by-host: %w", err)
		}
	}
	if opts.byEpoch && q.Filter.Epochs == nil {
		if q.Filter.Epochs, err = o.epochs(); err != nil {
			return fmt.Errorf("--by-epoch: %w", err)
		}
		if len(q.Filter.Epochs) == 0 {
			return fmt.Errorf("--by-epoch: the database lists no epochs (a dcpi node database has no epoch records); give them with --epochs A-B")
		}
	}
	p, err := pprofexport.Pprof(o.src, q)
	if err != nil {
		return err
	}
	if err := pc.check(p, cmd.ErrOrStderr()); err != nil {
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

// defaultPeriods is every event's events per sample under the default
// counter configuration (hwsim.DefaultProfile, whose second counter's
// period dcpi node gives every event but cycles): what a host registered
// before node records carried periods is taken to have used.
func defaultPeriods() map[uint8]uint64 {
	def := hwsim.DefaultProfile()
	periods := map[uint8]uint64{}
	for e := range alpha.NumEvents {
		spec := def.Counters[1]
		if e == alpha.EvCycles {
			spec = def.Counters[0]
		}
		periods[uint8(e)] = (spec.PeriodMin + spec.PeriodMax) / 2
	}
	return periods
}

// pprofPeriods is the export's choice of each event's period (events per
// sample) for the selected hosts.
type pprofPeriods struct {
	// periods are those all the selected hosts agree on, or --period's.
	periods map[uint8]int64
	// conflicts are the events the selected hosts disagree on (with no
	// --period), each with who says what: exported as samples only, and
	// refused by check if the profile holds any of them.
	conflicts map[uint8]string
	// legacy are the selected hosts whose node records carry no periods
	// (registered by an earlier build, or not at all), given the default
	// configuration's.
	legacy []string
}

// choosePeriods takes each event's period from the node records of hosts:
// one every host that records a period for the event agrees on, else a
// conflict; a host without periods counts as the default configuration
// (defaultPeriods). --period E=N overrides (E=0: samples only).
func choosePeriods(nodes []storage.Node, hosts []string, flags []string) (pprofPeriods, error) {
	byHost := map[string]storage.Node{}
	for _, n := range nodes {
		byHost[n.Host] = n
	}
	type vote struct {
		period uint64
		hosts  []string
	}
	votes := map[uint8][]vote{}
	pc := pprofPeriods{periods: map[uint8]int64{}, conflicts: map[uint8]string{}}
	for _, h := range hosts {
		periods := byHost[h].Periods
		if len(periods) == 0 {
			pc.legacy = append(pc.legacy, h)
			periods = defaultPeriods()
		}
		for e, n := range periods {
			i := slices.IndexFunc(votes[e], func(v vote) bool { return v.period == n })
			if i < 0 {
				votes[e] = append(votes[e], vote{period: n})
				i = len(votes[e]) - 1
			}
			votes[e][i].hosts = append(votes[e][i].hosts, h)
		}
	}
	if len(hosts) == 0 {
		// Nothing selected, or no host known: the default, as for a
		// host without periods (and no samples to weigh anyway).
		for e, n := range defaultPeriods() {
			votes[e] = []vote{{period: n}}
		}
	}
	for e, vs := range votes {
		if len(vs) == 1 {
			pc.periods[e] = int64(min(vs[0].period, math.MaxInt64))
			continue
		}
		var says []string
		for _, v := range vs {
			says = append(says, fmt.Sprintf("%d on %s", v.period, strings.Join(v.hosts, ", ")))
		}
		slices.Sort(says)
		pc.conflicts[e] = strings.Join(says, "; ")
	}
	for _, f := range flags {
		name, v, ok := strings.Cut(f, "=")
		if !ok {
			return pc, fmt.Errorf("--period %q: want EVENT=N", f)
		}
		e, err := analysis.ParseEvent(strings.TrimSpace(name))
		if err != nil {
			return pc, fmt.Errorf("--period %q: %w", f, errors.Unwrap(err))
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return pc, fmt.Errorf("--period %q: want a number of events >= 0", f)
		}
		delete(pc.conflicts, e)
		if n == 0 {
			delete(pc.periods, e)
		} else {
			pc.periods[e] = n
		}
	}
	return pc, nil
}

// pprofSelectedPeriods chooses the periods for the hosts the filter
// selects (all the source's when it names none) from the source's node
// registry.
func pprofSelectedPeriods(o *openedSource, hosts []string, flags []string) (pprofPeriods, error) {
	nodes, err := o.nodes()
	if err != nil {
		return pprofPeriods{}, fmt.Errorf("sampling periods: %w", err)
	}
	if hosts == nil {
		if hosts, err = o.hosts(); err != nil {
			return pprofPeriods{}, fmt.Errorf("sampling periods: %w", err)
		}
	}
	return choosePeriods(nodes, hosts, flags)
}

// check refuses a profile holding an event the hosts disagree on, and
// notes on w the hosts given the default configuration's periods.
func (pc pprofPeriods) check(p *profile.Profile, w io.Writer) error {
	for e, says := range pc.conflicts {
		name := analysis.EventName(e)
		for _, st := range p.SampleType {
			if st.Type == name || st.Type == name+"_samples" {
				return fmt.Errorf("the selected hosts sample %s with different periods (events per sample: %s): select hosts that agree with --host, or give --period %s=N (0: samples only)", name, says, name)
			}
		}
	}
	if len(pc.legacy) > 0 && len(p.Sample) > 0 {
		def := defaultPeriods()
		fmt.Fprintf(w, "note: no recorded sampling periods for %s (registered by an earlier dcpi): using the default configuration's (cycles %d, other events %d; --period sets them)\n",
			strings.Join(pc.legacy, ", "), def[uint8(alpha.EvCycles)], def[uint8(alpha.EvIMiss)])
	}
	return nil
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
