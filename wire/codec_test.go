package wire

import (
	"errors"
	"testing"

	"dcpi/internal/bincodec"
)

// TestDecodeErrorCauses: a decoding error wraps this package's sentinel and
// the codec's *Error, which names the field and carries the codec's cause.
func TestDecodeErrorCauses(t *testing.T) {
	for _, tc := range []struct {
		name     string
		body     []byte
		sentinel error
		cause    error
		field    string
	}{
		{"truncated host", []byte{5, 'a'}, ErrMalformed, bincodec.ErrTruncated, "host"},
		{"host cap", bincodec.AppendUvarint(nil, MaxHostLen+1), ErrTooLarge, bincodec.ErrTooLarge, "host"},
		{"bad varint", append(bincodec.AppendString(nil, "h"), 0x80, 0), ErrMalformed, bincodec.ErrMalformed, "epoch"},
		{"empty group", append(append(bincodec.AppendString(nil, "h"), 1, 0, 1, 0, 0, 1), append(keyA.appendTo(nil), 0, 0, 0)...), ErrInvalid, ErrInvalid, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b Batch
			err := b.UnmarshalBinary(encodeBody(tc.body))
			var e *bincodec.Error
			if !errors.Is(err, tc.sentinel) || !errors.Is(err, tc.cause) || !errors.As(err, &e) || e.Field != tc.field {
				t.Fatalf("error %v (%#v); want %v and %v in field %q", err, e, tc.sentinel, tc.cause, tc.field)
			}
		})
	}
}
