package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"reflect"
	"strings"
	"testing"

	"dcpi/internal/bincodec"
)

var (
	keyA = MustParseImageKey("sha256:" + strings.Repeat("5e", 32)) // sha256 sorts first
	keyB = MustParseImageKey("buildid:0a0b0c0d0e0f101112131415161718191a1b1c1d")
)

func sampleBatch() *Batch {
	return &Batch{
		Version: Version, Host: "alpha1", Epoch: 3, CPU: 2, Seq: 7, Start: 1000, End: 2000,
		Entries: []Entry{
			{Image: keyA, Event: 0, Offset: 0x10, Count: 5},
			{Image: keyA, Event: 0, Offset: 0x10, PID: 42, Count: 1},
			{Image: keyA, Event: 0, Offset: 0x18, Count: 2},
			{Image: keyA, Event: 3, Offset: 0x08, Count: 9},
			{Image: keyB, Event: 0, Offset: 0x10000, Count: 1 << 40},
		},
		Unknown: []UnknownEntry{{PID: 7, PC: 0x120000000, Event: 0, Count: 3}, {PID: 7, PC: 0x120000000, Event: 1, Count: 1}},
		Drops:   map[string]uint64{DropOverflowFull: 4, "daemon.unmapped": 0},
	}
}

func TestBatchTotalAndNormalize(t *testing.T) {
	b := &Batch{Version: Version, Host: "h", Seq: 1,
		Entries: []Entry{
			{Image: keyB, Offset: 4, Count: 1},
			{Image: keyA, Offset: 8, Count: 2},
			{Image: keyB, Offset: 4, Count: 3},
			{Image: keyA, Offset: 0, Count: 0},
		},
		Unknown: []UnknownEntry{{PID: 2, Count: 1}, {PID: 1, Count: 1}, {PID: 2, Count: 5}},
		Drops:   map[string]uint64{"a": 0, "b": 2},
	}
	if err := b.Validate(); err == nil {
		t.Fatal("unsorted batch validated")
	}
	b.Normalize()
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	want := []Entry{{Image: keyA, Offset: 8, Count: 2}, {Image: keyB, Offset: 4, Count: 4}}
	if !reflect.DeepEqual(b.Entries, want) {
		t.Errorf("entries %+v, want %+v", b.Entries, want)
	}
	if len(b.Unknown) != 2 || b.Unknown[1].Count != 6 {
		t.Errorf("unknown %+v", b.Unknown)
	}
	if _, ok := b.Drops["a"]; ok {
		t.Error("zero drop kept")
	}
	if got := b.Total(); got != 2+4+1+6 {
		t.Errorf("Total = %d, want 13", got)
	}
}

// reseal recomputes the checksum of a message whose body a test edited.
func reseal(data []byte) []byte {
	n := len(data) - trailerLen
	out := append([]byte(nil), data[:n]...)
	return binary.BigEndian.AppendUint32(out, crc32.Checksum(out, castagnoli))
}

// encodeBody frames a hand-written batch body.
func encodeBody(body ...[]byte) []byte {
	buf := appendHeader(nil, batchMagic, 1) // the hand-written bodies are version 1
	for _, b := range body {
		buf = append(buf, b...)
	}
	return appendTrailer(buf, 0)
}

func uv(v uint64) []byte { return binary.AppendUvarint(nil, v) }

