package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	valuesa "dcpi/analysis/values"
	"dcpi/conservation"
	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/node"
	"dcpi/node/valuemod"
	"dcpi/simhost"
	"dcpi/storage"
	"dcpi/wire"
)

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

// valuesConfig is node.values (or --values) for dcpi node and dcpi demo:
// an unknown module is an error listing the known ones.
func valuesConfig(module string) (node.ValuesConfig, error) {
	if _, err := valuemod.Lookup(module); err != nil {
		return node.ValuesConfig{}, fmt.Errorf("--values: %w", err)
	}
	return node.DefaultValuesConfig(module), nil
}

// writeValuesTruth writes the value truth of machines, summed per image
// and instruction, to file.
func writeValuesTruth(machines []*hwsim.Machine, file string) error {
	err := writeFileWith(file, func(w io.Writer) error { return hwsim.WriteValueTruthOf(w, machines...) })
	if err != nil {
		return fmt.Errorf("--values-truth %s: %w", file, err)
	}
	return nil
}

// readValuesTruth reads a value truth file, naming it in its errors.
func readValuesTruth(name string) (map[string]*alpha.ValueTruth, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("--truth: %w", err)
	}
	defer f.Close()
	t, err := hwsim.ReadValueTruth(f)
	if err != nil {
		return nil, fmt.Errorf("--truth %s: %w", name, err)
	}
	return t, nil
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
	return writeValueConservation(w, mods, s, machines)
}

// writeValueConservation prints the interpreter's accounting s (of the
// modules mods), as stored, beside what the machines counted, and fails
// if the interrupts differ.
func writeValueConservation(w io.Writer, mods []string, s wire.ValueStats, machines []*hwsim.Machine) error {
	var delivered, stepped uint64
	for _, m := range machines {
		delivered += simhost.MachineInterrupts(m)
		for _, c := range m.CPUStats() {
			stepped += c.Interpreted
		}
	}
	fmt.Fprintf(w, "value sampling (%s): %s\n", strings.Join(mods, ","), conservation.ValuesLine(s, delivered))
	fmt.Fprintf(w, "  %d instructions interpreted (%d stepped by the machines), %d values offered, %d lost to full tables, %d unattributed\n",
		s.Steps, stepped, s.Values, s.TableFull, s.Unattributed)
	if s.Interrupts != delivered {
		return fmt.Errorf("value sampling accounts for %d interrupts, the machines delivered %d", s.Interrupts, delivered)
	}
	return nil
}

func newValuesCommand() *cobra.Command {
	var opts valuesOptions
	cmd := &cobra.Command{
		Use:   "values [flags]",
		Short: "Show value-sampling hot lists: load latencies, frequent values, semi-invariant operands",
		Long: `dcpi values reads the hot lists a profile run with value sampling kept
(dcpi profile, dcpi node or dcpi demo --values MODULE; docs/values.md),
from a local --db or from the cluster (--nats), and prints one of three
views:

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

With --truth (a file dcpi profile --values-truth wrote for the same run)
each row also shows the simulator's ground truth, labelled as such:
a load's true shares per level, a value's true share of the executions.
--accuracy-plot then writes an SVG of each load's error against its
samples beside 1/sqrt(n) and prints how many loads are within bounds
(docs/values.md, "Measured").

Shares are estimates tau*c/n, each with one standard deviation. The
interpreter's accounting (interrupts interpreted, given up and why) heads
the report. The shared filters select epochs and hosts (--label too, in a
cluster); --json prints the report for machines.`,
		Example: `  dcpi profile --values loadlat -- ptrchase
  dcpi values --view latency
  dcpi values --db fleet.db --host alpha1 --view frequent --limit 10
  dcpi values --view semiinv --json
  dcpi values --nats nats://127.0.0.1:4222 --label rack=r1 --view latency
  dcpi profile --values loadlat --values-truth vt.txt -o db -- stream
  dcpi values --db db --truth vt.txt --accuracy-plot accuracy.svg`,
		Args: cobra.NoArgs,
		RunE: opts.run,
	}
	opts.register(cmd)
	return cmd
}

// valuesOptions are the flags of the command newValuesCommand makes.
type valuesOptions struct {
	qf         queryFlags
	view       string
	limit      int
	minSamples uint64
	imageDirs  []string
	truthFile  string
	plotFile   string
}

