package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	valuesa "dcpi/analysis/values"
	"dcpi/hwsim"
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
	v, err := valuesa.ParseView(opts.view)
	if err != nil {
		return err
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
	vo := valuesa.Options{Query: valuesa.Query{View: v, Epochs: sel.Filter.Epochs, Hosts: sel.Filter.Hosts, Images: sel.Filter.Images,
		Limit: opts.limit, MinSamples: opts.minSamples, Files: newImageFinder(cmd.ErrOrStderr(), o, opts.imageDirs),
		Me: o.DB, MeInterval: profiledb.MeIntervalOf(o.DB, hwsim.DefaultProfileMe().MeanInterval())},
		PlotFile: opts.plotFile, Where: opts.qf.dbDir, Note: cmd.ErrOrStderr(),
		ReadPeriods: func(ctx context.Context) (map[string]map[uint8]float64, error) {
			return profiledb.CalcPeriods(ctx, o.DB, sel.Filter.Hosts, nil, io.Discard)
		},
		Hint: func() string { return o.emptyHint(cmd.Context(), sel.Filter) }}
	if len(opts.qf.nats) > 0 {
		vo.Where = "the cluster"
	}
	if opts.truthFile != "" {
		if vo.Truth, err = simhost.ReadValueTruthFile(opts.truthFile); err != nil {
			return err
		}
	}
	res, err := valuesa.Run(cmd.Context(), o.DB, o.src, vo)
	if err != nil {
		return err
	}
	if res.Plot != nil {
		if err := simhost.WriteFileWith(opts.plotFile, res.Plot.WriteSVG); err != nil {
			return fmt.Errorf("--accuracy-plot %s: %w", opts.plotFile, err)
		}
	}
	return emit(cmd, opts.qf.json, res)
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
