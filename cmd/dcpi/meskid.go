package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"dcpi/analysis/profileme/paperfigs"
	"dcpi/hwsim/alpha"
)

func newMeSkidCommand() *cobra.Command {
	var (
		names, models, runs []string
		event, smear, out   string
		cmin, cmax          uint64
		imin, imax          uint64
		asJSON              bool
	)
	cmd := &cobra.Command{
		Use:   "skid",
		Short: "The counters' skid measured on committed workloads: distance from the event's instruction to the interrupted one",
		Long: `Run committed workloads alone on a one-CPU simulated machine with timing,
once per model, with one counter (D-cache misses by default) sampling and
hwsim's skid ground truth on: for every counter interrupt, the instruction
whose event overflowed the counter and the one the interrupt was taken at.
Print, per workload and model, the distribution of their distance in
completed instructions and in cycles (the ProfileMe paper's Figure 2,
measured rather than inferred), and, for the hottest missing load of
--smear's workload, where the counter samples it caused land per
instruction beside ProfileMe's D-miss samples. The SVG goes to -o; with
--json the figure's data goes to standard output.

--workloads names the programs; each runs with the shortened arguments of
the default figure when it has them, else its own defaults; --run
NAME:ARG,ARG gives one workload's arguments.`,
		Example: `  dcpi me skid -o docs/counter-skid.svg
  dcpi me skid --workloads stream,hashdb --models ev6 --smear "" --json
  dcpi me skid --workloads ptrchase --run ptrchase:262144,400000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d := paperfigs.DefaultSkid()
			o := d
			o.Runs, o.Models = nil, nil
			args := map[string][]string{}
			for _, r := range d.Runs {
				args[r.Workload] = r.Args
			}
			for _, r := range runs {
				name, list, ok := strings.Cut(r, ":")
				if !ok || name == "" {
					return fmt.Errorf("--run %q: want NAME:ARG,ARG", r)
				}
				args[name] = nil
				if list != "" {
					args[name] = strings.Split(list, ",")
				}
			}
			for _, name := range names {
				o.Runs = append(o.Runs, paperfigs.SkidRun{Workload: name, Args: args[name]})
			}
			if len(o.Runs) == 0 {
				return fmt.Errorf("--workloads: name at least one workload")
			}
			var err error
			if o.Models, err = parseModels(models); err != nil {
				return err
			}
			ev, err := alpha.EventByName(event)
			if err != nil {
				return fmt.Errorf("--event: %w", err)
			}
			if imin < 1 || imax < imin {
				return fmt.Errorf("--interval %d-%d: want 1 <= min <= max", imin, imax)
			}
			o.Event, o.Smear = ev, smear
			o.CounterPeriod, o.MeInterval = [2]uint64{cmin, cmax}, [2]uint64{imin, imax}
			f, err := paperfigs.RunSkid(o)
			if err != nil {
				return err
			}
			return emitFigure(cmd.OutOrStdout(), f, out, asJSON)
		},
	}
	d := paperfigs.DefaultSkid()
	var defaults []string
	for _, r := range d.Runs {
		defaults = append(defaults, r.Workload)
	}
	f := cmd.Flags()
	f.StringSliceVar(&names, "workloads", defaults, "committed workloads to run (workloads/README.md lists them)")
	f.StringArrayVar(&runs, "run", nil, "one workload's arguments, `NAME:ARG,ARG` (repeatable)")
	f.StringSliceVar(&models, "models", []string{"ev5", "ev6"}, "CPU models to run (ev5, ev56, pca56, ev6, ev67)")
	f.StringVar(&event, "event", d.Event.String(), "the counted event (any an instruction causes: not cycles or issues)")
	f.Uint64Var(&cmin, "counter-period-min", d.CounterPeriod[0], "fewest events between counter interrupts")
	f.Uint64Var(&cmax, "counter-period-max", d.CounterPeriod[1], "most events between counter interrupts")
	f.StringVar(&smear, "smear", d.Smear, `the workload whose hottest load is shown per instruction ("": none)`)
	f.Uint64Var(&imin, "interval-min", d.MeInterval[0], "fewest fetched instructions between the smear's ProfileMe samples")
	f.Uint64Var(&imax, "interval-max", d.MeInterval[1], "most fetched instructions between the smear's ProfileMe samples")
	f.StringVarP(&out, "output", "o", "", "write the SVG `FILE`")
	f.BoolVar(&asJSON, "json", false, "print the figure's data as JSON")
	return cmd
}
