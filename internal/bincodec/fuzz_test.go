package bincodec

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecoder reads arbitrary bytes as a record with every kind of field:
// the decoder fails with an *Error and no panic, or what it decodes encodes
// back to the same bytes (one encoding per value: minimal varints, no
// trailing bytes).
func FuzzDecoder(f *testing.F) {
	for _, r := range []*record{sampleRecord(), {}} {
		b := r.encode()
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRecord(b, 0)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Err == nil {
				t.Fatalf("error %v is not an *Error with a cause", err)
			}
			return
		}
		if again := r.encode(); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", b, again)
		}
	})
}
