package coordinator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// enc builds the binary messages of this package: uvarints, length-prefixed
// byte strings, and times as Unix ns (8 bytes big-endian, 0 for the zero
// time).
type enc struct{ b []byte }

func (e *enc) byte1(c byte)     { e.b = append(e.b, c) }
func (e *enc) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) bytes(p []byte)   { e.uvarint(uint64(len(p))); e.b = append(e.b, p...) }
func (e *enc) str(s string)     { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *enc) time(t time.Time) {
	var ns int64
	if !t.IsZero() {
		ns = t.UnixNano()
	}
	e.b = binary.BigEndian.AppendUint64(e.b, uint64(ns))
}

// errMalformed is wrapped by every decode failure.
var errMalformed = errors.New("malformed")

// dec reads what enc wrote from outside input: every length is checked
// against the bytes left before anything is allocated, and the first failure
// sticks, so a decoder reads straight through and checks d.err once.
type dec struct {
	b    []byte
	what string
	err  error
}

func (d *dec) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w %s: %s", errMalformed, d.what, fmt.Sprintf(format, args...))
	}
	d.b = nil
}

func (d *dec) byte1(field string) byte {
	if len(d.b) < 1 {
		d.fail("%s: truncated", field)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *dec) uvarint(field string, max uint64) uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("%s: bad varint", field)
		return 0
	}
	if v > max {
		d.fail("%s: %d over the cap of %d", field, v, max)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a list length, each element taking at least minBytes.
func (d *dec) count(field string, max uint64, minBytes int) int {
	n := d.uvarint(field, max)
	if d.err == nil && n*uint64(minBytes) > uint64(len(d.b)) {
		d.fail("%s: %d elements in %d bytes", field, n, len(d.b))
		return 0
	}
	return int(n)
}

func (d *dec) bytes(field string, max int) []byte {
	n := d.uvarint(field, uint64(max))
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("%s: %d bytes, %d left", field, n, len(d.b))
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *dec) str(field string, max int) string { return string(d.bytes(field, max)) }

func (d *dec) time(field string) time.Time {
	if len(d.b) < 8 {
		d.fail("%s: truncated", field)
		return time.Time{}
	}
	ns := int64(binary.BigEndian.Uint64(d.b))
	d.b = d.b[8:]
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

func (d *dec) end() {
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
}
