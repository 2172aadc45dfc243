package suggest

import (
	"slices"
	"testing"
)

func TestClosest(t *testing.T) {
	names := []string{"limit", "db", "events", "event", "json", "stacks", "no-stacks", "since"}
	for typed, want := range map[string][]string{
		"limt":     {"limit"},
		"lim":      {"limit"},
		"evnts":    {"events"},
		"jsno":     {"json"},
		"stack":    {"stacks"},
		"xyzzy":    {},
		"dbb":      {"db"},
		"nostacks": {"no-stacks"},
		"stcks":    {"stacks"},
	} {
		if got := Closest(typed, names); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("Closest(%q) = %v, want %v", typed, got, want)
		}
	}
}
