package analysis

import (
	"strings"
	"testing"
)

func TestEventNames(t *testing.T) {
	for _, tc := range []struct {
		n    uint8
		name string
	}{{0, "cycles"}, {2, "imiss"}, {3, "dmiss"}, {4, "branchmp"}, {5, "dtbmiss"}, {200, "event(200)"}} {
		if got := EventName(tc.n); got != tc.name {
			t.Errorf("EventName(%d) = %q, want %q", tc.n, got, tc.name)
		}
		if got, err := ParseEvent(tc.name); err != nil || got != tc.n {
			t.Errorf("ParseEvent(%q) = %d, %v", tc.name, got, err)
		}
	}
	for _, bad := range []string{"", "Cycles", "bogus", "event(300)", "event(1", "event(01)"} {
		if _, err := ParseEvent(bad); err == nil || !strings.Contains(err.Error(), "unknown event") {
			t.Errorf("ParseEvent(%q): %v", bad, err)
		}
	}
}

// TestProfGolden renders the fixture's tables as text and JSON and compares
// them with testdata/*.golden (go test -update rewrites them).
