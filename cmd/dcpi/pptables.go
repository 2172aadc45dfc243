package main

import (
	"github.com/spf13/cobra"

	"dcpi/analysis/pptables/reproduce"
)

func newPPTablesCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tables [flags] [WORKLOAD[:ARG,ARG...]...]",
		Short: "The PLDI'97 paper's Tables 1, 2, 4 and 5 on embedded workloads",
		Long: `Run each workload five times on a one-CPU simulated 21164 with ground
truth: the original, instrumented in paths mode, in paths mode with
metrics (dcpi pp instrument --mode paths --metrics; hwsim's rdpic counting
D-cache and I-cache misses), in CCT mode (calls only) and in CCT mode
with metrics (--mode cct --metrics), and print:

  Table 1  overhead: each instrumented process's cycles over the original's
           (paths, flow+HW, context: calls only, context+HW)
  Table 2  perturbation: each metrics run's hwsim ground truth (the program
           image's user-mode cycles, instructions and events) over the
           original's: F for flow+HW, C for context+HW
  Table 4  hot paths by D-cache misses, from the metrics run's own path
           profile: hot paths take at least 1% of the misses, dense ones a
           larger share of the misses than of the instructions (a path's
           instructions are its blocks' lengths times its count)
  Table 5  the same by procedure, with the paths each executed

A workload's arguments follow a colon, comma-separated (default: its
built-in defaults). docs/paths.md sets our numbers beside the paper's.`,
		Example: `  dcpi pp tables
  dcpi pp tables sort:2000 ptrchase:16384,20000`,
		RunE: func(cmd *cobra.Command, args []string) error {
			rows, err := reproduce.RunAll(args)
			if err != nil {
				return err
			}
			if asJSON {
				return reproduce.WriteJSON(cmd.OutOrStdout(), rows)
			}
			return reproduce.Write(cmd.OutOrStdout(), rows)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the tables' rows as JSON")
	return cmd
}
