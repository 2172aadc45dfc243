// Package selector parses and evaluates the tools' label selectors: a
// list of Prometheus label matchers (service="db", version=~"1\\..*",
// zone!="eu", rack!~"r[0-3]"), with the quotes optional where a value
// needs none (service=db,version=1.2). It is pure: what a selector
// selects from a database is profiledb's, which gives it the labels of
// each host.
package selector

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"

	"dcpi/wire"
)

// Op is a matcher's comparison, as PromQL spells it.
type Op uint8

// The four matchers of PromQL.
const (
	Equal    Op = iota // =
	NotEqual           // !=
	Match              // =~, the regexp matching the whole value
	NotMatch           // !~
)

func (o Op) String() string {
	return [...]string{"=", "!=", "=~", "!~"}[o]
}

// Caps on a selector, checked while parsing: a selector is user input
// that every host's labels are matched against.
const (
	MaxLen      = 4096 // bytes of a selector
	MaxMatchers = 64
)

// ErrSyntax: a selector that does not parse, or a regexp that does not
// compile.
var ErrSyntax = errors.New("bad selector")

// Matcher compares one label's value.
type Matcher struct {
	Name  string
	Op    Op
	Value string
	re    *regexp.Regexp // Match and NotMatch: ^(?:Value)$
}

// NewMatcher makes a matcher, compiling Value for Match and NotMatch.
func NewMatcher(name string, op Op, value string) (Matcher, error) {
	m := Matcher{Name: name, Op: op, Value: value}
	if !wire.ValidLabelName(name) {
		return m, fmt.Errorf("%w: label name %q: want a letter or _, then letters, digits or _", ErrSyntax, name)
	}
	if len(value) > wire.MaxLabelValueLen {
		return m, fmt.Errorf("%w: %s: value of %d bytes (cap %d)", ErrSyntax, name, len(value), wire.MaxLabelValueLen)
	}
	if op == Match || op == NotMatch {
		// Anchored at both ends, as PromQL's: "1\\..*" matches 1.2, not 11.2.
		re, err := regexp.Compile("^(?:" + value + ")$")
		if err != nil {
			why := err.Error()
			if se := (*syntax.Error)(nil); errors.As(err, &se) {
				why = se.Code.String() // its Expr is the anchored form, not the user's
			}
			return m, fmt.Errorf("%w: %s%s%q: %s", ErrSyntax, name, op, value, why)
		}
		m.re = re
	}
	return m, nil
}

// Matches reports whether a label's value v matches; an absent label
// has the value "" (PromQL's rule: zone!="eu" selects hosts with no zone).
func (m Matcher) Matches(v string) bool {
	switch m.Op {
	case Equal:
		return v == m.Value
	case NotEqual:
		return v != m.Value
	case Match:
		return m.re.MatchString(v)
	}
	return !m.re.MatchString(v)
}

// String is the matcher in PromQL's form, the value quoted.
func (m Matcher) String() string { return m.Name + m.Op.String() + strconv.Quote(m.Value) }

// Selector is matchers that must all match.
type Selector []Matcher

// Matches reports whether every matcher matches the labels label gives
// (ok false: absent, the value "").
func (s Selector) Matches(label func(name string) (v string, ok bool)) bool {
	for _, m := range s {
		v, _ := label(m.Name)
		if !m.Matches(v) {
			return false
		}
	}
	return true
}

// Names lists the label names the matchers read, in order, once each.
func (s Selector) Names() []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range s {
		if !seen[m.Name] {
			seen[m.Name] = true
			out = append(out, m.Name)
		}
	}
	return out
}

// String is the selector in PromQL's form, without braces.
func (s Selector) String() string {
	parts := make([]string, len(s))
	for i, m := range s {
		parts[i] = m.String()
	}
	return strings.Join(parts, ",")
}

// FromLabels is the selector of equality matchers for labels (the
// --label K=V flag's), in key order.
func FromLabels(labels map[string]string) (Selector, error) {
	var s Selector
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		m, err := NewMatcher(k, Equal, labels[k])
		if err != nil {
			return nil, err
		}
		s = append(s, m)
	}
	return s, nil
}
