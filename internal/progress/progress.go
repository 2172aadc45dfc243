// Package progress writes a long-running command's progress lines on a
// terminal: at most one a second, and nothing into a file or a pipe, so a
// command never goes silent for a person and leaves logs clean.
package progress

import (
	"fmt"
	"io"
	"os"
	"time"
)

// IsTerminal says whether w is a terminal (a character device), where a
// long-running command shows progress lines; into a file or a pipe it
// writes only its results.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Progress writes a long command's progress lines, "[  12.3s] ...", at
// most one per interval, and only when on (a terminal), so a command never
// goes silent for a person and leaves logs and pipes clean.
type Progress struct {
	w        io.Writer
	on       bool
	start    time.Time
	interval time.Duration
	last     time.Time
}

// New makes the progress of a command started at start; its first
// line is due an interval after start, so a short run prints none.
func New(w io.Writer, start time.Time) *Progress {
	return &Progress{w: w, on: IsTerminal(w), start: start, interval: time.Second, last: start}
}

// Due says whether a line may be written now (never by a nil Progress,
// which a caller without a terminal may pass).
func (p *Progress) Due() bool {
	return p != nil && p.on && time.Since(p.last) >= p.interval
}

// Printf writes a line if one is due.
func (p *Progress) Printf(format string, args ...any) {
	if !p.Due() {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.w, "[%6.1fs] "+format+"\n", append([]any{time.Since(p.start).Seconds()}, args...)...)
}

// WhileRunning runs fn and, while it runs, writes status() as a progress
// line every interval (nothing off a terminal: fn runs alone).
func (p *Progress) WhileRunning(fn func() error, status func() string) error {
	if p == nil || !p.on {
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
			if p.Due() {
				p.Printf("%s", status())
			}
		}
	}
}

// SimulatedStatus is a simulated host's progress: how far its machine has
// run, of how far it will (seconds 0: until its programs finish).
func SimulatedStatus(cycles, clockHz uint64, seconds float64) string {
	at := float64(cycles) / float64(clockHz)
	if seconds <= 0 {
		return fmt.Sprintf("simulated %.3f s (until the programs finish)", at)
	}
	return fmt.Sprintf("simulated %.3f of %g s (%.0f%%)", at, seconds, 100*at/seconds)
}
