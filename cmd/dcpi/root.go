package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// exitError carries a process exit status out of a command (dcpi sim run
// exits with the simulated program's status) without printing an error.
type exitError struct{ code int }

func (e exitError) Error() string { return "exit status" }

func asExit(err error, target *exitError) bool { return errors.As(err, target) }

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "dcpi",
		Short: "A continuous profiler for simulated Alpha 21164 fleets, after DIGITAL's DCPI",
		Long: `dcpi samples the program counters of simulated multiprocessor Alpha 21164
hosts that run real Alpha Linux programs, and says where the cycles went.

Configuration is read from --config FILE (YAML, TOML or JSON), then from
DCPI_* environment variables (DCPI_SIM_CPUS=8 sets sim.cpus), then from flags.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().String("config", "", "configuration file (YAML, TOML or JSON)")
	for _, add := range subcommands {
		root.AddCommand(add())
	}
	return root
}

// subcommands is filled by each command file's init, so adding a tool is
// adding a file.
var subcommands []func() *cobra.Command
