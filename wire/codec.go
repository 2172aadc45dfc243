package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Version is the format version this package writes. It reads every
// version from MinVersion up; a message keeps the version it was read
// with, and re-encodes to the same bytes.
const Version = 2

// MinVersion is the oldest format version this package reads. Version 1
// lacks the batch's sample accounting and the image record's load base.
const MinVersion = 1

// Caps on outside input. A decoder rejects anything larger before it
// allocates for it.
const (
	MaxMessageBytes  = 64 << 20 // one encoded message
	MaxEntries       = 1 << 20  // Batch.Entries (64 MiB decoded)
	MaxUnknown       = 1 << 20  // Batch.Unknown
	MaxDrops         = 1024     // Batch.Drops
	MaxHostLen       = 255      // bytes, as a DNS name
	MaxDropNameLen   = 128      // bytes
	MaxSymbols       = 1 << 20  // ImageRecord.Symbols
	MaxSymbolNameLen = 4096     // bytes; C++ names run long
	MaxPathLen       = 4096     // bytes, as PATH_MAX
)

// Sentinel errors; every error a decoder returns wraps exactly one.
var (
	// ErrMalformed: the bytes are not a well-formed message (magic,
	// checksum, truncation, varints, trailing bytes).
	ErrMalformed = errors.New("malformed")
	// ErrVersion: a well-framed message of a version this build cannot read.
	ErrVersion = errors.New("unsupported version")
	// ErrTooLarge: a size, count or length exceeds its cap.
	ErrTooLarge = errors.New("too large")
	// ErrInvalid: the message breaks a rule of its type (order, zero
	// counts, bad names); Marshal refuses such messages too.
	ErrInvalid = errors.New("invalid")
)

const (
	headerLen  = 6 // magic + version
	trailerLen = 4 // CRC-32C
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendHeader starts a message of version v.
func appendHeader(buf []byte, magic string, v uint16) []byte {
	buf = append(buf, magic...)
	return binary.BigEndian.AppendUint16(buf, v)
}

// checkVersion accepts the versions this build reads.
func checkVersion(what string, v uint16) error {
	if v < MinVersion || v > Version {
		return fmt.Errorf("wire: %s: %w %d (this build reads %d to %d)", what, ErrVersion, v, MinVersion, Version)
	}
	return nil
}

// appendTrailer seals the message that starts at buf[start].
func appendTrailer(buf []byte, start int) []byte {
	return binary.BigEndian.AppendUint32(buf, crc32.Checksum(buf[start:], castagnoli))
}

func appendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

// frame checks magic, version, size and checksum, and returns the body and
// the version.
func frame(data []byte, magic, what string) ([]byte, uint16, error) {
	if len(data) > MaxMessageBytes {
		return nil, 0, fmt.Errorf("wire: %s: %d bytes: %w (cap %d)", what, len(data), ErrTooLarge, MaxMessageBytes)
	}
	if len(data) < headerLen+trailerLen {
		return nil, 0, fmt.Errorf("wire: %s: %w: %d bytes is shorter than header and checksum", what, ErrMalformed, len(data))
	}
	if string(data[:4]) != magic {
		return nil, 0, fmt.Errorf("wire: %s: %w: magic %q, want %q", what, ErrMalformed, data[:4], magic)
	}
	v := binary.BigEndian.Uint16(data[4:6])
	if err := checkVersion(what, v); err != nil {
		return nil, 0, err
	}
	n := len(data) - trailerLen
	if got, want := crc32.Checksum(data[:n], castagnoli), binary.BigEndian.Uint32(data[n:]); got != want {
		return nil, 0, fmt.Errorf("wire: %s: %w: checksum %08x, computed %08x", what, ErrMalformed, want, got)
	}
	return data[headerLen:n], v, nil
}

// decoder reads a message body. The first error sticks; later reads return
// zero values, so parsing code checks d.err at its loop heads only.
type decoder struct {
	buf  []byte
	off  int
	what string // "batch" or "image record", for messages
	err  error
}

func (d *decoder) fail(err error, format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("wire: %s: %w: %s (at byte %d)", d.what, err, fmt.Sprintf(format, args...), headerLen+d.off)
	}
}

func (d *decoder) left() int { return len(d.buf) - d.off }

// uvarint reads a minimally encoded uvarint.
func (d *decoder) uvarint(field string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf[d.off:])
	switch {
	case n == 0:
		d.fail(ErrMalformed, "%s: truncated", field)
		return 0
	case n < 0:
		d.fail(ErrMalformed, "%s: varint overflows 64 bits", field)
		return 0
	case n > 1 && d.buf[d.off+n-1] == 0:
		d.fail(ErrMalformed, "%s: varint not minimally encoded", field)
		return 0
	}
	d.off += n
	return v
}

// bounded reads a uvarint that must not exceed max.
func (d *decoder) bounded(field string, max uint64) uint64 {
	v := d.uvarint(field)
	if d.err == nil && v > max {
		d.fail(ErrMalformed, "%s: %d exceeds %d", field, v, max)
		return 0
	}
	return v
}

func (d *decoder) byte1(field string) byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.buf) {
		d.fail(ErrMalformed, "%s: truncated", field)
		return 0
	}
	b := d.buf[d.off]
	d.off++
	return b
}

// bytes returns the next n bytes (aliasing the input).
func (d *decoder) bytes(field string, n int) []byte {
	if d.err != nil {
		return nil
	}
	if n > d.left() {
		d.fail(ErrMalformed, "%s: truncated: %d bytes, only %d left", field, n, d.left())
		return nil
	}
	b := d.buf[d.off : d.off+n]
	d.off += n
	return b
}

func (d *decoder) string(field string, max int) string {
	n := d.uvarint(field + " length")
	if d.err != nil {
		return ""
	}
	if n > uint64(max) {
		d.fail(ErrTooLarge, "%s: %d bytes (cap %d)", field, n, max)
		return ""
	}
	return string(d.bytes(field, int(n)))
}

// count reads a list length, checking it against its cap and against the
// bytes left (each element takes at least minBytes), so a forged count cannot
// make the caller allocate more than a fixed multiple of the input.
func (d *decoder) count(field string, max, minBytes int) int {
	n := d.uvarint(field)
	if d.err != nil {
		return 0
	}
	if n > uint64(max) {
		d.fail(ErrTooLarge, "%s: %d (cap %d)", field, n, max)
		return 0
	}
	if n > uint64(d.left()/minBytes) {
		d.fail(ErrMalformed, "%s: %d cannot fit in %d bytes", field, n, d.left())
		return 0
	}
	return int(n)
}

func (d *decoder) imageKey(field string) ImageKey {
	var k ImageKey
	kind := d.byte1(field + " kind")
	n := d.byte1(field + " length")
	b := d.bytes(field, int(n))
	if d.err != nil {
		return k
	}
	k, err := NewImageKey(KeyKind(kind), b)
	if err != nil {
		d.fail(ErrInvalid, "%s: %v", field, err)
	}
	return k
}

// end checks that the body was consumed exactly.
func (d *decoder) end() {
	if d.err == nil && d.off != len(d.buf) {
		d.fail(ErrMalformed, "%d trailing bytes", len(d.buf)-d.off)
	}
}
