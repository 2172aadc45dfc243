package timerange

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzParse feeds --since, --from and --to anything a user or a URL may
// give: each is refused with one line wrapping ErrBadRange, or is a range
// that does not end before it starts, and resolving it against known
// epochs selects only overlapping ones or says, in one line, that none
// does.
func FuzzParse(f *testing.F) {
	for _, c := range [][3]string{
		{"2h", "", ""}, {"7d", "", ""}, {"1d12h", "", ""}, {"-2h", "", ""}, {"0", "", ""},
		{"", "09:00", "10:00"}, {"", "10:00", "09:00"}, {"", "2026-11-20T08:00:00Z", ""},
		{"", "2026-11-20 08:00", "2026-11-20 08:00"}, {"", "", "11:59:59.5"}, {"1h", "09:00", ""},
		{"99999999999999999999d", "", ""}, {"", "2026-11-20T08:00:00+25:00", ""},
	} {
		f.Add(c[0], c[1], c[2])
	}
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	epochs := []Epoch{{Number: 1, Start: now.Add(-3 * time.Hour), End: now.Add(-2 * time.Hour)}, {Number: 2, Start: now.Add(-2 * time.Hour)}, {Number: 3}}
	f.Fuzz(func(t *testing.T, since, from, to string) {
		r, err := Flags{Since: since, From: from, To: to}.Parse(now, time.FixedZone("X", 3600))
		if err != nil {
			if errors.Is(err, ErrBadRange) && !strings.Contains(err.Error(), "\n") && r.IsZero() {
				return
			}
			t.Fatalf("%q %q %q: refusal %q, range %+v", since, from, to, err, r)
		}
		if r.IsZero() {
			return
		}
		if r.From.After(r.To) {
			t.Fatalf("%q %q %q: range %v to %v", since, from, to, r.From, r.To)
		}
		c, err := Resolve(r, epochs)
		if err != nil {
			if strings.Contains(err.Error(), "\n") || len(c.Epochs) > 0 {
				t.Fatalf("%q %q %q: %q with epochs %v", since, from, to, err, c.Epochs)
			}
			return
		}
		for _, n := range c.Epochs {
			if n == 3 {
				t.Fatalf("%q %q %q: selected the epoch without a start", since, from, to)
			}
		}
		if strings.Contains(c.String(), "\n") {
			t.Fatalf("%q %q %q: line %q", since, from, to, c)
		}
	})
}
