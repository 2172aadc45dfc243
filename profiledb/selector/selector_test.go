package selector

import (
	"errors"
	"strings"
	"testing"
)

// TestParse: both forms parse to the same matchers; what does not parse
// is refused with ErrSyntax.
func TestParse(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`service=db`, `service="db"`},
		{`service=db,version=1.2`, `service="db",version="1.2"`},
		{`service="db", version=~"1\\..*"`, `service="db",version=~"1\\..*"`},
		{`{service="db",zone!="eu"}`, `service="db",zone!="eu"`},
		{` { rack !~ "r[0-3]" , } `, `rack!~"r[0-3]"`},
		{`version=~1\..*`, `version=~"1\\..*"`},
		{`zone=""`, `zone=""`},
		{`a="x,y",b="}"`, `a="x,y",b="}"`},
		{`a="q\"uote"`, `a="q\"uote"`},
		{`a=x,a!=y`, `a="x",a!="y"`},
		{`path=/bin/sort`, `path="/bin/sort"`},
	} {
		s, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if got := s.String(); got != c.want {
			t.Errorf("Parse(%q) = %s, want %s", c.in, got, c.want)
		}
		// String's form parses back to itself.
		if again, err := Parse(s.String()); err != nil || again.String() != s.String() {
			t.Errorf("Parse(%q) again = %v, %v", s.String(), again, err)
		}
	}
	for _, in := range []string{
		``, `   `, `{}`, `,`, `service`, `service=`, `=db`, `9a=b`, `a-b=c`, `a==b`, `a=b c=d`, `a=b;c=d`,
		`a="unterminated`, `a="bad\q"`, `a=x"y`, `{a=b`, `{a=b}c`, `a=~"("`, `a!~"[z-a]"`, `a=b,,c=d`,
		strings.Repeat("a=b,", MaxMatchers+1), `a="` + strings.Repeat("x", MaxLen) + `"`,
	} {
		if s, err := Parse(in); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%.40q) = %v, %v; want ErrSyntax", in, s, err)
		}
	}
}

// TestMatches: PromQL's semantics, an absent label being "" and a regexp
// matching the whole value.
func TestMatches(t *testing.T) {
	labels := map[string]string{"service": "db", "version": "1.2"}
	get := func(k string) (string, bool) { v, ok := labels[k]; return v, ok }
	for _, c := range []struct {
		sel  string
		want bool
	}{
		{`service=db`, true},
		{`service=web`, false},
		{`service!=web`, true},
		{`version=~"1\\..*"`, true},
		{`version=~"1"`, false},
		{`version=~"11\\..*"`, false},
		{`version!~"2.*"`, true},
		{`zone=""`, true},
		{`zone!="eu"`, true},
		{`zone=~".+"`, false},
		{`service=db,version=1.2`, true},
		{`service=db,version=1.3`, false},
	} {
		s, err := Parse(c.sel)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Matches(get); got != c.want {
			t.Errorf("%s matches %v: %v, want %v", c.sel, labels, got, c.want)
		}
	}
}

// TestFromLabels: --label K=V is the equality matchers, in key order.
func TestFromLabels(t *testing.T) {
	s, err := FromLabels(map[string]string{"zone": "eu", "service": "db"})
	if err != nil || s.String() != `service="db",zone="eu"` {
		t.Errorf("FromLabels = %v, %v", s, err)
	}
	if _, err := FromLabels(map[string]string{"a.b": "x"}); !errors.Is(err, ErrSyntax) {
		t.Errorf("FromLabels(a.b) = %v", err)
	}
}

// FuzzParse: any input parses or is refused with ErrSyntax, never
// panics, and what parses prints a form that parses to the same.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`service=db,version=1.2`, `{a="x",b!~"y.*"}`, `a=~"("`, `a="\u00e9"`, `{`, `a=b,`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(in)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("Parse(%q): %v, not ErrSyntax", in, err)
			}
			return
		}
		again, err := Parse(s.String())
		if err != nil || again.String() != s.String() {
			t.Fatalf("Parse(%q) = %s; again %v, %v", in, s, again, err)
		}
	})
}
