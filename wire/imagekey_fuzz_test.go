package wire_test

import (
	"errors"
	"strings"
	"testing"

	"dcpi/wire"
)

// FuzzParseImageKey feeds the image key parser (--image, the web's image=,
// a path upload's ID file) and the upload ID and path source parsers
// arbitrary strings: a refusal wraps ErrImageKey (ErrInvalid for IDs and
// sources); a key it accepts is one NewImageKey could have made, and its
// String (and MarshalText) parses back to the same key.
func FuzzParseImageKey(f *testing.F) {
	for _, s := range []string{
		wire.KeyA.String(), "buildid:0123456789abcdef", "sha256:" + strings.Repeat("ab", 32), "buildid:" + strings.Repeat("CD", 32),
		"buildid:", "sha256:00", "buildid:0g", "none", "md5:00", "buildid:" + strings.Repeat("0", 66),
		"0123456789abcdef0123456789abcdef", "oracle", "instrumented",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := wire.ParseImageKey(s)
		if err != nil {
			if !errors.Is(err, wire.ErrImageKey) || !k.IsZero() {
				t.Fatalf("%q: key %v with error %v, want the zero key and ErrImageKey", s, k, err)
			}
		} else {
			if err := k.Check(); err != nil {
				t.Fatalf("%q: accepted key %v fails Check: %v", s, k, err)
			}
			if !strings.EqualFold(k.String(), s) {
				t.Fatalf("%q parses as %v", s, k)
			}
			text, err := k.MarshalText()
			if err != nil {
				t.Fatalf("%q: %v", s, err)
			}
			var k2 wire.ImageKey
			if err := k2.UnmarshalText(text); err != nil || k2 != k {
				t.Fatalf("%q: %s parses back as %v, %v", s, text, k2, err)
			}
		}
		if id, err := wire.ParseUploadID(s); err != nil {
			if !errors.Is(err, wire.ErrInvalid) {
				t.Fatalf("%q: upload ID error %v does not wrap ErrInvalid", s, err)
			}
		} else if id.IsZero() || !strings.EqualFold(id.String(), s) {
			t.Fatalf("%q: upload ID %v", s, id)
		}
		if src, err := wire.ParsePathSource(s); err != nil {
			if !errors.Is(err, wire.ErrInvalid) {
				t.Fatalf("%q: path source error %v does not wrap ErrInvalid", s, err)
			}
		} else if src.Check() != nil || src.String() != s {
			t.Fatalf("%q: path source %v", s, src)
		}
	})
}
