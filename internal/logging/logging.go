// Package logging owns the process's log lines: one log/slog logger,
// text or JSON, at Info or Debug, and the role attribute each role's lines
// carry. The command sets it as slog's default before any command runs,
// so every role's lines, raft's, the embedded NATS server's and the
// standard log package's pass through one handler with one timestamp.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// New returns a logger writing to w in format ("text" or "json"), at
// Debug level when verbose and Info otherwise.
func New(w io.Writer, format string, verbose bool) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	if verbose {
		opts.Level = slog.LevelDebug
	}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// Role is the default logger with the role named by prefix ("node
// alpha1: ") as the "role" attribute; an empty prefix adds none.
func Role(prefix string) *slog.Logger {
	l := slog.Default()
	if role := strings.TrimSuffix(strings.TrimSpace(prefix), ":"); role != "" {
		l = l.With("role", role)
	}
	return l
}

// Logf adapts l to the func(format, args) the packages take.
func Logf(l *slog.Logger) func(string, ...any) {
	return func(format string, args ...any) { l.Info(fmt.Sprintf(format, args...)) }
}
