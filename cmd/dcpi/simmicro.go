package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"dcpi/hwsim/ev6"
	"dcpi/hwsim/microbench"
)

func newSimMicroCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "micro [NAME...]",
		Short: "Run Desikan et al.'s microbenchmarks on the 21264 core and print CPI beside the analytic expectation",
		Long: `Run the microbenchmarks after Desikan, Burger and Keckler (ISCA 2001) —
the embedded workload micro, one loop per procedure — each alone on a
one-CPU 21264 host (--model ev6 with timing) with ground truth, and print
docs/timing-21264.md's table: per benchmark the instructions of its loop,
mispredicts, D-cache misses, the measured CPI, the CPI worked out by hand
from the published parameters, the error, and how it was worked out; then
the C-Sn loops' cost per jump mispredict. NAMEs select benchmarks (C-C,
C-R, C-S1, ..., M-M); none runs all.`,
		Example: `  dcpi sim micro
  dcpi sim micro E-I M-L2`,
		RunE: func(cmd *cobra.Command, args []string) error {
			names := args
			if len(names) == 0 {
				for _, b := range microbench.Suite() {
					names = append(names, b.Name)
				}
			}
			var rs []microbench.Result
			byName := map[string]microbench.Result{}
			for _, n := range names {
				r, err := microbench.Run(n, ev6.Params{})
				if err != nil {
					return err
				}
				rs = append(rs, r)
				byName[n] = r
			}
			w := cmd.OutOrStdout()
			if err := microbench.WriteTable(w, rs); err != nil {
				return err
			}
			s1, ok1 := byName["C-S1"]
			s3, ok3 := byName["C-S3"]
			if ok1 && ok3 {
				fmt.Fprintf(w, "\nC-Sn: %.2f cycles per jump mispredict (expected %d)\n",
					microbench.SwitchCost(s1, s3), microbench.SwitchCostExpect)
			}
			return nil
		},
	}
}
