package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"dcpi/config"
	"dcpi/hwsim"
	"dcpi/simhost"
	"dcpi/simhost/simrun"
	"dcpi/workloads"
)

func newSimCommand() *cobra.Command {
	sim := &cobra.Command{
		Use:   "sim",
		Short: "Run Alpha Linux programs on a simulated multiprocessor 21164 host",
		Long: `Run static Alpha Linux programs on the simulated host, without profiling:
"dcpi sim run" runs one program (or a mix) with its output passed through
and its exit status as dcpi's, for checking that a program runs before
profiling it.`,
		Example: `  dcpi sim run hello
  dcpi sim run --strace --cpus 1 ./a.out`,
	}
	sim.AddCommand(newSimRunCommand(), newSimMicroCommand())
	return sim
}

func newSimRunCommand() *cobra.Command {
	var (
		stats     bool
		mix       string
		trace     bool
		truthFile string
	)
	cmd := &cobra.Command{
		Use:   "run [flags] FILE [args...]",
		Short: "Run an Alpha ELF executable (or an embedded workload) on a simulated host",
		Long: `Run a static Alpha Linux executable on a simulated multiprocessor Alpha host.

FILE is a path to an ELF file, or the name of an embedded workload
(` + strings.Join(workloads.Names(), ", ") + `).
Every embedded workload is also present in the simulated file system as
/bin/NAME, so programs can exec one another.

The program's standard output and error pass through, and dcpi exits with
its exit status (128+N if signal N killed it). --stats adds, on standard
error, instructions executed, simulated time and the host's speed.

--mix NAME runs a named set of embedded workloads at once, spread across the
CPUs (mixes: ` + strings.Join(workloads.MixNames(), ", ") + `).`,
		Example: `  dcpi sim run stream
  dcpi sim run --cpus 1 --stats ./a.out 10
  dcpi sim run --mix default --stats`,
		Args: func(cmd *cobra.Command, args []string) error {
			if mix == "" && len(args) == 0 {
				return fmt.Errorf("need a FILE to run, or --mix NAME")
			}
			if mix != "" && len(args) > 0 {
				return fmt.Errorf("--mix runs embedded workloads; it takes no FILE")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			hc, err := programMachineConfig(cmd)
			if err != nil {
				return err
			}
			if trace {
				hc.Trace = cmd.ErrOrStderr()
			}
			hc.GroundTruth = truthFile != ""
			if err := applyPICFlag(cmd, &hc); err != nil {
				return err
			}
			o := simrun.Options{Machine: hc, Args: args, Mix: mix, TruthFile: truthFile}
			if stats {
				o.Stats = cmd.ErrOrStderr()
			}
			code, err := simrun.Run(o)
			if err == nil && code != 0 {
				err = exitError{code: code}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false) // flags after FILE belong to the program
	f.Int("cpus", 4, "number of simulated CPUs")
	f.Uint64("seed", 1, "seed for everything random on the machine")
	f.String("model", "ev5", "CPU model: ev5 (21164), ev56, pca56, ev6, ev67")
	f.String("sysroot", hwsim.DefaultSysroot, "host `DIR` a dynamically linked program's loader and shared libraries are read from (\"\": none)")
	f.BoolVar(&stats, "stats", false, "print instructions, simulated time and host speed on stderr")
	f.StringVar(&mix, "mix", "", "run the named mix of embedded workloads")
	f.BoolVar(&trace, "strace", false, "trace system calls on stderr")
	f.Bool("timing", true, "run the timing model: the 21164's, or the 21264's out-of-order core with --model ev6 or ev67 (false: one cycle per instruction, several times faster)")
	f.StringVar(&truthFile, "truth", "", "write per-instruction ground truth (executions, head-of-queue cycles, stalls by cause, events, control transfers, register waits; docs/groundtruth.md) to this file")
	addPICFlag(cmd)
	return cmd
}

// loadConfig reads --config, the environment and the machine's flags;
// loadRoleConfig every cluster role's flags too (config.FlagKeys).
func loadConfig(cmd *cobra.Command) (config.Config, error) {
	return loadKeys(cmd, config.MachineFlagKeys)
}
func loadRoleConfig(cmd *cobra.Command) (config.Config, error) { return loadKeys(cmd, config.FlagKeys) }
func loadKeys(cmd *cobra.Command, keys map[string]string) (config.Config, error) {
	file, _ := cmd.Flags().GetString("config")
	return config.LoadFlags(file, cmd.Flags(), keys)
}

// programMachineConfig is the machine the configuration and flags of cmd
// describe, with the simulated programs' standard streams on cmd's and
// dcpi's: what a command that runs a user's program needs.
func programMachineConfig(cmd *cobra.Command) (hwsim.Config, error) {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return hwsim.Config{}, err
	}
	hc, err := simhost.MachineConfig(cfg.Sim)
	if err != nil {
		return hwsim.Config{}, err
	}
	hc.Stdout, hc.Stderr, hc.Stdin = cmd.OutOrStdout(), cmd.ErrOrStderr(), os.Stdin
	return hc, nil
}
