package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"dcpi/internal/slogf"
)

// The process has one logger, log/slog's default, set from --verbose and
// --log-format before any command runs. Every role's lines, raft's
// (through coordinator.Config.Logger), the embedded NATS server's (through
// its Logf) and the standard log package's (slog.SetDefault redirects it)
// pass through it, so each line carries one timestamp, in one format.

// addLogFlags declares the logging flags, persistent on the root so that
// every role has them.
func addLogFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	f.Bool("verbose", false, "log debug lines too: raft's state changes, retries")
	f.String("log-format", "text", "log line format: text (key=value pairs) or json (one object a line)")
}

// newLogger is slogf.New: the process's logger in --log-format.
var newLogger = slogf.New

// setupLogging makes the logger the flags of cmd ask for the process's
// default. A command's own --verbose (dcpi demo's) counts as the root's.
func setupLogging(cmd *cobra.Command) error {
	verbose, _ := cmd.Flags().GetBool("verbose")
	format, _ := cmd.Flags().GetString("log-format")
	l, err := newLogger(cmd.ErrOrStderr(), format, verbose)
	if err != nil {
		return err
	}
	slog.SetDefault(l)
	return nil
}

// roleLogger is the process's logger with the role named by prefix
// ("node alpha1: ") as the "role" attribute; an empty prefix adds none.
func roleLogger(prefix string) *slog.Logger {
	l := slog.Default()
	if role := strings.TrimSuffix(strings.TrimSpace(prefix), ":"); role != "" {
		l = l.With("role", role)
	}
	return l
}

// roleLogf adapts l to the func(format, args) the packages take.
func roleLogf(l *slog.Logger) func(string, ...any) {
	return func(format string, args ...any) { l.Info(fmt.Sprintf(format, args...)) }
}
