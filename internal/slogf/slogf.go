// Package slogf adapts a *slog.Logger to the printf-style function the
// packages' inner loops log through: each Config takes a logger, and its
// package formats its messages once, at Info level.
package slogf

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
)

// New returns a logger writing to w in format ("text": key=value pairs,
// or "json": one object a line), at Debug level when verbose and Info
// otherwise: the process's logger of dcpi's --log-format and --verbose.
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

// Printf logs each message through l at Info level; a nil l discards
// them.
func Printf(l *slog.Logger) func(format string, args ...any) {
	if l == nil {
		return func(string, ...any) {}
	}
	return func(format string, args ...any) { l.Info(fmt.Sprintf(format, args...)) }
}

// Test is a logger for a test's roles: each record through t.Logf as
// "msg k=v ...", and nothing once the test has ended (a role's goroutine
// may outlive it by a moment, and t.Logf would panic).
func Test(t testing.TB) *slog.Logger {
	return slog.New(&testHandler{t: t, on: func() bool { return true }, end: ended(t)})
}

// Quiet is Test that logs only with -v: for roles as chatty as Raft.
func Quiet(t testing.TB) *slog.Logger {
	return slog.New(&testHandler{t: t, on: testing.Verbose, end: ended(t)})
}

func ended(t testing.TB) *endFlag {
	e := &endFlag{}
	t.Cleanup(func() { e.mu.Lock(); e.done = true; e.mu.Unlock() })
	return e
}

type endFlag struct {
	mu   sync.Mutex
	done bool
}

type testHandler struct {
	t     testing.TB
	on    func() bool
	end   *endFlag
	attrs []slog.Attr
}

func (h *testHandler) Enabled(context.Context, slog.Level) bool { return h.on() }

func (h *testHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	add := func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	h.end.mu.Lock()
	defer h.end.mu.Unlock()
	if !h.end.done {
		h.t.Logf("%s", b.String())
	}
	return nil
}

func (h *testHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(slices.Clone(h.attrs), as...)
	return &c
}

func (h *testHandler) WithGroup(string) slog.Handler { return h }
