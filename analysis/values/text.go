package values

import (
	"dcpi/wire"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"dcpi/conservation"
)

// WriteText writes rep as dcpi values prints it: the interpreter's
// accounting, then one row per instruction of the report's view, each
// followed by the simulator's ground truth when the report has it.
func WriteText(w io.Writer, rep *Report) error {
	fmt.Fprintf(w, "value sampling (%s): %s\n\n", strings.Join(rep.Modules, ","), conservation.ValuesLine(wire.ValueStats(rep.Stats), 0))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	switch rep.View {
	case "latency":
		fmt.Fprintln(tw, "pc\tprocedure\tinstruction\tn\tp\tnv\tdcache\tscache\tbcache\tmemory\tcycles\tcpi\tlatencies (cycles: share)")
		for _, r := range rep.Rows {
			fmt.Fprintf(tw, "%#x\t%s\t%s\t%d\t1/%.0f\t%d", r.PC, r.Procedure, r.Insn, r.Samples, 1/r.P, r.NV)
			for _, s := range r.Levels {
				fmt.Fprintf(tw, "\t%.1f%%", 100*s)
			}
			cpi := "-"
			if r.CPIKnown {
				cpi = fmt.Sprintf("%.1f", r.CPI)
				if r.CPILow {
					cpi += "?" // dcpicalc's low confidence: never printed as confident
				}
			}
			fmt.Fprintf(tw, "\t%d\t%s\t%s\n", r.Cycles, cpi, valueList(r.Values, 6))
			if r.Truth != nil {
				fmt.Fprintf(tw, "\t\t  truth (hwsim)\t%d\t\t", r.Truth.Executions)
				for _, s := range r.Truth.Levels {
					fmt.Fprintf(tw, "\t%.1f%%", 100*s)
				}
				fmt.Fprintf(tw, "\t\t\t%s\n", truthList(r.Values, r.Truth.Shares, 6))
			}
		}
	default:
		fmt.Fprintln(tw, "pc\tprocedure\tinstruction\tkind\tn\tp\tnv\tcycles\tvalues (share)")
		for _, r := range rep.Rows {
			fmt.Fprintf(tw, "%#x\t%s\t%s\t%s\t%d\t1/%.0f\t%d\t%d\t%s\n", r.PC, r.Procedure, r.Insn, r.Kind, r.Samples, 1/r.P, r.NV, r.Cycles, valueList(r.Values, 4))
			if r.Truth != nil {
				fmt.Fprintf(tw, "\t\t  truth (hwsim)\t\t%d\t\t\t\t%s\n", r.Truth.Executions, truthList(r.Values, r.Truth.Shares, 4))
			}
		}
	}
	return tw.Flush()
}

// truthList prints the true shares of the first n listed values ("?"
// where the truth has no exact count).
func truthList(vs []Value, shares []float64, n int) string {
	var parts []string
	for i, v := range vs {
		if i == n {
			parts = append(parts, "...")
			break
		}
		s := "?"
		if i < len(shares) && shares[i] >= 0 {
			s = fmt.Sprintf("%.1f%%", 100*shares[i])
		}
		parts = append(parts, fmt.Sprintf("%s: %s", v.Value, s))
	}
	return strings.Join(parts, "  ")
}

func valueList(vs []Value, n int) string {
	var parts []string
	for i, v := range vs {
		if i == n {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, fmt.Sprintf("%s: %.1f%%±%.1f", v.Value, 100*v.Share, 100*v.Error))
	}
	return strings.Join(parts, "  ")
}
