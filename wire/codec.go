package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"dcpi/internal/bincodec"
)

// Version is the newest format version this package reads and writes. It
// reads every version from MinVersion up; a message keeps the version it
// was read with, and re-encodes to the same bytes. Version 3 added the
// batch's call stacks (StackVersion); producers write a batch without
// stacks as FlatVersion, so flat profiles keep their version-2 bytes. An
// image record of version 3 has version 2's body. Version 4 added the
// batch's ProfileMe section (MeVersion), written only by a batch that
// carries ProfileMe samples; an image record of version 4 has version 2's
// body too.
const Version = 4

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

// frame checks magic, version, size and checksum, and returns the body and
// the version.
func frame(data []byte, magic, what string) ([]byte, uint16, error) {
	return frameVersions(data, magic, what, checkVersion)
}

// frameVersions is frame with the record kind's own version check (a kind
// versioned apart from Batch and ImageRecord, such as PathUpload).
func frameVersions(data []byte, magic, what string, check func(what string, v uint16) error) ([]byte, uint16, error) {
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
	if err := check(what, v); err != nil {
		return nil, 0, err
	}
	n := len(data) - trailerLen
	if got, want := crc32.Checksum(data[:n], castagnoli), binary.BigEndian.Uint32(data[n:]); got != want {
		return nil, 0, fmt.Errorf("wire: %s: %w: checksum %08x, computed %08x", what, ErrMalformed, want, got)
	}
	return data[headerLen:n], v, nil
}

// newDecoder reads a message body framed by frame.
func newDecoder(body []byte) *bincodec.Decoder { return bincodec.NewDecoder(body, headerLen) }

// decodeError turns a body's decoding failure into this package's error:
// one of its sentinels (ErrInvalid where the decoder found a rule broken,
// ErrTooLarge for a cap, ErrMalformed otherwise) beside the codec's cause,
// which names the field and the byte.
func decodeError(what string, err error) error {
	sentinel := ErrMalformed
	switch {
	case errors.Is(err, ErrInvalid):
		sentinel = ErrInvalid
	case errors.Is(err, bincodec.ErrTooLarge):
		sentinel = ErrTooLarge
	}
	return fmt.Errorf("wire: %s: %w: %w", what, sentinel, err)
}

// decodeImageKey reads what ImageKey.appendTo wrote: kind, length, ID.
func decodeImageKey(d *bincodec.Decoder, field string) ImageKey {
	kind := d.Byte(field + " kind")
	n := d.Byte(field + " length")
	b := d.Bytes(field, int(n))
	if d.Err() != nil {
		return ImageKey{}
	}
	k, err := NewImageKey(KeyKind(kind), b)
	if err != nil {
		d.Fail(ErrInvalid, "%s: %v", field, err)
	}
	return k
}
