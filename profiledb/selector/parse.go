package selector

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse parses a selector: matchers NAME OP VALUE separated by commas,
// optionally inside braces as PromQL writes them ({service="db"}). OP is
// =, !=, =~ or !~; VALUE is a double-quoted string with Go's (and
// PromQL's) escapes, or bare: the bytes up to the next comma, space or
// closing brace (service=db,version=1.2). A regexp matches the whole
// value. A trailing comma is allowed; an empty selector is not. Errors
// wrap ErrSyntax and say at which byte.
func Parse(s string) (Selector, error) {
	if len(s) > MaxLen {
		return nil, fmt.Errorf("%w: %d bytes (cap %d)", ErrSyntax, len(s), MaxLen)
	}
	p := parser{s: s}
	p.space()
	braced := p.eat('{')
	var sel Selector
	for {
		p.space()
		if p.done() || (braced && p.at('}')) {
			break
		}
		m, err := p.matcher(braced)
		if err != nil {
			return nil, err
		}
		if sel = append(sel, m); len(sel) > MaxMatchers {
			return nil, fmt.Errorf("%w: more than %d matchers", ErrSyntax, MaxMatchers)
		}
		p.space()
		if p.eat(',') || p.done() || (braced && p.at('}')) {
			continue
		}
		return nil, p.errorf("want a comma between matchers")
	}
	if braced {
		if !p.eat('}') {
			return nil, p.errorf("want } to close the selector")
		}
		if p.space(); !p.done() {
			return nil, p.errorf("text after }")
		}
	}
	if len(sel) == 0 {
		return nil, fmt.Errorf("%w: empty selector (want NAME=VALUE, NAME!=VALUE, NAME=~REGEXP or NAME!~REGEXP)", ErrSyntax)
	}
	return sel, nil
}

// parser reads s from byte i.
type parser struct {
	s string
	i int
}

func (p *parser) done() bool     { return p.i >= len(p.s) }
func (p *parser) at(c byte) bool { return p.i < len(p.s) && p.s[p.i] == c }

// eat consumes c if it is next.
func (p *parser) eat(c byte) bool {
	if !p.at(c) {
		return false
	}
	p.i++
	return true
}

func (p *parser) space() {
	for p.i < len(p.s) && isSpace(p.s[p.i]) {
		p.i++
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (p *parser) errorf(format string, a ...any) error {
	at := "end"
	if !p.done() {
		at = fmt.Sprintf("byte %d (%q)", p.i+1, p.s[p.i:min(len(p.s), p.i+12)])
	}
	return fmt.Errorf("%w: at %s: %s", ErrSyntax, at, fmt.Sprintf(format, a...))
}

// matcher reads NAME OP VALUE.
func (p *parser) matcher(braced bool) (Matcher, error) {
	start := p.i
	for p.i < len(p.s) && isNameByte(p.s[p.i]) {
		p.i++
	}
	name := p.s[start:p.i]
	if name == "" {
		return Matcher{}, p.errorf("want a label name")
	}
	p.space()
	var op Op
	switch {
	case strings.HasPrefix(p.s[p.i:], "=~"):
		op, p.i = Match, p.i+2
	case strings.HasPrefix(p.s[p.i:], "!~"):
		op, p.i = NotMatch, p.i+2
	case strings.HasPrefix(p.s[p.i:], "!="):
		op, p.i = NotEqual, p.i+2
	case strings.HasPrefix(p.s[p.i:], "="):
		op, p.i = Equal, p.i+1
	default:
		return Matcher{}, p.errorf("after %s: want =, !=, =~ or !~", name)
	}
	p.space()
	v, err := p.value(braced)
	if err != nil {
		return Matcher{}, err
	}
	return NewMatcher(name, op, v)
}

func isNameByte(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// notBare are the bytes a bare value may not hold: quotes, and what
// would make a typo (a==b, a=b;c=d) read as a value.
const notBare = "\"'=;{}"

// value reads a quoted or a bare value.
func (p *parser) value(braced bool) (string, error) {
	if p.at('"') {
		start := p.i
		for p.i++; p.i < len(p.s) && p.s[p.i] != '"'; p.i++ {
			if p.s[p.i] == '\\' {
				p.i++
			}
		}
		if p.i >= len(p.s) {
			p.i = start
			return "", p.errorf("unterminated quoted value")
		}
		p.i++
		v, err := strconv.Unquote(p.s[start:p.i])
		if err != nil {
			p.i = start
			return "", p.errorf("bad escape in quoted value")
		}
		return v, nil
	}
	start := p.i
	for p.i < len(p.s) && p.s[p.i] != ',' && !isSpace(p.s[p.i]) && !(braced && p.s[p.i] == '}') {
		if strings.IndexByte(notBare, p.s[p.i]) >= 0 {
			return "", p.errorf("%q in a bare value (quote the value: NAME=\"VALUE\")", p.s[p.i])
		}
		p.i++
	}
	if p.i == start {
		return "", p.errorf("want a value (quote an empty one: \"\")")
	}
	return p.s[start:p.i], nil
}
