package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"dcpi/analysis/profileme/paperfigs"
)

func newMeFigure2Command() *cobra.Command {
	o := paperfigs.DefaultFigure2()
	var (
		out    string
		models []string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "figure2",
		Short: "ProfileMe's Figure 2: a load's D-cache misses by counter sampling and by ProfileMe, per instruction",
		Long: `Run a committed workload alone on a one-CPU simulated machine with timing,
once per model with a DMISS counter sampling and once with ProfileMe, and
count each run's D-cache-miss samples per instruction of one procedure
(the ProfileMe paper, Figure 2). A counter's sample names the instruction
the CPU is at when the interrupt is taken, some cycles after the miss;
ProfileMe's names the profiled instruction that missed. The default is
missloop's walk: one load that misses, then 192 nops. The SVG goes to -o;
the per-run summary (with --json the figure's data) to standard output.`,
		Example: `  dcpi me figure2 -o docs/profileme-fig2.svg
  dcpi me figure2 --models ev6 --args 16384,60000 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("args") && o.Workload != paperfigs.DefaultFigure2().Workload {
				o.Args = nil // another workload's own defaults
			}
			var err error
			if o.Models, err = paperfigs.Models(models); err != nil {
				return fmt.Errorf("--models: %w", err)
			}
			f, err := paperfigs.RunFigure2(o)
			if err != nil {
				return err
			}
			return paperfigs.Emit(cmd.OutOrStdout(), f, out, asJSON)
		},
	}
	d := paperfigs.DefaultFigure2()
	f := cmd.Flags()
	f.StringVar(&o.Workload, "workload", d.Workload, "committed workload to run (workloads/README.md lists them)")
	f.StringSliceVar(&o.Args, "args", d.Args, "the workload's arguments (another --workload: its own defaults)")
	f.StringVar(&o.Procedure, "procedure", d.Procedure, "the procedure whose instructions are counted (its load: the one with the most ProfileMe D-miss samples)")
	f.StringSliceVar(&models, "models", []string{"ev5", "ev6"}, "CPU models to run (ev5, ev56, pca56, ev6, ev67)")
	f.Uint64Var(&o.CounterPeriod[0], "counter-period-min", d.CounterPeriod[0], "fewest D-cache misses between counter interrupts")
	f.Uint64Var(&o.CounterPeriod[1], "counter-period-max", d.CounterPeriod[1], "most D-cache misses between counter interrupts")
	f.Uint64Var(&o.MeInterval[0], "interval-min", d.MeInterval[0], "fewest fetched instructions between ProfileMe samples")
	f.Uint64Var(&o.MeInterval[1], "interval-max", d.MeInterval[1], "most fetched instructions between ProfileMe samples")
	f.StringVarP(&out, "output", "o", "", "write the SVG `FILE`")
	f.BoolVar(&asJSON, "json", false, "print the figure's data as JSON")
	return cmd
}
