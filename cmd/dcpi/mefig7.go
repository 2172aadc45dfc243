package main

import (
	"github.com/spf13/cobra"

	"dcpi/analysis/profileme/paperfigs"
)

func newMeFigure7Command() *cobra.Command {
	var (
		c      = paperfigs.DefaultFig7()
		out    string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "figure7",
		Short: "ProfileMe's Figure 7: per instruction, latency against wasted issue slots (paired sampling on the 21264)",
		Long: `Run a committed workload on the 21264 core with paired ProfileMe sampling,
sum each instruction's paired samples as the driver does, and plot its
total latency from fetch to ready-to-retire (L·S/2) against the issue
slots wasted while it was in progress (L·C·S/2 - U·W·S, dcpi me's
estimator). Prints the rank correlation of the two and the instructions
whose ranks disagree most: latency is a poor proxy for wasted slots
(the ProfileMe paper, sec. 6).`,
		Example: `  dcpi me figure7 -o docs/profileme-fig7.svg`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("args") {
				c.Args = paperfigs.DefaultFig7().Args
			}
			f, err := paperfigs.RunFigure7(c)
			if err != nil {
				return err
			}
			return paperfigs.Emit(cmd.OutOrStdout(), f, out, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.Model, "model", c.Model, "CPU model (paired sampling measures concurrency on the 21264: ev6, ev67)")
	f.StringVar(&c.Workload, "workload", c.Workload, "committed workload to run")
	f.StringSliceVar(&c.Args, "args", nil, "the workload's arguments (default: its own)")
	f.Uint64Var(&c.Me.IntervalMin, "interval-min", c.Me.IntervalMin, "fewest fetched instructions between pairs")
	f.Uint64Var(&c.Me.IntervalMax, "interval-max", c.Me.IntervalMax, "most fetched instructions between pairs")
	f.Uint32Var(&c.Me.PairWindow, "pair-window", c.Me.PairWindow, "W, the largest intra-pair distance")
	f.Uint64Var(&c.MinSamples, "min-samples", c.MinSamples, "paired samples an instruction needs to be plotted")
	f.StringVarP(&out, "output", "o", "", "write the SVG `FILE`")
	f.BoolVar(&asJSON, "json", false, "print the figure's data as JSON")
	return cmd
}
