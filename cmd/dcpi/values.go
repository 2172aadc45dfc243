package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	valuesa "dcpi/analysis/values"
	"dcpi/hwsim"
	"dcpi/node"
	"dcpi/node/valuemod"
	"dcpi/simhost"
	"dcpi/storage"
	"dcpi/wire"
)

func init() { subcommands = append(subcommands, newValuesCommand) }

// setValues turns value sampling on for dcpi profile: --values, else the
// configuration's node.values. An unknown module is an error listing the
// known ones.
func setValues(cmd *cobra.Command, ncfg *simhost.Config, fromConfig string, o *profileOptions) error {
	if !cmd.Flags().Changed("values") {
		o.values = fromConfig
	}
	if o.values == "" {
		return nil
	}
	if _, err := valuemod.Lookup(o.values); err != nil {
		return fmt.Errorf("--values: %w", err)
	}
	ncfg.Node.Values = node.DefaultValuesConfig(o.values)
	return nil
}

// errValuesLocalOnly refuses node.values for a cluster node: the
// transport and the coordinator do not carry value records yet.
var errValuesLocalOnly = errors.New("node.values: value sampling runs under dcpi profile only for now; a cluster node's transport does not carry value records (docs/values.md)")

func hostMachines(hosts []profiledHost) []*hwsim.Machine {
	out := make([]*hwsim.Machine, len(hosts))
	for i := range hosts {
		out[i] = hosts[i].m
	}
	return out
}

// printValueConservation prints what the interpreter did with every
// counter interrupt, from the database, beside what the machines counted:
// every interrupt is interpreted to the end, given up for a named reason,
// or had no user context (vmunix, idle).
func printValueConservation(w io.Writer, db *storage.DB, machines []*hwsim.Machine) error {
	mods, s, err := db.ValueTotals(storage.ValueQuery{})
	if err != nil {
		return err
	}
	var delivered, stepped uint64
	for _, m := range machines {
		for _, c := range m.CPUStats() {
			for _, n := range c.Interrupts {
				delivered += n
			}
			stepped += c.Interpreted
		}
	}
	fmt.Fprintf(w, "value sampling (%s): %s\n", strings.Join(mods, ","), valueConservationLine(s, delivered))
	fmt.Fprintf(w, "  %d instructions interpreted (%d stepped by the machines), %d values offered, %d lost to full tables, %d unattributed\n",
		s.Steps, stepped, s.Values, s.TableFull, s.Unattributed)
	if s.Interrupts != delivered {
		return fmt.Errorf("value sampling accounts for %d interrupts, the machines delivered %d", s.Interrupts, delivered)
	}
	return nil
}

func valueConservationLine(s wire.ValueStats, delivered uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d interrupts = %d interpreted + %d without user context", s.Interrupts, s.Completed, s.NoContext)
	for _, k := range sortedKeys(s.GaveUp) {
		fmt.Fprintf(&b, " + %d gave up (%s)", s.GaveUp[k], k)
	}
	if delivered > 0 {
		fmt.Fprintf(&b, "; delivered %d", delivered)
	}
	return b.String()
}

