package main

import (
	"errors"

	"github.com/spf13/cobra"

	"dcpi/cmd/dcpi/internal/suggest"
	"dcpi/internal/buildinfo"
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
DCPI_* environment variables (DCPI_SIM_CPUS=8 sets sim.cpus), then from flags.

Every role logs through one logger: --log-format text (key=value pairs) or
json (one object a line), one timestamp a line; --verbose adds debug lines.`,
		Example: `  dcpi demo
  dcpi sim run hello
  dcpi node --mix default --seconds 0.5 --db /tmp/prof
  dcpi prof --db /tmp/prof --limit 20
  dcpi coordinator --log-format json --verbose`,
		Version:       buildinfo.Read().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		// Every command's: EnableTraverseRunHooks runs it before a
		// subcommand's own PersistentPreRun, should one have one.
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if noConfig[cmd.CommandPath()] {
				if err := refuseConfig(cmd, cmd.CommandPath()); err != nil {
					return err
				}
			}
			return setupLogging(cmd)
		},
	}
	cobra.EnableTraverseRunHooks = true
	root.SetVersionTemplate("dcpi {{.Version}}\n")
	root.PersistentFlags().String("config", "", "configuration file (YAML, TOML or JSON)")
	addLogFlags(root)
	for _, add := range commands() {
		root.AddCommand(add())
	}
	decorateBuiltins(root)
	suggest.Install(root)
	return root
}

// decorateBuiltins adds cobra's help and completion commands now rather
// than at Execute, and gives them an example each, as every command has.
func decorateBuiltins(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultVersionFlag()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Example = "  dcpi help prof\n  dcpi help coordinator add-voter"
		case "completion":
			c.Example = "  source <(dcpi completion bash)\n  dcpi completion zsh > \"${fpath[1]}/_dcpi\"\n  dcpi completion fish > ~/.config/fish/completions/dcpi.fish"
			for _, sh := range c.Commands() {
				sh.Example = map[string]string{
					"bash":       "  source <(dcpi completion bash)",
					"zsh":        "  dcpi completion zsh > \"${fpath[1]}/_dcpi\"",
					"fish":       "  dcpi completion fish > ~/.config/fish/completions/dcpi.fish",
					"powershell": "  dcpi completion powershell | Out-String | Invoke-Expression",
				}[sh.Name()]
			}
		}
	}
}

// noConfig are the commands that read no configuration file: --config
// there is refused, not ignored. (The query tools with --db refuse it in
// queryFlags.open, dcpi web --db in its command.)
var noConfig = map[string]bool{
	"dcpi demo": true, "dcpi disasm": true, "dcpi loadgen record": true,
	"dcpi me figure2": true, "dcpi me figure3": true, "dcpi me figure6": true, "dcpi me figure7": true, "dcpi me skid": true,
	"dcpi nats-server": true, "dcpi enroll": true, "dcpi nats-server add-host": true, "dcpi nats-server revoke-host": true,
	"dcpi pp instrument": true, "dcpi pp counts": true, "dcpi pp tables": true, "dcpi sim micro": true,
}

// commands are dcpi's commands, registered explicitly: a new tool is a
// constructor in its file and a line here.
func commands() []func() *cobra.Command {
	return []func() *cobra.Command{
		newAggregatorCommand,
		newCalcCommand,
		newCoordinatorCommand,
		newDemoCommand,
		newDiffCommand,
		newDisasmCommand,
		newEnrollCommand,
		newEpochCommand,
		newListCommand,
		newLoadgenCommand,
		newMeCommand,
		newNATSServerCommand,
		newNodeCommand,
		newPPCommand,
		newPprofCommand,
		newProfCommand,
		newProfileCommand,
		newSimCommand,
		newStacksCommand,
		newStatsCommand,
		newTotalsCommand,
		newTrendCommand,
		newValuesCommand,
		newWebCommand,
	}
}
