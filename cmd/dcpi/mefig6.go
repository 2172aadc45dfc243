package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"dcpi/analysis/mefig"
)

func init() { meSubcommands = append(meSubcommands, newMeFigure6Command) }

func newMeFigure6Command() *cobra.Command {
	var (
		c      = mefig.DefaultFig6()
		out    string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "figure6",
		Short: "ProfileMe's Figure 6: path reconstruction from history bits (1-11) and pairs, against the true path",
		Long: `Run a committed workload on a simulated machine under hwsim's transfer
observer, sample instructions at random, and reconstruct each one's path
(the acyclic path prefix of its procedure that led to it, analysis/mepaths)
from its PC and 0 to 11 bits of its path history, alone and with a paired
sample's other PC (1 to --pair-window instructions earlier). Success is
one candidate left, and the true one (the trace's). Procedures with
unresolved jumps are left out (their graphs lack edges). The SVG goes to
-o; the rates to standard output.`,
		Example: `  dcpi me figure6 -o docs/profileme-fig6.svg`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("args") {
				c.Args = mefig.DefaultFig6().Args
			}
			f, err := mefig.RunFigure6(c)
			if err != nil {
				return err
			}
			if out != "" {
				file, err := os.Create(out)
				if err != nil {
					return err
				}
				if err := mefig.WriteFigure6SVG(file, f); err != nil {
					file.Close()
					return err
				}
				if err := file.Close(); err != nil {
					return err
				}
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), f)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "Figure 6: %s on %s, %d sampled instructions (%d in procedures with unresolved jumps left out); true path among the candidates at 11 bits: %.1f%%\n",
				f.Workload, f.Model, f.Samples, f.MissingEdges, 100*f.TruthFound)
			fmt.Fprintln(w, "bits  history  history+pairs")
			for i := range f.History {
				fmt.Fprintf(w, "%4d  %6.1f%%  %6.1f%%\n", i, 100*f.History[i], 100*f.WithPairs[i])
			}
			fmt.Fprintf(w, "with pairs at %d bits, by pair distance:", f.PairBits)
			for i, v := range f.ByDistance {
				fmt.Fprintf(w, " <=%d %.1f%%", f.Distances[i], 100*v)
			}
			fmt.Fprintf(w, " (history alone %.1f%%)\n", 100*f.HistoryAtPB)
			if out != "" {
				fmt.Fprintf(w, "wrote %s\n", out)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.Model, "model", c.Model, "CPU model")
	f.StringVar(&c.Workload, "workload", c.Workload, "committed workload to run (one process: not ccdriver)")
	f.StringSliceVar(&c.Args, "args", nil, "the workload's arguments (default: sort's 4000)")
	f.Uint64Var(&c.Interval, "interval", c.Interval, "mean instructions between sampled instructions")
	f.IntVar(&c.PairWindow, "pair-window", c.PairWindow, "largest pair distance, in instructions (the paper: 50)")
	f.IntVar(&c.PairBits, "pair-bits", c.PairBits, "history bits in the by-distance panel")
	f.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the sampling")
	f.StringVarP(&out, "output", "o", "", "write the SVG `FILE`")
	f.BoolVar(&asJSON, "json", false, "print the figure's data as JSON")
	return cmd
}
