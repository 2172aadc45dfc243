package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"dcpi/analysis/pprofexport"
	"dcpi/profiledb/pprofout"
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
	if opts.output == "" {
		return fmt.Errorf("--output: give a file name, or - for standard output")
	}
	sel, err := opts.qf.selection()
	if err != nil {
		return err
	}
	o, err := opts.qf.open(cmd, "dcpi-pprof", &sel)
	if err != nil {
		return err
	}
	defer o.close()
	ex, err := pprofout.Run(cmd.Context(), o.DB, o.src, pprofout.Options{Selection: sel, ByHost: opts.byHost, ByEpoch: opts.byEpoch,
		Flat: opts.flat, PeriodFlags: opts.periodFlags, Files: newImageFinder(nil, o, opts.imageDirs), Note: cmd.ErrOrStderr()})
	if err != nil {
		return err
	}
	if opts.binDir != "" {
		if err := ex.WriteBinaries(opts.binDir); err != nil {
			return fmt.Errorf("--binaries: %w", err)
		}
	}
	summary, err := pprofexport.Save(ex.Profile, opts.output, cmd.OutOrStdout(), cmd.ErrOrStderr())
	if err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	return ex.WriteSummary(summary, opts.output, opts.qf.json)
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
