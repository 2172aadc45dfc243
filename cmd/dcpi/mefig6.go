package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"dcpi/analysis/profileme/paperfigs"
)

func newMeFigure6Command() *cobra.Command {
	var (
		c         = paperfigs.DefaultFig6()
		workloads []string
		args      []string
		out       string
		asJSON    bool
	)
	cmd := &cobra.Command{
		Use:   "figure6",
		Short: "ProfileMe's Figure 6: path reconstruction by execution counts, history bits (1-11) and pairs, against the true path",
		Long: `Run committed workloads on a simulated machine under hwsim's transfer
observer, sample instructions at random, and reconstruct the path segment
that led to each (analysis/mepaths: walking back from the PC through the
CFG until h conditional branches, 1 to 11, or — intraprocedurally — the
routine's beginning; interprocedurally on through its call sites) by three
schemes: execution counts (the likeliest predecessor at every merge, from
the run's block and edge counts), history bits, and history bits with a
paired sample's other PC (1 to --pair-window instructions earlier).
Success is one candidate left, and the true one (the trace's). Samples in
procedures with unresolved jumps are left out (their graphs lack edges).
The SVG (both graphs, from all workloads' samples together) goes to -o;
the rates, per workload and in total, to standard output.`,
		Example: `  dcpi me figure6 -o docs/profileme-fig6.svg
  dcpi me figure6 --workload sort --args 1500`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(workloads) > 0 {
				c.Workloads = nil
				for _, w := range workloads {
					c.Workloads = append(c.Workloads, paperfigs.Fig6Workload{Name: w})
				}
			}
			if cmd.Flags().Changed("args") {
				if len(c.Workloads) != 1 {
					return fmt.Errorf("--args needs exactly one --workload")
				}
				c.Workloads[0].Args = args
			}
			f, err := paperfigs.RunFigure6(c)
			if err != nil {
				return err
			}
			return paperfigs.Emit(cmd.OutOrStdout(), f, out, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.Model, "model", c.Model, "CPU model")
	var names []string
	for _, w := range c.Workloads {
		names = append(names, w.Name)
	}
	f.StringSliceVar(&workloads, "workload", nil, "committed workloads to run, one process each (default: "+strings.Join(names, ",")+", at the sizes docs/profileme.md gives)")
	f.StringSliceVar(&args, "args", nil, "the workload's arguments (with one --workload)")
	f.Uint64Var(&c.Interval, "interval", c.Interval, "mean instructions between sampled instructions")
	f.IntVar(&c.PairWindow, "pair-window", c.PairWindow, "largest pair distance, in instructions (the paper: 50)")
	f.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the sampling")
	f.StringVarP(&out, "output", "o", "", "write the SVG `FILE`")
	f.BoolVar(&asJSON, "json", false, "print the figure's data as JSON")
	return cmd
}
