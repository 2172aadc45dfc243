package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// isTerminal says whether w is a terminal (a character device), where a
// long-running command shows progress lines; into a file or a pipe it
// writes only its results.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progress writes a long command's progress lines, "[  12.3s] ...", at
// most one per interval, and only when on (a terminal), so a command never
// goes silent for a person and leaves logs and pipes clean.
type progress struct {
	w        io.Writer
	on       bool
	start    time.Time
	interval time.Duration
	last     time.Time
}

// newProgress makes the progress of a command started at start; its first
// line is due an interval after start, so a short run prints none.
func newProgress(w io.Writer, start time.Time) *progress {
	return &progress{w: w, on: isTerminal(w), start: start, interval: time.Second, last: start}
}

// due says whether a line may be written now.
func (p *progress) due() bool {
	return p.on && time.Since(p.last) >= p.interval
}

// printf writes a line if one is due.
func (p *progress) printf(format string, args ...any) {
	if !p.due() {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.w, "[%6.1fs] "+format+"\n", append([]any{time.Since(p.start).Seconds()}, args...)...)
}

// whileRunning runs fn and, while it runs, writes status() as a progress
// line every interval (nothing off a terminal: fn runs alone).
func (p *progress) whileRunning(fn func() error, status func() string) error {
	if !p.on {
		return fn()
	}
	done := make(chan error, 1)
	go func() { done <- fn() }()
	t := time.NewTicker(min(p.interval/4+time.Millisecond, 250*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-t.C:
			if p.due() {
				p.printf("%s", status())
			}
		}
	}
}

// simulatedStatus is a simulated host's progress: how far its machine has
// run, of how far it will (seconds 0: until its programs finish).
func simulatedStatus(cycles, clockHz uint64, seconds float64) string {
	at := float64(cycles) / float64(clockHz)
	if seconds <= 0 {
		return fmt.Sprintf("simulated %.3f s (until the programs finish)", at)
	}
	return fmt.Sprintf("simulated %.3f of %g s (%.0f%%)", at, seconds, 100*at/seconds)
}
