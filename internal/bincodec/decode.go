package bincodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Causes of a decoding failure. A Decoder's error is an *Error whose Unwrap
// gives one of these, or the sentinel a caller passed to Fail.
var (
	// ErrTruncated: the input ends inside a field.
	ErrTruncated = errors.New("truncated")
	// ErrMalformed: the bytes cannot be a value of the field (a varint
	// that overflows or is not minimally encoded, a value out of its
	// range, a count the bytes left cannot hold, trailing bytes).
	ErrMalformed = errors.New("malformed")
	// ErrTooLarge: a length or count exceeds the format's cap.
	ErrTooLarge = errors.New("too large")
)

// Error is a decoding failure: the field it was in, where, and why.
type Error struct {
	Field  string // e.g. "host length"; empty for a failure of the whole message
	Offset int    // byte offset into the message where decoding stopped
	Err    error  // the cause: ErrTruncated, ErrMalformed, ErrTooLarge or a caller's sentinel
	Detail string // what was wrong, e.g. "truncated: 5 bytes, only 2 left"
}

func (e *Error) Error() string {
	s := e.Detail + " (at byte " + strconv.Itoa(e.Offset) + ")"
	if e.Field != "" {
		s = e.Field + ": " + s
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Decoder reads a message from outside input. The first failure sticks:
// every later read returns a zero value, so a parser reads straight through
// and checks Err at its loop heads and once at the end. Nothing a Decoder
// returns makes its caller allocate more than a fixed multiple of the
// input: lengths and counts are checked against their caps and against the
// bytes left first.
type Decoder struct {
	buf  []byte
	off  int
	base int // offset of buf[0] in the message, for error positions
	err  error
}

// NewDecoder reads buf, which starts at byte base of its message (after a
// header the caller has read itself, say); base only places errors.
func NewDecoder(buf []byte, base int) *Decoder {
	return &Decoder{buf: buf, base: base}
}

// Err is the first failure, or nil.
func (d *Decoder) Err() error { return d.err }

// Left is the number of bytes not yet read (0 after a failure).
func (d *Decoder) Left() int { return len(d.buf) - d.off }

// Fail records a failure the caller found (an order, a rule of its format)
// with its own sentinel as the cause, unless one is already recorded.
func (d *Decoder) Fail(cause error, format string, args ...any) {
	d.failf("", "", cause, format, args...)
}

// failf records field+suffix's failure (the name is built only here, so
// that reads on the success path never concatenate names) and ends the
// input, so later reads fail fast without consulting err.
func (d *Decoder) failf(field, suffix string, cause error, format string, args ...any) {
	if d.err == nil {
		d.err = &Error{Field: field + suffix, Offset: d.base + d.off, Err: cause, Detail: fmt.Sprintf(format, args...)}
	}
	d.buf = d.buf[:d.off]
}

// Byte reads one byte.
func (d *Decoder) Byte(field string) byte {
	if d.off < len(d.buf) {
		c := d.buf[d.off]
		d.off++
		return c
	}
	d.failf(field, "", ErrTruncated, "truncated")
	return 0
}

// Bytes reads n bytes (a fixed-size field) as a slice of the input: the
// caller copies what it keeps beyond the input's life.
func (d *Decoder) Bytes(field string, n int) []byte {
	if n < 0 || n > d.Left() {
		d.failf(field, "", ErrTruncated, "truncated: %d bytes, only %d left", n, d.Left())
		return nil
	}
	p := d.buf[d.off : d.off+n : d.off+n]
	d.off += n
	return p
}

// Uint64 reads 8 big-endian bytes.
func (d *Decoder) Uint64(field string) uint64 {
	if d.Left() < 8 {
		d.failf(field, "", ErrTruncated, "truncated")
		return 0
	}
	v := binary.BigEndian.Uint64(d.buf[d.off:])
	d.off += 8
	return v
}

// Uvarint reads a minimally encoded uvarint.
func (d *Decoder) Uvarint(field string) uint64 {
	// One byte is the common case (events, small counts, PIDs of 0).
	if off := d.off; off < len(d.buf) && d.buf[off] < 0x80 {
		d.off = off + 1
		return uint64(d.buf[off])
	}
	return d.uvarint(field, "")
}

// uvarint is Uvarint's general case; field+suffix names the field.
func (d *Decoder) uvarint(field, suffix string) uint64 {
	v, n := binary.Uvarint(d.buf[d.off:])
	switch {
	case n == 0:
		d.failf(field, suffix, ErrTruncated, "truncated")
		return 0
	case n < 0:
		d.failf(field, suffix, ErrMalformed, "varint overflows 64 bits")
		return 0
	case n > 1 && d.buf[d.off+n-1] == 0:
		d.failf(field, suffix, ErrMalformed, "varint not minimally encoded")
		return 0
	}
	d.off += n
	return v
}

// UvarintMax reads a uvarint that must not exceed max: the range of the
// field's type or values (a CPU number, a PID), so a larger one is
// malformed, not too large.
func (d *Decoder) UvarintMax(field string, max uint64) uint64 {
	v := d.Uvarint(field)
	if v > max {
		d.failf(field, "", ErrMalformed, "%d exceeds %d", v, max)
		return 0
	}
	return v
}

// Count reads a list length, checking it against its cap (ErrTooLarge) and
// against the bytes left, each element taking at least minBytes (>= 1), so
// a forged count cannot make the caller allocate more than a fixed multiple
// of the input.
func (d *Decoder) Count(field string, max, minBytes int) int {
	n := d.Uvarint(field)
	if n > uint64(max) {
		d.failf(field, "", ErrTooLarge, "%d (cap %d)", n, max)
		return 0
	}
	if n > uint64(d.Left()/minBytes) {
		d.failf(field, "", ErrMalformed, "%d cannot fit in %d bytes", n, d.Left())
		return 0
	}
	return int(n)
}

// length reads the uvarint length of a field of at most max bytes, and
// checks that the bytes are there.
func (d *Decoder) length(field string, max int) (int, bool) {
	var n uint64
	if d.off < len(d.buf) && d.buf[d.off] < 0x80 {
		n = uint64(d.buf[d.off])
		d.off++
	} else if n = d.uvarint(field, " length"); d.err != nil {
		return 0, false
	}
	if n > uint64(max) {
		d.failf(field, "", ErrTooLarge, "%d bytes (cap %d)", n, max)
		return 0, false
	}
	if n > uint64(d.Left()) {
		d.failf(field, "", ErrTruncated, "truncated: %d bytes, only %d left", n, d.Left())
		return 0, false
	}
	return int(n), true
}

// String reads a length-prefixed string of at most max bytes.
func (d *Decoder) String(field string, max int) string {
	n, ok := d.length(field, max)
	if !ok {
		return ""
	}
	s := string(d.buf[d.off : d.off+n])
	d.off += n
	return s
}

// LenBytes reads a length-prefixed byte string of at most max bytes, as a
// slice of the input.
func (d *Decoder) LenBytes(field string, max int) []byte {
	n, ok := d.length(field, max)
	if !ok {
		return nil
	}
	p := d.buf[d.off : d.off+n : d.off+n]
	d.off += n
	return p
}

// Time reads what AppendTime wrote, in UTC.
func (d *Decoder) Time(field string) time.Time {
	ns := int64(d.Uint64(field))
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// End checks that the message was read exactly.
func (d *Decoder) End() {
	if d.err == nil && d.off != len(d.buf) {
		d.failf("", "", ErrMalformed, "%d trailing bytes", len(d.buf)-d.off)
	}
}
