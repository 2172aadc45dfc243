package coordinator

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"dcpi/storage"
	"dcpi/wire"
)

func sampleCommands(t testing.TB) []Command {
	r := testRand(t)
	at := time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)
	return []Command{
		&Ingest{Deltas: []storage.Delta{randDelta(r, "h1", 0, 1, 4, 1, 20), randDelta(r, "h2", 3, 7, 0, 2, 5)}, Images: []*wire.ImageRecord{imageRec(1)}},
		&Ingest{},
		&RegisterNode{Host: "alpha1", CPUs: 4, Labels: map[string]string{"rack": "r1", "zone": "z"}, At: at},
		&RegisterNode{Host: "alpha2", CPUs: 1, At: at},
		&CutEpoch{At: at},
		&AckEpoch{Host: "alpha1", Epoch: 3, LastSeq: []uint64{1, 0, 99, 1 << 50}, At: at},
		&AckEpoch{Host: "alpha1", Epoch: 3, At: at},
		&SealEpoch{Epoch: 3, At: at},
		&StartEpochs{At: at},
	}
}

func TestCommandRoundTrip(t *testing.T) {
	for _, c := range sampleCommands(t) {
		b, err := EncodeCommand(c)
		if err != nil {
			t.Fatalf("%T: %v", c, err)
		}
		got, err := DecodeCommand(b)
		if err != nil {
			t.Fatalf("%T: decode: %v", c, err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Errorf("%T: round trip\n got %+v\nwant %+v", c, got, c)
		}
		// Every truncation is an error, never a panic.
		for n := range len(b) {
			if _, err := DecodeCommand(b[:n]); !errors.Is(err, ErrBadCommand) {
				t.Fatalf("%T truncated to %d of %d bytes: %v", c, n, len(b), err)
			}
		}
		if _, err := DecodeCommand(append(b, 0)); !errors.Is(err, ErrBadCommand) {
			t.Errorf("%T with a trailing byte: %v", c, err)
		}
	}
}

func TestCommandRejects(t *testing.T) {
	at := time.Unix(1e9, 0)
	r := testRand(t)
	bad := randDelta(r, "h", 0, 5, 0, 1, 3)
	bad.Last = 4
	for _, c := range []Command{
		nil,
		&Ingest{Deltas: []storage.Delta{bad}},
		&Ingest{Deltas: []storage.Delta{{}}},
		&Ingest{Images: []*wire.ImageRecord{nil}},
		&RegisterNode{Host: "", CPUs: 1, At: at},
		&RegisterNode{Host: "h", CPUs: 0, At: at},
		&RegisterNode{Host: "h", CPUs: 1},
		&CutEpoch{},
		&AckEpoch{Host: "h", Epoch: 0, At: at},
		&SealEpoch{Epoch: 0, At: at},
	} {
		if _, err := EncodeCommand(c); !errors.Is(err, ErrBadCommand) {
			t.Errorf("EncodeCommand(%+v) = %v, want ErrBadCommand", c, err)
		}
	}
	for _, b := range [][]byte{nil, {}, {2, kindCut}, {commandVersion, 99}, {commandVersion}} {
		if _, err := DecodeCommand(b); !errors.Is(err, ErrBadCommand) {
			t.Errorf("DecodeCommand(%x) = %v, want ErrBadCommand", b, err)
		}
	}
}

// FuzzDecodeCommand: no input panics the decoder, and what it accepts
// encodes back to the same bytes (one encoding per command).
func FuzzDecodeCommand(f *testing.F) {
	for _, c := range sampleCommands(f) {
		b, err := EncodeCommand(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCommand(b)
		if err != nil {
			if !errors.Is(err, ErrBadCommand) {
				t.Fatalf("error %v does not wrap ErrBadCommand", err)
			}
			return
		}
		again, err := EncodeCommand(c)
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", c, err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", b, again)
		}
	})
}
