package main

import (
	"log/slog"

	"github.com/spf13/cobra"

	"dcpi/internal/slogf"
)

// addLogFlags declares the logging flags, persistent on the root so that
// every role has them.
func addLogFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	f.Bool("verbose", false, "log debug lines too: raft's state changes, retries")
	f.String("log-format", "text", "log line format: text (key=value pairs) or json (one object a line)")
}

// setupLogging makes the logger the flags of cmd ask for the process's
// default (package logging). A command's own --verbose (dcpi demo's)
// counts as the root's.
func setupLogging(cmd *cobra.Command) error {
	verbose, _ := cmd.Flags().GetBool("verbose")
	format, _ := cmd.Flags().GetString("log-format")
	l, err := slogf.New(cmd.ErrOrStderr(), format, verbose)
	if err != nil {
		return err
	}
	slog.SetDefault(l)
	return nil
}
