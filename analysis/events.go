package analysis

import (
	"fmt"
	"strings"

	"dcpi/hwsim/alpha"
)

// The profile database numbers events as the simulated 21164's counters do
// (alpha.Event: 0 cycles, 1 issues, 2 imiss, ...); these convert through
// that one table.

// EventName is the name of event number e ("cycles", "imiss", ...), or
// "event(N)" for a number the simulator does not define.
func EventName(e uint8) string { return alpha.Event(e).String() }

// ParseEvent is the event number of a name EventName gives, including the
// "event(N)" form.
func ParseEvent(name string) (uint8, error) {
	e, err := alpha.EventByName(name)
	if err == nil {
		return uint8(e), nil
	}
	if rest, ok := strings.CutPrefix(name, "event("); ok {
		var n uint8
		if _, serr := fmt.Sscanf(rest, "%d)", &n); serr == nil && fmt.Sprintf("event(%d)", n) == name {
			return n, nil
		}
	}
	return 0, fmt.Errorf("analysis: %w", err)
}
