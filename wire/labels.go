package wire

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The one label rule. A label is a key=value pair that a node carries
// (service, version, zone, ...) and the tools select and group by. Keys
// follow Prometheus's label names, so a selector reads as a PromQL
// matcher does and a key can become a metric label unchanged.
const (
	MaxLabels        = 64   // labels of one node
	MaxLabelNameLen  = 128  // bytes of a key
	MaxLabelValueLen = 1024 // bytes of a value
)

// ReservedLabels are the names the selectors give to what every sample
// already has: a label with one of them as key would be ambiguous.
var ReservedLabels = []string{"host", "binary", "pid", "machine"}

// ErrLabel: a label's key or value breaks the label rule.
var ErrLabel = errors.New("bad label")

// ValidLabelName reports whether name is a Prometheus label name:
// [a-zA-Z_][a-zA-Z0-9_]*, at most MaxLabelNameLen bytes.
func ValidLabelName(name string) bool {
	if name == "" || len(name) > MaxLabelNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// CheckLabel checks one label: a Prometheus label name that is neither
// reserved (ReservedLabels) nor starts with "__" (Prometheus reserves
// those too), and a value of at most MaxLabelValueLen bytes of UTF-8
// with no control character. The empty value is allowed: a selector
// treats it as the label's absence, as PromQL does.
func CheckLabel(key, value string) error {
	switch {
	case !ValidLabelName(key):
		return fmt.Errorf("%w: key %q: want a letter or _, then letters, digits or _ (up to %d bytes)", ErrLabel, key, MaxLabelNameLen)
	case strings.HasPrefix(key, "__"):
		return fmt.Errorf("%w: key %q: names starting with __ are reserved", ErrLabel, key)
	case slices.Contains(ReservedLabels, key):
		return fmt.Errorf("%w: key %q is reserved (the selectors' %s)", ErrLabel, key, strings.Join(ReservedLabels, ", "))
	case len(value) > MaxLabelValueLen:
		return fmt.Errorf("%w: %s: value of %d bytes (cap %d)", ErrLabel, key, len(value), MaxLabelValueLen)
	case !utf8.ValidString(value):
		return fmt.Errorf("%w: %s: value is not UTF-8", ErrLabel, key)
	case strings.IndexFunc(value, unicode.IsControl) >= 0:
		return fmt.Errorf("%w: %s=%q: value has a control character", ErrLabel, key, value)
	}
	return nil
}

// CheckLabels checks a node's labels with CheckLabel, in key order so
// the error is the same on every run.
func CheckLabels(labels map[string]string) error {
	if len(labels) > MaxLabels {
		return fmt.Errorf("%w: %d labels (cap %d)", ErrLabel, len(labels), MaxLabels)
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if err := CheckLabel(k, labels[k]); err != nil {
			return err
		}
	}
	return nil
}
