package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeyKind says where an image's content identity came from.
type KeyKind uint8

// Kinds of image identity. Zero is no kind, so the zero ImageKey is unset.
const (
	KindSHA256  KeyKind = 1 // SHA-256 of the whole file
	KindBuildID KeyKind = 2 // the NT_GNU_BUILD_ID note the linker wrote
)

func (k KeyKind) String() string {
	switch k {
	case KindSHA256:
		return "sha256"
	case KindBuildID:
		return "buildid"
	}
	return fmt.Sprintf("KeyKind(%d)", uint8(k))
}

// MaxKeyBytes is the longest ID an ImageKey holds: a SHA-256, or a build ID
// of up to 32 bytes (GNU ld writes 20 for sha1, 16 for md5 and uuid).
const MaxKeyBytes = 32

// ImageKey is an image's content identity: kind, length, and the ID bytes
// zero-padded to 32.
//
// It is a fixed-size array rather than the "buildid:<hex>" string of
// hwsim/elfimage.ImageID because it is comparable (a map key, ==) without
// allocation, 34 bytes instead of up to 72, and fixed-width, so storage keys
// that embed it scan in order and split without length prefixes. It holds
// every SHA-256 and every build ID up to 32 bytes; String and ParseImageKey
// convert to and from the elfimage form. Keys order by kind, length, bytes.
type ImageKey [2 + MaxKeyBytes]byte

// ErrImageKey is wrapped by errors about malformed image keys.
var ErrImageKey = errors.New("bad image key")

// NewImageKey makes a key from an ID's kind and bytes.
func NewImageKey(kind KeyKind, id []byte) (ImageKey, error) {
	var k ImageKey
	switch kind {
	case KindSHA256:
		if len(id) != 32 {
			return k, fmt.Errorf("%w: sha256 needs 32 bytes, got %d", ErrImageKey, len(id))
		}
	case KindBuildID:
		if len(id) == 0 || len(id) > MaxKeyBytes {
			return k, fmt.Errorf("%w: build ID of %d bytes (want 1..%d)", ErrImageKey, len(id), MaxKeyBytes)
		}
	default:
		return k, fmt.Errorf("%w: unknown kind %d", ErrImageKey, uint8(kind))
	}
	k[0], k[1] = byte(kind), byte(len(id))
	copy(k[2:], id)
	return k, nil
}

// ParseImageKey inverts String; it accepts what elfimage.ImageID.String gives.
func ParseImageKey(s string) (ImageKey, error) {
	kind, h, ok := strings.Cut(s, ":")
	if !ok {
		return ImageKey{}, fmt.Errorf("%w %q: want kind:hex", ErrImageKey, s)
	}
	var kk KeyKind
	switch kind {
	case "sha256":
		kk = KindSHA256
	case "buildid":
		kk = KindBuildID
	default:
		return ImageKey{}, fmt.Errorf("%w %q: unknown kind %q (want sha256 or buildid)", ErrImageKey, s, kind)
	}
	if len(h) > 2*MaxKeyBytes {
		return ImageKey{}, fmt.Errorf("%w %q: more than %d bytes", ErrImageKey, s, MaxKeyBytes)
	}
	b, err := hex.DecodeString(h)
	if err != nil {
		return ImageKey{}, fmt.Errorf("%w %q: bad hex digits", ErrImageKey, s)
	}
	k, err := NewImageKey(kk, b)
	if err != nil {
		return ImageKey{}, fmt.Errorf("%q: %w", s, err)
	}
	return k, nil
}

// MustParseImageKey is ParseImageKey for constants in tests and examples.
func MustParseImageKey(s string) ImageKey {
	k, err := ParseImageKey(s)
	if err != nil {
		panic(err)
	}
	return k
}

// Kind is the key's kind (0 for the zero key).
func (k ImageKey) Kind() KeyKind { return KeyKind(k[0]) }

// ID returns the identity bytes (a copy).
func (k ImageKey) ID() []byte {
	n := min(int(k[1]), MaxKeyBytes)
	return bytes.Clone(k[2 : 2+n])
}

// IsZero reports whether the key is unset.
func (k ImageKey) IsZero() bool { return k == ImageKey{} }

// Check reports whether k is a key NewImageKey could have made: a known
// kind, a length that fits it, and zero padding (so equal IDs are equal keys).
func (k ImageKey) Check() error {
	n := int(k[1])
	if n > MaxKeyBytes {
		return fmt.Errorf("%w: length %d exceeds %d", ErrImageKey, n, MaxKeyBytes)
	}
	if _, err := NewImageKey(KeyKind(k[0]), k[2:2+n]); err != nil {
		return err
	}
	for _, b := range k[2+n:] {
		if b != 0 {
			return fmt.Errorf("%w: nonzero padding", ErrImageKey)
		}
	}
	return nil
}

// String gives "sha256:<hex>" or "buildid:<hex>", as elfimage does.
func (k ImageKey) String() string {
	if k.IsZero() {
		return "none"
	}
	n := min(int(k[1]), MaxKeyBytes)
	return k.Kind().String() + ":" + hex.EncodeToString(k[2:2+n])
}

// Compare orders keys by kind, length, bytes: -1, 0 or +1.
func (k ImageKey) Compare(o ImageKey) int { return bytes.Compare(k[:], o[:]) }

// MarshalText gives String, so keys read well in JSON.
func (k ImageKey) MarshalText() ([]byte, error) {
	if err := k.Check(); err != nil {
		return nil, err
	}
	return []byte(k.String()), nil
}

// UnmarshalText parses String's form.
func (k *ImageKey) UnmarshalText(b []byte) error {
	v, err := ParseImageKey(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

func (k ImageKey) appendTo(buf []byte) []byte {
	n := min(int(k[1]), MaxKeyBytes)
	return append(buf, k[:2+n]...)
}
