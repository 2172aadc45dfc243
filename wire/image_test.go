package wire

import (
	"bytes"
	"errors"
	"reflect"
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

func recordEqual(a, b *ImageRecord) bool {
	if len(a.Symbols) == 0 && len(b.Symbols) == 0 {
		x, y := *a, *b
		x.Symbols, y.Symbols = nil, nil
		return reflect.DeepEqual(x, y)
	}
	return reflect.DeepEqual(a, b)
}

func TestImageRecordRoundTrip(t *testing.T) {
	r := testRand(t)
	cases := []*ImageRecord{
		sampleRecord(),
		{Version: Version, Key: keyA},
		{Version: Version, Key: keyA, Path: strings.Repeat("p", MaxPathLen), Size: ^uint64(0), TextStart: ^uint64(0), TextEnd: ^uint64(0),
			Symbols: []Symbol{{Name: strings.Repeat("n", MaxSymbolNameLen), Addr: ^uint64(0), Size: ^uint64(0)}}},
	}
	for range 500 {
		cases = append(cases, randRecord(r, 200))
	}
	for i, rec := range cases {
		data, err := rec.MarshalBinary()
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		var got ImageRecord
		if err := got.UnmarshalBinary(data); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !recordEqual(&got, rec) {
			t.Fatalf("record %d: round trip:\n got %+v\nwant %+v", i, got, *rec)
		}
		again, _ := got.MarshalBinary()
		if !bytes.Equal(again, data) {
			t.Fatalf("record %d: re-encoding differs", i)
		}
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
