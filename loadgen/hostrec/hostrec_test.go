package hostrec

import (
	"testing"
	"time"
)

// TestRecordProgress: the progress line says how far the recording is
// and, from the rate so far, how long is left.
func TestRecordProgress(t *testing.T) {
	got := recordProgress(120e6, 480e6, 1e6, 30*time.Minute)
	if want := "loadgen record: 120.0 of 480 simulated s, about 1h30m0s left"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got := recordProgress(0, 480e6, 1e6, time.Minute); got != "loadgen record: 0.0 of 480 simulated s" {
		t.Errorf("before any progress: %q", got)
	}
}
