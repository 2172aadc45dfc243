package hwsim

import (
	"slices"
	"testing"

	"dcpi/hwsim/alpha"
)

// TestParsePICEvents: --pic takes two event names, A,B.
func TestParsePICEvents(t *testing.T) {
	got, err := ParsePICEvents("loads, dmiss")
	if err != nil || !slices.Equal(got, []alpha.Event{alpha.EvLoads, alpha.EvDMiss}) {
		t.Errorf("ParsePICEvents(loads, dmiss) = %v, %v", got, err)
	}
	for _, bad := range []string{"", "loads", "loads,dmiss,imiss", "loads,bogus"} {
		if _, err := ParsePICEvents(bad); err == nil {
			t.Errorf("ParsePICEvents(%q): accepted", bad)
		}
	}
}
