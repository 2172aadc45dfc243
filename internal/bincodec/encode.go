// Package bincodec owns the byte-level vocabulary of dcpi's hand-written
// binary formats — wire's batches and image records, the coordinator's
// commands and profile pages, storage's registry records: minimal uvarints,
// length-prefixed strings, times as Unix ns, and a Decoder for outside input
// whose first error sticks, names the field, and checks every length and
// count against its cap and against the bytes left before the caller
// allocates for it.
//
// It does not own any format: magic, framing, versions, field order, and the
// sentinel errors callers test belong to the package whose format it is.
// Those packages turn a decoding failure into their own sentinel by its
// cause (ErrTruncated, ErrMalformed, ErrTooLarge, or a sentinel they passed
// to Decoder.Fail), which errors.Is finds through an *Error.
package bincodec

import (
	"encoding/binary"
	"time"
)

// AppendUvarint appends v as a uvarint (always minimally encoded, as the
// Decoder requires).
func AppendUvarint(buf []byte, v uint64) []byte { return binary.AppendUvarint(buf, v) }

// AppendString appends s's length as a uvarint, then s.
func AppendString(buf []byte, s string) []byte {
	return append(binary.AppendUvarint(buf, uint64(len(s))), s...)
}

// AppendBytes appends p's length as a uvarint, then p.
func AppendBytes(buf, p []byte) []byte {
	return append(binary.AppendUvarint(buf, uint64(len(p))), p...)
}

// AppendUint64 appends v as 8 big-endian bytes.
func AppendUint64(buf []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(buf, v) }

// AppendTime appends t as its Unix ns in 8 big-endian bytes, 0 for the zero
// time. Only times from 1678 to 2262 (bar the instant 1970-01-01 itself)
// survive the trip; callers check that before encoding.
func AppendTime(buf []byte, t time.Time) []byte {
	var ns int64
	if !t.IsZero() {
		ns = t.UnixNano()
	}
	return binary.BigEndian.AppendUint64(buf, uint64(ns))
}

// Encoder builds a message by appending to B, for formats written field by
// field through helpers (the Append functions serve formats written in one
// function).
type Encoder struct{ B []byte }

// Byte appends one byte.
func (e *Encoder) Byte(c byte) { e.B = append(e.B, c) }

// Raw appends p with no length prefix (fixed-size fields).
func (e *Encoder) Raw(p []byte) { e.B = append(e.B, p...) }

// Uvarint appends v as a uvarint.
func (e *Encoder) Uvarint(v uint64) { e.B = binary.AppendUvarint(e.B, v) }

// String appends s, length first.
func (e *Encoder) String(s string) { e.B = AppendString(e.B, s) }

// Bytes appends p, length first.
func (e *Encoder) Bytes(p []byte) { e.B = AppendBytes(e.B, p) }

// Uint64 appends v as 8 big-endian bytes.
func (e *Encoder) Uint64(v uint64) { e.B = AppendUint64(e.B, v) }

// Time appends t as AppendTime does.
func (e *Encoder) Time(t time.Time) { e.B = AppendTime(e.B, t) }
