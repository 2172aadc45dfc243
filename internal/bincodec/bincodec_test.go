package bincodec

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// record is a message with one field of every kind, the schema the tests
// and the fuzz target encode and decode.
type record struct {
	Kind   byte
	N      uint64
	CPU    uint64 // at most maxCPU
	Name   string // at most maxName bytes
	Blob   []byte // at most maxName bytes
	Seqs   []uint64
	At     time.Time
	Raw    uint64
	Tag    [3]byte
	Labels []string // strictly increasing: the caller's own rule
}

const (
	maxCPU  = 1000
	maxName = 16
	maxSeqs = 8
)

// errOrder stands for a format's own sentinel passed to Fail.
var errOrder = errors.New("out of order")

func (r *record) encode() []byte {
	var e Encoder
	e.Byte(r.Kind)
	e.Uvarint(r.N)
	e.Uvarint(r.CPU)
	e.String(r.Name)
	e.Bytes(r.Blob)
	e.Uvarint(uint64(len(r.Seqs)))
	for _, s := range r.Seqs {
		e.Uvarint(s)
	}
	e.Time(r.At)
	e.Uint64(r.Raw)
	e.Raw(r.Tag[:])
	e.Uvarint(uint64(len(r.Labels)))
	for _, l := range r.Labels {
		e.String(l)
	}
	return e.B
}

func decodeRecord(b []byte, base int) (*record, error) {
	d := NewDecoder(b, base)
	r := &record{}
	r.Kind = d.Byte("kind")
	r.N = d.Uvarint("n")
	r.CPU = d.UvarintMax("cpu", maxCPU)
	r.Name = d.String("name", maxName)
	if p := d.LenBytes("blob", maxName); len(p) > 0 {
		r.Blob = bytes.Clone(p)
	}
	n := d.Count("seqs", maxSeqs, 1)
	for i := 0; i < n && d.Err() == nil; i++ {
		r.Seqs = append(r.Seqs, d.Uvarint("seq"))
	}
	r.At = d.Time("at")
	r.Raw = d.Uint64("raw")
	copy(r.Tag[:], d.Bytes("tag", len(r.Tag)))
	n = d.Count("labels", maxSeqs, 1)
	for i := 0; i < n && d.Err() == nil; i++ {
		l := d.String("label", maxName)
		if i > 0 && l <= r.Labels[i-1] {
			d.Fail(errOrder, "label %d %q: not after %q", i, l, r.Labels[i-1])
		}
		r.Labels = append(r.Labels, l)
	}
	d.End()
	if err := d.Err(); err != nil {
		return nil, err
	}
	return r, nil
}

func sampleRecord() *record {
	return &record{
		Kind: 7, N: 1 << 63, CPU: maxCPU, Name: "alpha1.example", Blob: []byte{0, 1, 2},
		Seqs: []uint64{0, 127, 128, 1<<64 - 1}, At: time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC),
		Raw: 0x0102030405060708, Tag: [3]byte{'a', 'b', 'c'}, Labels: []string{"a", "b"},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, r := range []*record{sampleRecord(), {}, {At: time.Unix(0, -1).UTC(), Name: strings.Repeat("x", maxName)}} {
		b := r.encode()
		got, err := decodeRecord(b, 0)
		if err != nil {
			t.Fatalf("decode %x: %v", b, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Errorf("round trip\n got %+v\nwant %+v", got, r)
		}
		if again := got.encode(); !bytes.Equal(again, b) {
			t.Errorf("re-encoding differs:\n in %x\nout %x", b, again)
		}
		// Every truncation fails: truncated, or a count the bytes
		// left cannot hold.
		for n := range len(b) {
			_, err := decodeRecord(b[:n], 0)
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrMalformed) {
				t.Fatalf("truncated to %d of %d bytes: %v", n, len(b), err)
			}
		}
	}
}

// TestEncoding pins the bytes: the formats built on this package must not
// change under it.
func TestEncoding(t *testing.T) {
	got := sampleRecord().encode()
	const want = "07" + "80808080808080808001" + "e807" + "0e" + "616c706861312e6578616d706c65" + "03000102" +
		"04" + "00" + "7f" + "8001" + "ffffffffffffffffff01" + "18998b01859eb608" + "0102030405060708" + "616263" + "02" + "0161" + "0162"
	if hex.EncodeToString(got) != want {
		t.Errorf("encoding\n got %x\nwant %s", got, want)
	}
	if b := AppendTime(nil, time.Time{}); !bytes.Equal(b, make([]byte, 8)) {
		t.Errorf("zero time encodes as %x", b)
	}
}

