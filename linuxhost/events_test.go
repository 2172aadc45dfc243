package linuxhost

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOpenErrorSaysWhatToChange: a refused perf_event_open names the
// setting to change; a hardware event without a PMU is ErrNoPMU.
func TestOpenErrorSaysWhatToChange(t *testing.T) {
	clock, _ := LookupEvent("cpu-clock")
	cycles, _ := LookupEvent("cycles")
	for _, errno := range []error{unix.EACCES, unix.EPERM} {
		err := openError(clock, false, errno)
		if !errors.Is(err, ErrPermission) || !strings.Contains(err.Error(), ParanoidPath) || !strings.Contains(err.Error(), "root") {
			t.Errorf("%v: %v", errno, err)
		}
	}
	if err := openError(cycles, false, unix.ENOENT); !errors.Is(err, ErrNoPMU) || !strings.Contains(err.Error(), "cpu-clock") {
		t.Errorf("cycles without a PMU: %v", err)
	}
	if _, err := LookupEvent("cache-references"); err == nil || !strings.Contains(err.Error(), "cpu-clock") {
		t.Errorf("unknown event: %v", err)
	}
}
