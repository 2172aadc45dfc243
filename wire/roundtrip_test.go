package wire_test

import (
	"bytes"
	"strings"
	"testing"

	"dcpi/internal/testrand"
	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// The round-trip tests are external (package wire_test) so that they can
// draw from wiretest, which imports wire.

func TestBatchRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    *wire.Batch
	}{
		{"minimal", &wire.Batch{Version: wire.Version, Host: "h", Seq: 1}},
		{"sample", wire.SampleBatch()},
		{"daemon-level", &wire.Batch{Version: wire.Version, Host: "h-example-com", CPU: wire.AllCPUs, Seq: 1 << 62, Drops: map[string]uint64{"x": 1}}},
		{"max values", &wire.Batch{Version: wire.Version, Host: strings.Repeat("é", wire.MaxHostLen/2), Epoch: ^uint64(0), CPU: 0xFFFF, Seq: ^uint64(0), Start: ^uint64(0), End: ^uint64(0),
			Entries: []wire.Entry{{Image: wire.KeyB, Event: 255, Offset: ^uint64(0), PID: ^uint32(0), Count: ^uint64(0)}}}},
		{"unknown only", &wire.Batch{Version: wire.Version, Host: "h", Seq: 2, Unknown: []wire.UnknownEntry{{PID: 1, PC: 2, Event: 3, Count: 4}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := tc.b.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var got wire.Batch
			if err := got.UnmarshalBinary(data); err != nil {
				t.Fatal(err)
			}
			if !wiretest.BatchEqual(&got, tc.b) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, *tc.b)
			}
			again, err := got.MarshalBinary()
			if err != nil || !bytes.Equal(again, data) {
				t.Fatalf("re-encoding differs (%v)", err)
			}
		})
	}
}

func TestBatchRoundTripRandom(t *testing.T) {
	r := testrand.New(t)
	for i := range 2000 {
		roundTripBatch(t, i, wiretest.RandBatch(r, wiretest.Options{MaxEntries: 1 + i%300}))
	}
}

// roundTripBatch encodes b, decodes it, and requires the same batch, the
// same totals, and the same bytes when the decoded batch is encoded again.
func roundTripBatch(t *testing.T, i int, b *wire.Batch) {
	t.Helper()
	data, err := b.MarshalBinary()
	if err != nil {
		t.Fatalf("batch %d: %v", i, err)
	}
	var got wire.Batch
	if err := got.UnmarshalBinary(data); err != nil {
		t.Fatalf("batch %d: %v", i, err)
	}
	if !wiretest.BatchEqual(&got, b) {
		t.Fatalf("batch %d: round trip:\n got %+v\nwant %+v", i, got, *b)
	}
	if got.Total() != b.Total() || got.StackTotal() != b.StackTotal() {
		t.Fatalf("batch %d: totals %d, %d in stacks, want %d, %d", i, got.Total(), got.StackTotal(), b.Total(), b.StackTotal())
	}
	again, err := got.MarshalBinary()
	if err != nil || !bytes.Equal(again, data) {
		t.Fatalf("batch %d: re-encoding differs (%v)", i, err)
	}
}

func TestImageRecordRoundTrip(t *testing.T) {
	r := testrand.New(t)
	cases := []*wire.ImageRecord{
		wire.SampleRecord(),
		{Version: wire.Version, Key: wire.KeyA},
		{Version: wire.Version, Key: wire.KeyA, Path: strings.Repeat("p", wire.MaxPathLen), Size: ^uint64(0), TextStart: ^uint64(0), TextEnd: ^uint64(0),
			Symbols: []wire.Symbol{{Name: strings.Repeat("n", wire.MaxSymbolNameLen), Addr: ^uint64(0), Size: ^uint64(0)}}},
	}
	for range 500 {
		cases = append(cases, wiretest.RandRecord(r, 200))
	}
	for i, rec := range cases {
		data, err := rec.MarshalBinary()
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		var got wire.ImageRecord
		if err := got.UnmarshalBinary(data); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !wiretest.RecordEqual(&got, rec) {
			t.Fatalf("record %d: round trip:\n got %+v\nwant %+v", i, got, *rec)
		}
		again, _ := got.MarshalBinary()
		if !bytes.Equal(again, data) {
			t.Fatalf("record %d: re-encoding differs", i)
		}
	}
}