func TestDecodeErrors(t *testing.T) {
	good := sampleRecord().encode()
	prefix := func(r *record) []byte { return r.encode()[:1] } // the kind byte
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	uv := func(v uint64) []byte { return binary.AppendUvarint(nil, v) }
	for _, tc := range []struct {
		name  string
		data  []byte
		cause error
		want  string // in the message: the field, the fault and the byte
	}{
		{"empty", nil, ErrTruncated, "kind: truncated (at byte 100)"},
		{"varint truncated", cat(prefix(&record{}), []byte{0x80}), ErrTruncated, "n: truncated (at byte 101)"},
		{"varint overflow", cat(prefix(&record{}), bytes.Repeat([]byte{0xff}, 9), []byte{0x7f}), ErrMalformed, "n: varint overflows 64 bits (at byte 101)"},
		{"varint not minimal", cat(prefix(&record{}), []byte{0x81, 0x00}), ErrMalformed, "n: varint not minimally encoded"},
		{"range", cat(prefix(&record{}), uv(0), uv(maxCPU+1)), ErrMalformed, "cpu: 1001 exceeds 1000 (at byte 104)"},
		{"string cap", cat(prefix(&record{}), uv(0), uv(0), uv(maxName+1)), ErrTooLarge, "name: 17 bytes (cap 16)"},
		{"string length", cat(prefix(&record{}), uv(0), uv(0), []byte{0x80}), ErrTruncated, "name length: truncated"},
		{"string truncated", cat(prefix(&record{}), uv(0), uv(0), uv(5), []byte("ab")), ErrTruncated, "name: truncated: 5 bytes, only 2 left"},
		{"bytes cap", cat(prefix(&record{}), uv(0), uv(0), uv(0), uv(1<<20)), ErrTooLarge, "blob: 1048576 bytes (cap 16)"},
		{"count cap", cat(prefix(&record{}), uv(0), uv(0), uv(0), uv(0), uv(maxSeqs+1)), ErrTooLarge, "seqs: 9 (cap 8)"},
		{"count beyond input", cat(prefix(&record{}), uv(0), uv(0), uv(0), uv(0), uv(maxSeqs), uv(1)), ErrMalformed, "seqs: 8 cannot fit in 1 bytes"},
		{"time truncated", cat(prefix(&record{}), uv(0), uv(0), uv(0), uv(0), uv(0), make([]byte, 7)), ErrTruncated, "at: truncated"},
		{"fixed truncated", cat(prefix(&record{}), uv(0), uv(0), uv(0), uv(0), uv(0), make([]byte, 16), []byte("ab")), ErrTruncated, "tag: truncated: 3 bytes, only 2 left"},
		{"caller's rule", cat(good[:len(good)-2], []byte{1, 'a'}), errOrder, `label 1 "a": not after "a" (at byte`},
		{"trailing", cat(good, []byte{0, 0}), ErrMalformed, "2 trailing bytes (at byte"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeRecord(tc.data, 100)
			var e *Error
			if !errors.Is(err, tc.cause) || !errors.As(err, &e) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want %v containing %q", err, tc.cause, tc.want)
			}
		})
	}
}

// TestSticky: after a failure every read returns a zero value and the first
// error stays, whatever follows.
func TestSticky(t *testing.T) {
	d := NewDecoder([]byte{0x81, 0, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0)
	d.Uvarint("first")
	err := d.Err()
	if err == nil || !strings.Contains(err.Error(), "first: varint not minimally encoded") {
		t.Fatalf("first error %v", err)
	}
	if d.Byte("b") != 0 || d.Uvarint("u") != 0 || d.Uint64("w") != 0 || d.String("s", 9) != "" ||
		d.LenBytes("p", 9) != nil || d.Count("c", 9, 1) != 0 || !d.Time("t").IsZero() || len(d.Bytes("f", 1)) != 0 {
		t.Error("a read after the failure returned a value")
	}
	d.Fail(errOrder, "later")
	d.End()
	if d.Err() != err || d.Left() != 0 {
		t.Errorf("error %v, %d bytes left; want the first error and none", d.Err(), d.Left())
	}
}