func sortedKeys(m map[string]uint64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func newValuesCommand() *cobra.Command {
	var qf queryFlags
	var (
		view       string
		limit      int
		minSamples uint64
		imageDirs  []string
	)
	cmd := &cobra.Command{
		Use:   "values [flags]",
		Short: "Show value-sampling hot lists: load latencies, frequent values, semi-invariant operands",
		Long: `dcpi values reads the hot lists a profile run with value sampling kept
(dcpi profile --values MODULE; docs/values.md) and prints one of three views:

  --view latency    each load's latency hot list binned by memory level
                    (D-cache, S-cache, B-cache, memory), with n (samples),
                    p (1/tau, an offer's chance of entering the list), nv
                    (values listed), DCPI's CYCLES samples at that PC and
                    its CPI as dcpicalc estimates it (cycles at the head
                    of the issue queue per execution; - if unknown)
  --view frequent   each instruction's most frequent values (FP registers
                    as floats, the rest in hex), with their estimated shares
  --view semiinv    instructions whose operand or result mostly holds one
                    value (at least half the samples), ranked by that
                    share times the CYCLES samples

Shares are estimates tau*c/n, each with one standard deviation. The
interpreter's accounting (interrupts interpreted, given up and why) heads
the report. The shared filters select epochs and hosts; --json prints the
report for machines.`,
		Example: `  dcpi profile --values loadlat -- ptrchase
  dcpi values --view latency
  dcpi values --db fleet.db --host alpha1 --view frequent --limit 10
  dcpi values --view semiinv --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v, ok := map[string]valuesa.View{"latency": valuesa.Latency, "frequent": valuesa.Frequent, "semiinv": valuesa.SemiInvariant}[view]
			if !ok {
				return fmt.Errorf("--view %q: want latency, frequent or semiinv", view)
			}
			sel, err := qf.selection()
			if err != nil {
				return err
			}
			if len(qf.nats) > 0 {
				return fmt.Errorf("dcpi values reads a local --db; the cluster's query service does not serve hot lists yet")
			}
			if len(qf.labels) > 0 {
				return errNoLabels
			}
			db, err := openLocalDB(qf.dbDir)
			if err != nil {
				return err
			}
			defer db.Close()
			o := localOpened(db)
			q := valuesa.Query{View: v, Epochs: sel.Filter.Epochs, Hosts: sel.Filter.Hosts,
				Images: sel.Filter.Images, Limit: limit, MinSamples: minSamples, Files: newImageFinder(cmd.ErrOrStderr(), o, imageDirs)}
			if v == valuesa.Latency {
				// DCPI's CPI beside each load needs the hosts' periods;
				// without them (no CYCLES samples) the column stays empty.
				q.Periods, _ = calcPeriods(o, sel.Filter.Hosts, nil, io.Discard)
			}
			rep, err := valuesa.Build(db, o.src, q)
			if err != nil {
				return err
			}
			if rep.CPINote != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: no CPI for some loads: %s\n", rep.CPINote)
			}
			if rep.Stats.Interrupts == 0 {
				return fmt.Errorf("%s holds no value samples: profile with dcpi profile --values MODULE (%s)", qf.dbDir, strings.Join(valuemod.Names(), ", "))
			}
			if qf.json {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			return writeValues(cmd.OutOrStdout(), rep)
		},
	}
	f := cmd.Flags()
	qf.register(f, "ignored: hot lists are not per event")
	f.StringVar(&view, "view", "latency", "what to show: latency, frequent or semiinv")
	f.IntVar(&limit, "limit", 30, "rows (0: all)")
	f.Uint64Var(&minSamples, "min-samples", 1, "skip lists with fewer samples")
	f.StringArrayVar(&imageDirs, "image-dir", nil, "look for image files under `DIR` too (repeatable)")
	return cmd
}

func writeValues(w io.Writer, rep *valuesa.Report) error {
	fmt.Fprintf(w, "value sampling (%s): %s\n\n", strings.Join(rep.Modules, ","), valueConservationLine(rep.Stats, 0))
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
			}
			fmt.Fprintf(tw, "\t%d\t%s\t%s\n", r.Cycles, cpi, valueList(r.Values, 6))
		}
	default:
		fmt.Fprintln(tw, "pc\tprocedure\tinstruction\tkind\tn\tp\tnv\tcycles\tvalues (share)")
		for _, r := range rep.Rows {
			fmt.Fprintf(tw, "%#x\t%s\t%s\t%s\t%d\t1/%.0f\t%d\t%d\t%s\n", r.PC, r.Procedure, r.Insn, r.Kind, r.Samples, 1/r.P, r.NV, r.Cycles, valueList(r.Values, 4))
		}
	}
	return tw.Flush()
}

func valueList(vs []valuesa.Value, n int) string {
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
