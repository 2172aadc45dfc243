package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"dcpi/analysis/profileme/paperfigs"
	"dcpi/hwsim/alpha"
)

func newMeSkidCommand() *cobra.Command {
	o := paperfigs.DefaultSkid()
	var (
		names, models, runs []string
		event, out          string
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
			if err := o.SetRuns(names, runs); err != nil {
				return fmt.Errorf("--workloads, --run: %w", err)
			}
			var err error
			if o.Models, err = paperfigs.Models(models); err != nil {
				return fmt.Errorf("--models: %w", err)
			}
			if o.Event, err = alpha.EventByName(event); err != nil {
				return fmt.Errorf("--event: %w", err)
			}
			f, err := paperfigs.RunSkid(o)
			if err != nil {
				return err
			}
			return paperfigs.Emit(cmd.OutOrStdout(), f, out, asJSON)
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
	f.Uint64Var(&o.CounterPeriod[0], "counter-period-min", d.CounterPeriod[0], "fewest events between counter interrupts")
	f.Uint64Var(&o.CounterPeriod[1], "counter-period-max", d.CounterPeriod[1], "most events between counter interrupts")
	f.StringVar(&o.Smear, "smear", d.Smear, `the workload whose hottest load is shown per instruction ("": none)`)
	f.Uint64Var(&o.MeInterval[0], "interval-min", d.MeInterval[0], "fewest fetched instructions between the smear's ProfileMe samples")
	f.Uint64Var(&o.MeInterval[1], "interval-max", d.MeInterval[1], "most fetched instructions between the smear's ProfileMe samples")
	f.StringVarP(&out, "output", "o", "", "write the SVG `FILE`")
	f.BoolVar(&asJSON, "json", false, "print the figure's data as JSON")
	return cmd
}
