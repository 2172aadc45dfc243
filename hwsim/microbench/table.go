package microbench

import (
	"fmt"
	"io"
)

// SwitchCost is the cycles one jump mispredict costs in the C-Sn loops:
// the difference in cycles per iteration between a new case every time
// (C-S1) and every third time (C-S3), over the difference in mispredicts
// per iteration. Expected: the HRM's 8-cycle JMP abort penalty (Table
// 2-1) plus the 5 cycles the jmp waits for its target (s4addq 1, ldl 3,
// addq 1).
func SwitchCost(s1, s3 Result) float64 {
	dm := float64(s1.Mispredicts) - float64(s3.Mispredicts)
	if dm <= 0 {
		return 0
	}
	return (float64(s1.Cycles) - float64(s3.Cycles)) / dm
}

// SwitchCostExpect is SwitchCost's analytic value.
const SwitchCostExpect = 8 + 5

// WriteTable writes results as the Markdown table of docs/timing-21264.md.
func WriteTable(w io.Writer, rs []Result) error {
	if _, err := fmt.Fprintln(w, "| benchmark | stresses | instructions | mispredicts | D-cache misses | CPI | expected | error | how expected |\n|---|---|---|---|---|---|---|---|---|"); err != nil {
		return err
	}
	for _, r := range rs {
		exp, errs, why := "—", "—", r.Why
		if r.Expect > 0 {
			exp = fmt.Sprintf("%.4f", r.Expect)
			errs = fmt.Sprintf("%+.1f%%", 100*r.Error())
		}
		if r.Note != "" {
			if why != "" {
				why += ". "
			}
			why += r.Note
		}
		if _, err := fmt.Fprintf(w, "| %s | %s | %d | %d | %d | %.4f | %s | %s | %s |\n",
			r.Name, r.What, r.Instructions, r.Mispredicts, r.DCacheMisses, r.CPI(), exp, errs, why); err != nil {
			return err
		}
	}
	return nil
}
