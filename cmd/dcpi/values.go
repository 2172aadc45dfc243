package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	valuesa "dcpi/analysis/values"
	"dcpi/node/valuemod"
	"dcpi/profiledb"
	"dcpi/simhost"
)

func newValuesCommand() *cobra.Command {
	var opts valuesOptions
	cmd := &cobra.Command{
		Use:   "values [flags]",
		Short: "Show value-sampling hot lists: load latencies, frequent values, semi-invariant operands",
		Long: `dcpi values reads the hot lists a profile run with value sampling kept
(dcpi profile, dcpi node or dcpi demo --values MODULE; docs/values.md),
from a local --db or from the cluster (--nats), and prints one of three
views:

  --view latency    each load's latency hot list binned by memory level
                    (D-cache, S-cache, B-cache, memory), with n (samples),
                    p (1/tau, an offer's chance of entering the list), nv
                    (values listed), DCPI's CYCLES samples at that PC and
                    its CPI as dcpicalc estimates it (cycles at the head
                    of the issue queue per execution; - if unknown)
  --view frequent   each instruction's most frequent values (FP registers
                    as floats, the rest in hex), with their estimated shares
  --view semiinv    instructions whose operand or result mostly holds one
                    value (at least half the samples), ranked by that
                    share times the CYCLES samples

With --truth (a file dcpi profile --values-truth wrote for the same run)
each row also shows the simulator's ground truth, labelled as such:
a load's true shares per level, a value's true share of the executions.
--accuracy-plot then writes an SVG of each load's error against its
samples beside 1/sqrt(n) and prints how many loads are within bounds
(docs/values.md, "Measured").

Shares are estimates tau*c/n, each with one standard deviation. The
interpreter's accounting (interrupts interpreted, given up and why) heads
the report. The shared filters select epochs and hosts (--label too, in a
cluster); --json prints the report for machines.`,
		Example: `  dcpi profile --values loadlat -- ptrchase
  dcpi values --view latency
  dcpi values --db fleet.db --host alpha1 --view frequent --limit 10
  dcpi values --view semiinv --json
  dcpi values --nats nats://127.0.0.1:4222 --label rack=r1 --view latency
  dcpi profile --values loadlat --values-truth vt.txt -o db -- stream
  dcpi values --db db --truth vt.txt --accuracy-plot accuracy.svg`,
		Args: cobra.NoArgs,
		RunE: opts.run,
	}
	opts.register(cmd)
	return cmd
}

// valuesOptions are the flags of the command newValuesCommand makes.
type valuesOptions struct {
	qf         queryFlags
	view       string
	limit      int
	minSamples uint64
	imageDirs  []string
	truthFile  string
	plotFile   string
}

func (opts *valuesOptions) run(cmd *cobra.Command, args []string) error {
	v, ok := map[string]valuesa.View{"latency": valuesa.Latency, "frequent": valuesa.Frequent, "semiinv": valuesa.SemiInvariant}[opts.view]
	if !ok {
		return fmt.Errorf("--view %q: want latency, frequent or semiinv", opts.view)
	}
	sel, err := opts.qf.selection()
	if err != nil {
		return err
	}
	o, err := opts.qf.open(cmd, "dcpi-values", &sel)
	if err != nil {
		return err
	}
	defer o.close()
	q := valuesa.Query{View: v, Epochs: sel.Filter.Epochs, Hosts: sel.Filter.Hosts,
		Images: sel.Filter.Images, Limit: opts.limit, MinSamples: opts.minSamples, Files: newImageFinder(cmd.ErrOrStderr(), o, opts.imageDirs)}
	if opts.truthFile != "" {
		if q.Truth, err = simhost.ReadValueTruthFile(opts.truthFile); err != nil {
			return err
		}
	}
	if opts.plotFile != "" {
		if opts.truthFile == "" || v != valuesa.Latency {
			return fmt.Errorf("--accuracy-plot needs --truth and the latency view")
		}
		q.Limit = 0
	}
	if v == valuesa.Latency && opts.plotFile == "" {
		// DCPI's CPI beside each load needs the hosts' periods;
		// without them (no CYCLES samples) the column stays empty.
		q.Periods, _ = profiledb.CalcPeriods(cmd.Context(), o.DB, sel.Filter.Hosts, nil, io.Discard)
	}
	rep, err := valuesa.Build(cmd.Context(), o.DB, o.src, q)
	if err != nil {
		return err
	}
	if rep.CPINote != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "note: no CPI for some loads: %s\n", rep.CPINote)
	}
	if rep.Stats.Interrupts == 0 {
		where := opts.qf.dbDir
		if len(opts.qf.nats) > 0 {
			where = "the cluster"
		}
		if h := o.emptyHint(cmd.Context(), sel.Filter); h != "" {
			return fmt.Errorf("no value samples selected: %s", h)
		}
		return fmt.Errorf("%s holds no value samples: profile with dcpi profile, dcpi node or dcpi demo --values MODULE (%s)", where, strings.Join(valuemod.Names(), ", "))
	}
	if opts.plotFile != "" {
		return writeAccuracyPlot(cmd.OutOrStdout(), rep, opts.plotFile, opts.qf.json)
	}
	if opts.qf.json {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return valuesa.WriteText(cmd.OutOrStdout(), rep)
}

func (opts *valuesOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	opts.qf.register(f, "ignored: hot lists are not per event")
	f.StringVar(&opts.view, "view", "latency", "what to show: latency, frequent or semiinv")
	f.IntVar(&opts.limit, "limit", 30, "rows (0: all)")
	f.Uint64Var(&opts.minSamples, "min-samples", 1, "skip lists with fewer samples")
	f.StringArrayVar(&opts.imageDirs, "image-dir", nil, "look for image files under `DIR` too (repeatable)")
	f.StringVar(&opts.truthFile, "truth", "", "show the simulator's ground truth from `FILE` (dcpi profile --values-truth of the same run) beside the estimates")
	f.StringVar(&opts.plotFile, "accuracy-plot", "", "with --truth: write each load's |estimate - truth| against its samples, beside 1/sqrt(n), as an SVG to `FILE`")
}

// writeAccuracyPlot writes rep's accuracy against its truth as an SVG to
// file and a summary (or, with asJSON, the points) to w.
func writeAccuracyPlot(w io.Writer, rep *valuesa.Report, file string, asJSON bool) error {
	pts := valuesa.Accuracy(rep)
	if len(pts) == 0 {
		return fmt.Errorf("--accuracy-plot: no load in the selection has ground truth (is --truth from the same run?)")
	}
	var images []string
	for _, p := range pts {
		if !slices.Contains(images, p.Image) {
			images = append(images, p.Image)
		}
	}
	slices.Sort(images)
	err := simhost.WriteFileWith(file, func(w io.Writer) error {
		return valuesa.WriteAccuracySVG(w, pts, "Load-latency shares against ground truth: "+strings.Join(images, ", "))
	})
	if err != nil {
		return fmt.Errorf("--accuracy-plot %s: %w", file, err)
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Summary valuesa.AccuracySummary `json:"summary"`
			Points  []valuesa.AccuracyPoint `json:"points"`
		}{valuesa.Summarize(pts), pts})
	}
	return valuesa.WriteAccuracyText(w, pts, file)
}