func TestBatchDecodeErrors(t *testing.T) {
	good, err := sampleBatch().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	hdr := func(host string, seq uint64) []byte {
		var b []byte
		b = bincodec.AppendString(b, host)
		b = append(b, uv(1)...)   // epoch
		b = append(b, uv(0)...)   // cpu
		b = append(b, uv(seq)...) // seq
		b = append(b, 0, 0)       // start, end
		return b
	}
	keyBytes := keyA.appendTo(nil)
	for _, tc := range []struct {
		name string
		data []byte
		is   error
		want string
	}{
		{"empty", nil, ErrMalformed, "shorter than header"},
		{"short", good[:9], ErrMalformed, "shorter than header"},
		{"magic", append([]byte("DCPR"), good[4:]...), ErrMalformed, "magic"},
		{"version", reseal(append(append([]byte("DCPB"), 0, Version+1), good[6:]...)), ErrVersion, fmt.Sprintf("version %d", Version+1)},
		{"checksum", append(append([]byte(nil), good[:len(good)-1]...), good[len(good)-1]^1), ErrMalformed, "checksum"},
		{"flipped body", func() []byte { b := append([]byte(nil), good...); b[10] ^= 0x40; return b }(), ErrMalformed, "checksum"},
		{"truncated", reseal(append(append([]byte(nil), good[:len(good)-8]...), 0, 0, 0, 0)), ErrMalformed, "truncated"},
		{"trailing", reseal(append(append([]byte(nil), good[:len(good)-4]...), 0, 0, 0, 0, 0)), ErrMalformed, "trailing bytes"},
		{"oversized", make([]byte, MaxMessageBytes+1), ErrTooLarge, "cap"},
		{"empty host", encodeBody(hdr("", 1), uv(0), uv(0), uv(0)), ErrInvalid, "empty host"},
		{"host too long", encodeBody(uv(MaxHostLen + 1)), ErrTooLarge, "host"},
		{"host control", encodeBody(hdr("a\x00b", 1), uv(0), uv(0), uv(0)), ErrInvalid, "control character"},
		{"seq zero", encodeBody(hdr("h", 0), uv(0), uv(0), uv(0)), ErrInvalid, "seq 0"},
		{"cpu range", encodeBody(bincodec.AppendString(nil, "h"), uv(1), uv(0x10000)), ErrMalformed, "cpu"},
		{"non-minimal varint", encodeBody(bincodec.AppendString(nil, "h"), []byte{0x81, 0x00}), ErrMalformed, "not minimally encoded"},
		{"varint overflow", encodeBody(bincodec.AppendString(nil, "h"), bytes.Repeat([]byte{0xff}, 10), []byte{0x7f}), ErrMalformed, "overflows"},
		{"huge group count", encodeBody(hdr("h", 1), uv(1<<40)), ErrTooLarge, "image groups"},
		{"group count beyond input", encodeBody(hdr("h", 1), uv(1000), keyBytes), ErrMalformed, "cannot fit"},
		{"entry count beyond input", encodeBody(hdr("h", 1), uv(1), keyBytes, uv(500), []byte{0, 1, 0, 1}), ErrMalformed, "cannot fit"},
		{"empty group", encodeBody(hdr("h", 1), uv(1), keyBytes, uv(0), uv(0), uv(0)), ErrInvalid, "no entries"},
		{"bad key kind", encodeBody(hdr("h", 1), uv(1), []byte{7, 1, 1}, uv(1), []byte{0, 0, 0, 1}, uv(0), uv(0)), ErrInvalid, "unknown kind 7"},
		{"zero count", encodeBody(hdr("h", 1), uv(1), keyBytes, uv(1), []byte{0, 5, 0, 0}, uv(0), uv(0)), ErrInvalid, "zero count"},
		{"duplicate entry", encodeBody(hdr("h", 1), uv(1), keyBytes, uv(2), []byte{0, 5, 0, 1, 0, 0, 0, 1}, uv(0), uv(0)), ErrInvalid, "not after entry 0"},
		{"pid range", encodeBody(hdr("h", 1), uv(1), keyBytes, uv(1), []byte{0, 5}, uv(1<<32), uv(1), uv(0), uv(0)), ErrMalformed, "pid"},
		{"offset overflow", encodeBody(hdr("h", 1), uv(1), keyBytes, uv(2), []byte{0}, uv(1<<63), []byte{0, 1, 0}, uv(1<<63), []byte{0, 1}, uv(0), uv(0)), ErrMalformed, "offset overflows"},
		{"group images out of order", encodeBody(hdr("h", 1), uv(2), keyBytes, uv(1), []byte{0, 5, 0, 1}, keyBytes, uv(1), []byte{0, 6, 0, 1}, uv(0), uv(0)), ErrInvalid, "order"},
		{"unknown out of order", encodeBody(hdr("h", 1), uv(0), uv(2), []byte{2, 0, 0, 1, 1, 0, 0, 1}, uv(0)), ErrInvalid, "unknown 1"},
		{"drop names out of order", encodeBody(hdr("h", 1), uv(0), uv(0), uv(2), bincodec.AppendString(nil, "b"), uv(1), bincodec.AppendString(nil, "a"), uv(1)), ErrInvalid, "name order"},
		{"drop name bad", encodeBody(hdr("h", 1), uv(0), uv(0), uv(1), bincodec.AppendString(nil, "a b"), uv(1)), ErrInvalid, "printable"},
		{"too many drops", encodeBody(hdr("h", 1), uv(0), uv(0), uv(MaxDrops+1)), ErrTooLarge, "drop counters"},
		{"total overflow", encodeBody(hdr("h", 1), uv(0), uv(2), uv(1), uv(0), []byte{0}, uv(1<<63), uv(2), uv(0), []byte{0}, uv(1<<63), uv(0)), ErrInvalid, "overflows 64 bits"},
		{"end before start", encodeBody(bincodec.AppendString(nil, "h"), uv(0), uv(0), uv(1), uv(5), uv(4), uv(0), uv(0), uv(0)), ErrInvalid, "before start"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := sampleBatch()
			err := b.UnmarshalBinary(tc.data)
			if err == nil {
				t.Fatalf("decoded %+v", b)
			}
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q; want %v containing %q", err, tc.is, tc.want)
			}
			if !reflect.DeepEqual(*b, Batch{}) {
				t.Fatalf("batch not reset on error: %+v", b)
			}
		})
	}
}

func TestBatchMarshalRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(b *Batch)
		want string
	}{
		{"version", func(b *Batch) { b.Version = 0 }, "version 0"},
		{"seq", func(b *Batch) { b.Seq = 0 }, "seq 0"},
		{"order", func(b *Batch) { b.Entries[0], b.Entries[1] = b.Entries[1], b.Entries[0] }, "order"},
		{"zero key", func(b *Batch) { b.Entries[0].Image = ImageKey{} }, "entry 0"},
		{"host", func(b *Batch) { b.Host = strings.Repeat("h", MaxHostLen+1) }, "host of 256 bytes"},
		{"drop", func(b *Batch) { b.Drops[""] = 1 }, "drop counter name"},
		{"too many", func(b *Batch) { b.Entries = make([]Entry, MaxEntries+1) }, "cap"},
	} {
		b := sampleBatch()
		tc.mod(b)
		if _, err := b.MarshalBinary(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Marshal error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestBatchCompact checks the size the layout promises for a dense profile.
func TestBatchCompact(t *testing.T) {
	b := &Batch{Version: Version, Host: "h", Seq: 1}
	for i := range 1000 {
		b.Entries = append(b.Entries, Entry{Image: keyA, Offset: uint64(4 * i), Count: uint64(1 + i%100)})
	}
	data, err := b.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if per := float64(len(data)) / 1000; per > 4.1 {
		t.Errorf("%.2f bytes per entry, want about 4", per)
	}
}

// TestBatchAccountingAndVersions: version 2 carries the sample accounting;
// version 1 messages still decode, keep their version and re-encode to the
// same bytes; the accounting's rules are checked.
func TestBatchAccountingAndVersions(t *testing.T) {
	b := sampleBatch()
	b.Delivered, b.Accounted = 1000, 990
	data, err := b.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got Batch
	if err := got.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	if got.Version != Version || got.Delivered != 1000 || got.Accounted != 990 {
		t.Fatalf("decoded version %d delivered %d accounted %d", got.Version, got.Delivered, got.Accounted)
	}

	v1 := sampleBatch()
	v1.Version = 1
	old, err := v1.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if len(old) >= len(data) {
		t.Fatalf("version 1 encoding (%d bytes) not shorter than version 2 (%d)", len(old), len(data))
	}
	var back Batch
	if err := back.UnmarshalBinary(old); err != nil {
		t.Fatal(err)
	}
	again, _ := back.MarshalBinary()
	if back.Version != 1 || !bytes.Equal(again, old) {
		t.Fatalf("version 1 batch came back as version %d, re-encoded equal: %v", back.Version, bytes.Equal(again, old))
	}

	for _, tc := range []struct {
		name string
		edit func(b *Batch)
	}{
		{"accounted over delivered", func(b *Batch) { b.Delivered, b.Accounted = 5, 6 }},
		{"accounting in version 1", func(b *Batch) { b.Version, b.Delivered = 1, 5 }},
		{"version 0", func(b *Batch) { b.Version = 0 }},
	} {
		b := sampleBatch()
		tc.edit(b)
		if err := b.Validate(); err == nil {
			t.Errorf("%s: validated", tc.name)
		}
	}
}
