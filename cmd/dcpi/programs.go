package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// programsOnlyAfterDash is the cobra.Args of a command that takes programs
// after "--" and nothing else: a word that is not a flag is never ignored
// (dcpi node ./prog once profiled the default mix). usage is the
// command's form with programs, for the message.
func programsOnlyAfterDash(usage string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if dash := cmd.ArgsLenAtDash(); dash < 0 && len(args) > 0 || dash > 0 {
			return fmt.Errorf("unexpected argument %q: programs go after --, as in %s", args[0], usage)
		}
		return nil
	}
}
