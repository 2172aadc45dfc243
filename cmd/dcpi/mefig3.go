package main

import (
	"github.com/spf13/cobra"

	"dcpi/analysis/profileme/paperfigs"
	"dcpi/hwsim"
)

func newMeFigure3Command() *cobra.Command {
	var (
		model, workload, out string
		args                 []string
		imin, imax           uint64
		minSamples           uint64
		asJSON               bool
	)
	cmd := &cobra.Command{
		Use:   "figure3",
		Short: "ProfileMe's Figure 3: per-instruction estimate/actual of retires and D-misses against 1 ± 1/sqrt(samples)",
		Long: `Run a committed workload alone on a one-CPU simulated machine with timing,
ground truth and ProfileMe on, and plot, per instruction with at least
--min-samples samples, the estimate k·S of its retires (and of its
D-cache misses) divided by the ground truth's count, against k, with the
curves y = 1 ± 1/sqrt(k) (the ProfileMe paper, sec. 5.1, Figure 3). About
two thirds of the points are expected inside. The SVG goes to -o; the
summary (and with --json the points) to standard output.`,
		Example: `  dcpi me figure3 --model ev5 --workload hashdb -o docs/profileme-fig3.svg`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			me := hwsim.ProfileMeConfig{IntervalMin: imin, IntervalMax: imax, Copies: hwsim.DefaultProfileMe().Copies}
			if err := me.Validate(); err != nil {
				return err
			}
			var a []string
			if cmd.Flags().Changed("args") {
				a = append([]string{}, args...)
			}
			f, err := paperfigs.RunFigure3(paperfigs.Fig3Config{Model: model, Workload: workload, Args: a, Me: me, MinSamples: minSamples})
			if err != nil {
				return err
			}
			return paperfigs.Emit(cmd.OutOrStdout(), f, out, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&model, "model", "ev5", "CPU model (ev5, ev56, pca56, ev6, ev67)")
	f.StringVar(&workload, "workload", "hashdb", "committed workload to run (workloads/README.md lists them)")
	f.StringSliceVar(&args, "args", nil, "the workload's arguments (default its own)")
	f.Uint64Var(&imin, "interval-min", 64, "fewest fetched instructions between samples")
	f.Uint64Var(&imax, "interval-max", 192, "most fetched instructions between samples (S is the mean of min and max)")
	f.Uint64Var(&minSamples, "min-samples", 10, "instructions with fewer samples of a quantity are left out of its panel")
	f.StringVarP(&out, "output", "o", "", "write the SVG `FILE`")
	f.BoolVar(&asJSON, "json", false, "print the figure's data as JSON")
	return cmd
}
