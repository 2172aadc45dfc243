package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"dcpi/analysis/oracle"
	"dcpi/hwsim"
	"dcpi/simhost"
)

func newPPOracleCommand() *cobra.Command {
	var (
		top      int
		asJSON   bool
		saveFile string
	)
	cmd := &cobra.Command{
		Use:   "oracle [flags] -- PROGRAM [args...]",
		Short: "Run a program on the simulator and print its ground-truth paths and calling context tree",
		Long: `oracle runs PROGRAM (an Alpha ELF file or an embedded workload, as
"dcpi sim run" takes it) on a simulated host and follows every control
transfer it executes (hwsim's transfer observer): a shadow stack per
process, Ball-Larus path numbering of every procedure it enters, and the
calling context tree with calls, instructions and cycles per context. It
prints, labelled as the simulator's ground truth (never an instrumented
profile):

  - the hot paths: the top N by instructions executed, each with its
    procedure, path ID, count, instructions, cycles and blocks (address
    ranges and source lines);
  - paths per procedure (the shape of Ammons, Ball and Larus's Table 5):
    paths executed, of how many, and the procedure's share of
    instructions and cycles;
  - the CCT's statistics (their Table 3) and its top contexts;
  - the oracle's counters (activations whose paths are unknown, kernel
    entries, ...).

Kernel time is charged to no context. The program's output passes
through (to standard error with --json). --save FILE writes the path
counts and the trees in the format docs/paths.md describes, for comparing
an instrumented profile against.`,
		Example: `  dcpi pp oracle -- tiny
  dcpi pp oracle --top 5 -- recurse 1
  dcpi pp oracle --json --save recurse.oracle.json -- recurse 1`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("need a PROGRAM to run (after --)")
			}
			if top < 1 {
				return fmt.Errorf("--top must be at least 1, not %d", top)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			hc, err := programMachineConfig(cmd)
			if err != nil {
				return err
			}
			if asJSON {
				hc.Stdout = cmd.ErrOrStderr()
			}
			return runPPOracle(cmd.OutOrStdout(), hc, args, top, asJSON, saveFile)
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false)
	f.Int("cpus", 1, "number of simulated CPUs")
	f.Uint64("seed", 1, "seed for everything random on the machine")
	f.String("model", "ev5", "CPU model: ev5 (21164), ev56, pca56, ev6, ev67")
	f.Bool("timing", true, "run the timing model: the 21164's, or the 21264's out-of-order core with --model ev6 or ev67 (false: one cycle per instruction)")
	f.IntVar(&top, "top", 10, "hot paths and contexts to print")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON (the program's output goes to standard error)")
	f.StringVar(&saveFile, "save", "", "write the path counts and calling context trees to this file (docs/paths.md)")
	return cmd
}

func runPPOracle(w io.Writer, hc hwsim.Config, args []string, top int, asJSON bool, saveFile string) error {
	p, err := simhost.InstallFile(hc.Files, args[0])
	if err != nil {
		return err
	}
	rep, err := oracle.RunReport(oracle.Options{Machine: hc, Path: p, Args: args, Top: top, Save: saveFile, Warn: os.Stderr})
	if err != nil {
		return err
	}
	if asJSON {
		err = rep.WriteJSON(w)
	} else {
		err = rep.Write(w)
	}
	if err != nil {
		return err
	}
	if code := rep.ExitCode(); code != 0 {
		return exitError{code: code}
	}
	return nil
}
