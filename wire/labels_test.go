package wire

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckLabel: the label rule accepts Prometheus label names with
// bounded UTF-8 values and refuses the rest with ErrLabel.
func TestCheckLabel(t *testing.T) {
	for _, c := range []struct {
		k, v string
		ok   bool
	}{
		{"service", "db", true},
		{"_x9", "", true},
		{"Zone_2", "eu-west/1 a", true},
		{"version", "1.2.3+dirty", true},
		{"", "x", false},
		{"9lives", "x", false},
		{"rack-id", "x", false},
		{"a.b", "x", false},
		{"__name__", "x", false},
		{"host", "x", false},
		{"binary", "x", false},
		{"pid", "1", false},
		{strings.Repeat("k", MaxLabelNameLen), "x", true},
		{strings.Repeat("k", MaxLabelNameLen+1), "x", false},
		{"k", strings.Repeat("v", MaxLabelValueLen), true},
		{"k", strings.Repeat("v", MaxLabelValueLen+1), false},
		{"k", "\xff", false},
		{"k", "a\nb", false},
	} {
		err := CheckLabel(c.k, c.v)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrLabel)) {
			t.Errorf("CheckLabel(%q, %q) = %v, want ok %v", c.k, c.v, err, c.ok)
		}
	}
	many := map[string]string{}
	for i := range MaxLabels + 1 {
		many["k"+strings.Repeat("x", i)] = ""
	}
	if err := CheckLabels(many); !errors.Is(err, ErrLabel) {
		t.Errorf("%d labels: %v", len(many), err)
	}
}
