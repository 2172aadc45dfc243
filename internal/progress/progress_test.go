package progress

import (
	"bytes"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestProgressOnlyOnATerminal: progress lines go to a terminal, at most
// one a second; a buffer (a file, a pipe) gets none.
func TestProgressOnlyOnATerminal(t *testing.T) {
	var b bytes.Buffer
	p := New(&b, time.Now())
	if p.on {
		t.Fatal("a buffer taken for a terminal")
	}
	p.Printf("waiting for %s", "x")
	if b.Len() != 0 {
		t.Fatalf("wrote %q off a terminal", b.String())
	}
	p.on, p.last = true, time.Time{} // a terminal, a line due
	p.Printf("waiting for %s", "storage")
	p.Printf("waiting for %s", "too soon")
	if got := b.String(); !regexp.MustCompile(`^\[ +0\.\ds\] waiting for storage\n$`).MatchString(got) {
		t.Fatalf("progress %q", got)
	}
}

// TestWhileRunningReportsUntilDone: a long step shows its status while it
// runs, on a terminal; off one it runs alone and prints nothing.
func TestWhileRunningReportsUntilDone(t *testing.T) {
	var b bytes.Buffer
	p := &Progress{w: &b, on: true, start: time.Now(), interval: 20 * time.Millisecond, last: time.Now()}
	release := make(chan struct{})
	n := 0
	err := p.WhileRunning(func() error { <-release; return errors.New("done") }, func() string {
		if n++; n == 3 {
			close(release)
		}
		return "simulated " + strconv.Itoa(n)
	})
	if err == nil || err.Error() != "done" {
		t.Fatalf("err %v", err)
	}
	if !strings.Contains(b.String(), "] simulated 1\n") || !strings.Contains(b.String(), "] simulated 3\n") {
		t.Fatalf("progress %q", b.String())
	}
	b.Reset()
	p.on = false
	if err := p.WhileRunning(func() error { time.Sleep(50 * time.Millisecond); return nil }, func() string { return "x" }); err != nil || b.Len() != 0 {
		t.Fatalf("off a terminal: %v, %q", err, b.String())
	}
	if got := SimulatedStatus(150_000_000, 300_000_000, 2); got != "simulated 0.500 of 2 s (25%)" {
		t.Errorf("status %q", got)
	}
}
