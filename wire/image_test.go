package wire

import (
	"errors"
	"strings"
	"testing"

	"dcpi/internal/bincodec"
)

func sampleRecord() *ImageRecord {
	return &ImageRecord{
		Version: Version, Key: keyB, Path: "/usr/bin/hello", Size: 812345,
		TextStart: 0x120000000, TextEnd: 0x120080000,
		Symbols: []Symbol{{Name: "_start", Addr: 0x120000000, Size: 0x40}, {Name: "main", Addr: 0x120000040, Size: 0x100}},
	}
}

func TestImageRecordErrors(t *testing.T) {
	good, err := sampleRecord().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	body := func(parts ...[]byte) []byte {
		buf := appendHeader(nil, imageMagic, 1)
		for _, p := range parts {
			buf = append(buf, p...)
		}
		return appendTrailer(buf, 0)
	}
	k := keyB.appendTo(nil)
	for _, tc := range []struct {
		name string
		data []byte
		is   error
		want string
	}{
		{"batch magic", append([]byte("DCPB"), good[4:]...), ErrMalformed, "magic"},
		{"version", reseal(append(append([]byte("DCPR"), 0xff, 0xff), good[6:]...)), ErrVersion, "version 65535"},
		{"checksum", append(append([]byte(nil), good[:len(good)-2]...), 0, 0), ErrMalformed, "checksum"},
		{"zero key", body([]byte{0, 0}), ErrInvalid, "unknown kind 0"},
		{"key truncated", body([]byte{2, 20, 1, 2}), ErrMalformed, "truncated"},
		{"path too long", body(k, uv(MaxPathLen+1)), ErrTooLarge, "path"},
		{"text reversed", body(k, bincodec.AppendString(nil, "/x"), uv(1), uv(10), uv(5), uv(0)), ErrInvalid, "text end"},
		{"symbols cap", body(k, bincodec.AppendString(nil, "/x"), uv(1), uv(0), uv(0), uv(MaxSymbols+1)), ErrTooLarge, "symbols"},
		{"symbols beyond input", body(k, bincodec.AppendString(nil, "/x"), uv(1), uv(0), uv(0), uv(100), bincodec.AppendString(nil, "f"), uv(0), uv(0)), ErrMalformed, "cannot fit"},
		{"empty symbol name", body(k, bincodec.AppendString(nil, "/x"), uv(1), uv(0), uv(0), uv(2), bincodec.AppendString(nil, "function"), uv(0), uv(0), bincodec.AppendString(nil, ""), uv(0), uv(0)), ErrInvalid, "symbol 1: empty name"},
		{"symbol name cap", body(k, bincodec.AppendString(nil, "/x"), uv(1), uv(0), uv(0), uv(1), uv(MaxSymbolNameLen+1), make([]byte, 10)), ErrTooLarge, "symbol name"},
		{"trailing", reseal(append(append([]byte(nil), good[:len(good)-4]...), 1, 0, 0, 0, 0)), ErrMalformed, "trailing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec ImageRecord
			err := rec.UnmarshalBinary(tc.data)
			if err == nil || !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want %v containing %q", err, tc.is, tc.want)
			}
		})
	}
}
