package main

import (
	"time"

	"github.com/spf13/cobra"

	"dcpi/profiledb"
)

func newTrendCommand() *cobra.Command {
	var qf queryFlags
	var opts profiledb.TrendOptions
	var out string
	cmd := &cobra.Command{
		Use:   "trend [procedure=NAME | image=PATH | selection]...",
		Short: "Samples, share and rate per epoch of procedures, images or the selection, over a time range",
		Long: `Print, per epoch of the selection (--since/--from/--to, --epochs; every
epoch without them), the samples of each measure given, their share of the
epoch's selected samples and their rate per second of the epoch; without a
measure, the top --top procedures over the range. -o FILE.svg also draws
the chart. The filters are dcpi prof's; one --event. See docs/tools.md.`,
		Example: `  dcpi trend --db D/c1 --since 1h
  dcpi trend --db D/c1 procedure=lap image=/bin/hashdb -o trend.svg`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Measures = args
			sel, err := qf.selection()
			if err == nil {
				err = opts.Check(sel)
			}
			if err != nil {
				return err
			}
			o, err := qf.open(cmd, "dcpi-trend", &sel)
			if err != nil {
				return err
			}
			defer o.close()
			r, err := profiledb.Trend(cmd.Context(), o.DB, o.src, sel, opts, time.Now())
			if err == nil && out != "" {
				err = r.WriteChartFile(out)
			}
			if err == nil {
				err = r.Write(cmd.OutOrStdout(), cmd.ErrOrStderr(), qf.json)
			}
			return err
		},
	}
	f := cmd.Flags()
	qf.register(f, "the `NAME` of the event counted (default: cycles)")
	f.IntVar(&opts.Top, "top", 0, "without measures, follow the top `N` procedures (default 5)")
	f.StringVar(&opts.Plot, "plot", "rate", "the chart's series as `rate` (samples/s) or share (% of the selection)")
	f.StringVarP(&out, "output", "o", "", "also write the chart to `FILE.svg`")
	return cmd
}
