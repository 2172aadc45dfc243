package conservation

import (
	"fmt"
	"slices"
	"strings"

	"dcpi/wire"
)

// ValuesLine is value sampling's account of the counter interrupts it
// saw: every interrupt interpreted, without a user context, or given up
// for a named reason; with delivered > 0, what the hardware delivered.
func ValuesLine(s wire.ValueStats, delivered uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d interrupts = %d interpreted + %d without user context", s.Interrupts, s.Completed, s.NoContext)
	for _, k := range sortedKeys(s.GaveUp) {
		fmt.Fprintf(&b, " + %d gave up (%s)", s.GaveUp[k], k)
	}
	if delivered > 0 {
		fmt.Fprintf(&b, "; delivered %d", delivered)
	}
	return b.String()
}

func sortedKeys(m map[string]uint64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// HostValuesLine is one host's (or, with host "", the fleet's) value
// conservation line from what the cluster stored, beside what the
// simulated hardware delivered; ok says they balance exactly.
func HostValuesLine(s wire.ValueStats, delivered uint64) (line string, ok bool) {
	ok = s.Interrupts == delivered && s.Conserved()
	verdict := "balanced"
	if !ok {
		verdict = fmt.Sprintf("NOT balanced (%d stored, %d delivered)", s.Interrupts, delivered)
	}
	return ValuesLine(s, delivered) + ": " + verdict, ok
}

// SubtractValues is s less what an earlier run had stored (prior), for
// a run that continued a database.
func SubtractValues(s, prior wire.ValueStats) wire.ValueStats {
	out := wire.ValueStats{Interrupts: s.Interrupts - prior.Interrupts, NoContext: s.NoContext - prior.NoContext,
		Completed: s.Completed - prior.Completed, Steps: s.Steps - prior.Steps, Values: s.Values - prior.Values,
		TableFull: s.TableFull - prior.TableFull, Unattributed: s.Unattributed - prior.Unattributed}
	for k, v := range s.GaveUp {
		if d := v - prior.GaveUp[k]; d > 0 {
			if out.GaveUp == nil {
				out.GaveUp = map[string]uint64{}
			}
			out.GaveUp[k] = d
		}
	}
	return out
}