func (opts *valuesOptions) run(cmd *cobra.Command, args []string) error {
	v, ok := map[string]valuesa.View{"latency": valuesa.Latency, "frequent": valuesa.Frequent, "semiinv": valuesa.SemiInvariant}[opts.view]
	if !ok {
		return fmt.Errorf("--view %q: want latency, frequent or semiinv", opts.view)
	}
	sel, err := opts.qf.selection()
	if err != nil {
		return err
	}
	o, err := opts.qf.open(cmd, "dcpi-values", &sel)
	if err != nil {
		return err
	}
	defer o.close()
	q := valuesa.Query{View: v, Epochs: sel.Filter.Epochs, Hosts: sel.Filter.Hosts,
		Images: sel.Filter.Images, Limit: opts.limit, MinSamples: opts.minSamples, Files: newImageFinder(cmd.ErrOrStderr(), o, opts.imageDirs)}
	if opts.truthFile != "" {
		if q.Truth, err = readValuesTruth(opts.truthFile); err != nil {
			return err
		}
	}
	if opts.plotFile != "" {
		if opts.truthFile == "" || v != valuesa.Latency {
			return fmt.Errorf("--accuracy-plot needs --truth and the latency view")
		}
		q.Limit = 0
	}
	if v == valuesa.Latency && opts.plotFile == "" {
		// DCPI's CPI beside each load needs the hosts' periods;
		// without them (no CYCLES samples) the column stays empty.
		q.Periods, _ = calcPeriods(o, sel.Filter.Hosts, nil, io.Discard)
	}
	rep, err := valuesa.Build(o.values, o.src, q)
	if err != nil {
		return err
	}
	if rep.CPINote != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "note: no CPI for some loads: %s\n", rep.CPINote)
	}
	if rep.Stats.Interrupts == 0 {
		where := opts.qf.dbDir
		if len(opts.qf.nats) > 0 {
			where = "the cluster"
		}
		if h := o.emptyHint(sel.Filter); h != "" {
			return fmt.Errorf("no value samples selected: %s", h)
		}
		return fmt.Errorf("%s holds no value samples: profile with dcpi profile, dcpi node or dcpi demo --values MODULE (%s)", where, strings.Join(valuemod.Names(), ", "))
	}
	if opts.plotFile != "" {
		return writeAccuracyPlot(cmd.OutOrStdout(), rep, opts.plotFile, opts.qf.json)
	}
	if opts.qf.json {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return writeValues(cmd.OutOrStdout(), rep)
}

func (opts *valuesOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	opts.qf.register(f, "ignored: hot lists are not per event")
	f.StringVar(&opts.view, "view", "latency", "what to show: latency, frequent or semiinv")
	f.IntVar(&opts.limit, "limit", 30, "rows (0: all)")
	f.Uint64Var(&opts.minSamples, "min-samples", 1, "skip lists with fewer samples")
	f.StringArrayVar(&opts.imageDirs, "image-dir", nil, "look for image files under `DIR` too (repeatable)")
	f.StringVar(&opts.truthFile, "truth", "", "show the simulator's ground truth from `FILE` (dcpi profile --values-truth of the same run) beside the estimates")
	f.StringVar(&opts.plotFile, "accuracy-plot", "", "with --truth: write each load's |estimate - truth| against its samples, beside 1/sqrt(n), as an SVG to `FILE`")
}

// writeAccuracyPlot writes rep's accuracy against its truth as an SVG to
// file and a summary (or, with asJSON, the points) to w.
func writeAccuracyPlot(w io.Writer, rep *valuesa.Report, file string, asJSON bool) error {
	pts := valuesa.Accuracy(rep)
	if len(pts) == 0 {
		return fmt.Errorf("--accuracy-plot: no load in the selection has ground truth (is --truth from the same run?)")
	}
	var images []string
	for _, p := range pts {
		if !slices.Contains(images, p.Image) {
			images = append(images, p.Image)
		}
	}
	slices.Sort(images)
	err := writeFileWith(file, func(w io.Writer) error {
		return valuesa.WriteAccuracySVG(w, pts, "Load-latency shares against ground truth: "+strings.Join(images, ", "))
	})
	if err != nil {
		return fmt.Errorf("--accuracy-plot %s: %w", file, err)
	}
	sum := valuesa.Summarize(pts)
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Summary valuesa.AccuracySummary `json:"summary"`
			Points  []valuesa.AccuracyPoint `json:"points"`
		}{sum, pts})
	}
	fmt.Fprintf(w, "%d loads with ground truth: %d within 2 stated standard deviations of the truth, %d within 1/sqrt(n); %d same-line followers apart (hollow); plot in %s\n",
		sum.Points, sum.WithinTwoSD, sum.WithinSqrt, sum.SameLine, file)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "samples\tloads\tmedian error\tworst error\t1/sqrt(n)")
	for lo := uint64(1); lo <= pts[len(pts)-1].Samples; lo *= 10 {
		var errs []float64
		for _, p := range pts {
			if !p.SameLine && p.Samples >= lo && p.Samples < 10*lo {
				errs = append(errs, p.Error)
			}
		}
		if len(errs) == 0 {
			continue
		}
		slices.Sort(errs)
		fmt.Fprintf(tw, "%d-%d\t%d\t%.4f\t%.4f\t%.4f-%.4f\n", lo, 10*lo-1, len(errs), errs[len(errs)/2], errs[len(errs)-1], 1/math.Sqrt(float64(10*lo)), 1/math.Sqrt(float64(lo)))
	}
	return tw.Flush()
}

func writeValues(w io.Writer, rep *valuesa.Report) error {
	fmt.Fprintf(w, "value sampling (%s): %s\n\n", strings.Join(rep.Modules, ","), conservation.ValuesLine(rep.Stats, 0))
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
func truthList(vs []valuesa.Value, shares []float64, n int) string {
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
