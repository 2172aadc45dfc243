package main

import (
	"github.com/spf13/cobra"
)

// ppSubcommands are dcpi pp's tools.
func ppSubcommands() []func() *cobra.Command {
	return []func() *cobra.Command{
		newPPUploadCommand,
		newPPFleetCommand,
		newPPInstrumentCommand,
		newPPCountsCommand,
		newPPOracleCommand,
		newPPTablesCommand,
	}
}

func newPPCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pp",
		Short: "Flow- and context-sensitive profiling: Ball-Larus paths and the calling context tree",
		Long: `pp profiles paths and calling contexts after Ammons, Ball and Larus
(PLDI 1997): an Alpha binary instrumenter whose output runs on a simulated
host and on qemu-alpha alike, and reports of the paths, calling context
trees and hardware metrics it collects.`,
		Example: `  dcpi pp --help`,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	for _, add := range ppSubcommands() {
		cmd.AddCommand(add())
	}
	return cmd
}
