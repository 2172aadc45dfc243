package transport

import (
	"errors"
	"strings"
	"testing"

	"dcpi/wire"
)

// TestHostRuleAgreesWithWire: wire.CheckHost is the one host-name rule, so a
// host the profile database would accept can always be given a subject,
// and one no subject can carry is refused everywhere.
func TestHostRuleAgreesWithWire(t *testing.T) {
	for _, c := range []struct {
		host string
		ok   bool
	}{
		{"alpha0", true},
		{"alpha-0_x", true},
		{"ålpha", true},
		{strings.Repeat("a", wire.MaxHostLen), true},
		{"alpha0.lab", false},
		{".", false},
		{"a*", false},
		{"a>b", false},
		{"a b", false},
		{"a\tb", false},
		{"a\u00a0b", false}, // a non-breaking space is white space to NATS
		{"a\x00b", false},
		{"", false},
		{strings.Repeat("a", wire.MaxHostLen+1), false},
		{"\xff", false},
	} {
		werr, terr := wire.CheckHost(c.host), CheckHost(c.host)
		if (werr == nil) != c.ok || (terr == nil) != c.ok {
			t.Errorf("host %q: wire says %v, transport %v; want ok=%v", c.host, werr, terr, c.ok)
		}
		if terr != nil && !errors.Is(terr, ErrHost) {
			t.Errorf("host %q: transport's error %v does not wrap ErrHost", c.host, terr)
		}
		if _, err := BatchSubject(c.host, 0); (err == nil) != c.ok {
			t.Errorf("host %q: BatchSubject: %v, want ok=%v", c.host, err, c.ok)
		}
	}
}
