package loadgen

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"reflect"
	"testing"
)

// FuzzDecode: any bytes decode to a recording that passes Check and
// encodes back to the same recording, or to an error; never a panic.
func FuzzDecode(f *testing.F) {
	good := encode(f, testRecording(f))
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Decode(data)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := r.Encode(&buf); err != nil {
			t.Fatalf("decoded recording does not encode: %v", err)
		}
		again, err := Decode(buf.Bytes())
		if err != nil {
			t.Fatalf("re-encoded recording does not decode: %v", err)
		}
		if !reflect.DeepEqual(again.Header, r.Header) || len(again.Items) != len(r.Items) {
			t.Fatalf("round trip changed the recording")
		}
	})
}

// FuzzDecodeChecksummed is FuzzDecode past the checksum: the fuzzer's
// bytes get a valid CRC appended, so that its mutations reach the header
// and item parsers instead of stopping at the trailer's check.
func FuzzDecodeChecksummed(f *testing.F) {
	good := encode(f, testRecording(f))
	f.Add(good[:len(good)-4])
	f.Fuzz(func(t *testing.T, body []byte) {
		data := binary.BigEndian.AppendUint32(bytes.Clone(body), crc32.Checksum(body, crcTable))
		r, err := Decode(data)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := r.Encode(&buf); err != nil {
			t.Fatalf("decoded recording does not encode: %v", err)
		}
		if _, err := Decode(buf.Bytes()); err != nil {
			t.Fatalf("re-encoded recording does not decode: %v", err)
		}
	})
}
