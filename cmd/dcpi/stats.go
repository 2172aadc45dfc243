package main

import (
	"github.com/spf13/cobra"

	"dcpi/analysis/report"
	"dcpi/profiledb"
)

func newStatsCommand() *cobra.Command {
	var (
		qf      queryFlags
		sets    []string
		byHost  bool
		byEpoch bool
		by      string
		limit   int
		minSum  uint64
	)
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Statistics of each procedure's samples across sample sets, DCPI's dcpistats",
		Long: `Compare several sample sets — epochs, hosts, runs — per procedure, as
dcpistats did (sec. 3.3 and Figure 3 of the paper): for each procedure its
range% (max - min over the sum: the normalized range), sum, sum% of all the
sets' samples, N (sets with samples), mean, std-dev (K-1 denominator), min and
max over the K sets, and each set's count; sorted by normalized range, so the
procedure whose samples vary most comes first.

Sets are given as repeatable --set SPEC, a comma-separated list of
  epoch=N  epochs=A-B  since=D  from=T  to=T  host=H  label=K=V  pid=P
which replace the shared flag of the same dimension for that set; or
--by-host (one set per host) or --by-epoch (one set per epoch), over the hosts
or epochs the shared flags select or, without them, all that the database
lists. One event is compared: --event NAME (default cycles).

--json prints {"event", "by", "sets": [{"name", "total"}], "total", "rows":
[{"procedure", "image", "counts", "sum", "n", "mean", "std_dev", "min", "max",
"range_pct", "sum_pct"}], "small_rows", "omitted_rows"}, "counts" parallel to "sets".`,
		Example: `  dcpi stats --db /tmp/fleet/c1 --by-host
  dcpi stats --db /tmp/fleet/c1 --set epoch=1 --set epoch=2 --limit 10
  dcpi stats --db /tmp/fleet/c1 --set host=alpha0 --set host=alpha1 --by image
  dcpi stats --nats nats://127.0.0.1:4222 --set label=rack=r1 --set label=rack=r2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			sel, err := qf.selection()
			if err != nil {
				return err
			}
			q, err := profiledb.StatsOptions{By: by, Limit: limit, MinSum: minSum}.Query(sel)
			if err != nil {
				return err
			}
			o, err := qf.open(cmd, "dcpi-stats", &sel)
			if err != nil {
				return err
			}
			defer o.close()
			if q.Sets, err = profiledb.SampleSets(cmd.Context(), o.DB, sel.Filter, sets, byHost, byEpoch); err != nil {
				return err
			}
			t, err := report.Stats(cmd.Context(), o.src, q)
			if err != nil {
				return err
			}
			return emit(cmd, qf.json, t)
		},
	}
	f := cmd.Flags()
	qf.register(f, "the event `NAME` compared (default cycles)")
	f.StringArrayVar(&sets, "set", nil, "a sample set: `SPEC` of epoch=N, epochs=A-B, since=D, from=T, to=T, host=H, label=K=V, pid=P, comma-separated (repeatable)")
	f.BoolVar(&byHost, "by-host", false, "one sample set per host")
	f.BoolVar(&byEpoch, "by-epoch", false, "one sample set per epoch")
	f.StringVar(&by, "by", "procedure", "one row per `procedure` or per image")
	f.IntVar(&limit, "limit", 0, "print the first `N` rows (0: all)")
	f.Uint64Var(&minSum, "min-sum", 0, "drop procedures with fewer than `N` samples over all sets (their range% is mostly noise)")
	return cmd
}
