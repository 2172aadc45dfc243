package slogf

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestPrintf: a logger's messages arrive formatted at Info; nil discards.
func TestPrintf(t *testing.T) {
	var buf bytes.Buffer
	Printf(slog.New(slog.NewTextHandler(&buf, nil)))("applied %d of %s", 3, "alpha1")
	if !strings.Contains(buf.String(), `level=INFO msg="applied 3 of alpha1"`) {
		t.Errorf("%q", buf.String())
	}
	Printf(nil)("nothing %d", 1) // must not panic
}

// recorder is a testing.TB that keeps what Logf writes and runs its
// cleanups when told.
type recorder struct {
	testing.TB
	lines    []string
	cleanups []func()
}

func (r *recorder) Logf(format string, args ...any) {
	r.lines = append(r.lines, format+"|"+args[0].(string))
}
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Helper()          {}

// TestTestLoggerStopsAtTheEnd: records go to t.Logf with their attributes
// until the test ends, and nowhere after (t.Logf would panic then).
func TestTestLoggerStopsAtTheEnd(t *testing.T) {
	r := &recorder{TB: t}
	l := Test(r).With("role", "node alpha1")
	l.Info("draining", "cpu", 2)
	for _, f := range r.cleanups {
		f()
	}
	l.Info("after the end")
	if len(r.lines) != 1 || r.lines[0] != "%s|draining role=node alpha1 cpu=2" {
		t.Errorf("%q", r.lines)
	}
}
