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

func newProgress(w io.Writer, start time.Time) *progress {
	return &progress{w: w, on: isTerminal(w), start: start, interval: time.Second}
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
