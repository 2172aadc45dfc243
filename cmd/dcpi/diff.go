package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"dcpi/analysis/report"
	"dcpi/profiledb"
)

func newDiffCommand() *cobra.Command {
	var (
		qf    queryFlags
		a, b  string
		z     float64
		by    string
		limit int
	)
	cmd := &cobra.Command{
		Use:   "diff [OLD NEW | --a SPEC --b SPEC]",
		Short: "Two profiles side by side per procedure, with the change in share and its significance",
		Long: `Compare two profiles — two databases, two epochs, two hosts, two labels — per procedure:
each one's samples and share of its profile's samples of the event, the
change in share (B - A, in percentage points) and its z-score, sorted with the
significant changes first, largest first.

The significance comes from the sample counts: ProfileMe (sec. 5.1) shows a
count of k samples has a relative error of 1/sqrt(k), so a share k/N has
standard error sqrt(k)/N, and the change's z-score is

  z = (kB/NB - kA/NA) / sqrt(kA/NA^2 + kB/NB^2)

(a two-proportion z-test with Poisson variances). |z| below --z (default 3)
is marked "~": not a significant change, whatever its size.

OLD NEW are two databases (perf diff's perf.data.old perf.data); none and
no --a, --b mean --db.old --db, what a second dcpi profile leaves. Other
models or events are refused. --a and --b instead take two sets of one
database, dcpi stats --set's SPEC: comma-separated epoch=N, epochs=A-B,
since=D, from=T, to=T (a time range), host=H, label=K=V (cluster), pid=P, each
replacing the shared flag of its dimension. One event: --event (default cycles).

--json prints {"event", "by", "a": {"name", "total"}, "b", "z_threshold",
"rows": [{"procedure", "image", "count_a", "count_b", "share_pct_a",
"share_pct_b", "delta_pct", "z", "significant"}], "insignificant_rows",
"omitted_rows"}.`,
		Example: `  dcpi diff
  dcpi diff before.db after.db --limit 10
  dcpi diff --db /tmp/fleet/c1 --a epoch=1 --b epoch=2
  dcpi diff --db /tmp/fleet/c1 --a from=09:00,to=10:00 --b since=1h --limit 10
  dcpi diff --nats nats://127.0.0.1:4222 --a label=kernel=old --b label=kernel=new --z 4`,
		Args: cobra.RangeArgs(0, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			sel, err := qf.selection()
			if err != nil {
				return err
			}
			opts := profiledb.DiffOptions{A: a, B: b, Z: z, By: by, Limit: limit}
			if t, ok, err := profiledb.DiffDatabases(cmd.Context(), args, a+b, qf.dbDir, sel, opts); err != nil {
				return err
			} else if ok {
				return emit(cmd, qf.json, t)
			}
			q, err := opts.Query(sel)
			if err != nil {
				return err
			}
			o, err := qf.open(cmd, "dcpi-diff", &sel)
			if err != nil {
				return err
			}
			defer o.close()
			if q.A, err = profiledb.ParseSetSpec(cmd.Context(), o.DB, sel.Filter, a); err != nil {
				return fmt.Errorf("--a: %w", err)
			}
			if q.B, err = profiledb.ParseSetSpec(cmd.Context(), o.DB, sel.Filter, b); err != nil {
				return fmt.Errorf("--b: %w", err)
			}
			t, err := report.Diff(cmd.Context(), o.src, q)
			if err != nil {
				return err
			}
			return emit(cmd, qf.json, t)
		},
	}
	f := cmd.Flags()
	qf.register(f, "the event `NAME` compared (default cycles)")
	f.StringVar(&a, "a", "", "profile A: `SPEC` as dcpi stats --set")
	f.StringVar(&b, "b", "", "profile B: `SPEC` as dcpi stats --set")
	f.Float64Var(&z, "z", report.DefaultZ, "significance threshold in standard errors")
	f.StringVar(&by, "by", "procedure", "one row per `procedure` or per image")
	f.IntVar(&limit, "limit", 0, "print the first `N` rows (0: all)")
	return cmd
}
