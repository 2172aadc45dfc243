package wire_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"dcpi/internal/testrand"
	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// stackBatch is a version-3 batch whose stacks share a deep common caller
// chain, as real stacks do.
func stackBatch(depth int) *wire.Batch {
	b := wire.SampleBatch()
	b.Version = wire.StackVersion
	chain := make([]wire.Frame, depth)
	for i := range chain {
		chain[i] = wire.Frame{Image: wire.KeyA, Offset: 0x1000 + 0x40*uint64(i)}
	}
	for leaf := range 8 {
		s := wire.StackEntry{Event: uint8(leaf % 2), Count: uint64(1 + leaf)}
		s.Frames = append([]wire.Frame{{Image: wire.KeyB, Offset: 4 * uint64(leaf)}}, chain[:depth-1]...)
		b.Stacks = append(b.Stacks, s)
	}
	b.Stacks = append(b.Stacks, wire.StackEntry{PID: 9, Truncated: true, Frames: []wire.Frame{{Offset: 0x120000010}, chain[0]}, Count: 3})
	b.StackDrops = map[string]uint64{"driver.stack_table_full": 2}
	b.Normalize()
	return b
}

func TestStackBatchRoundTrip(t *testing.T) {
	r := testrand.New(t)
	cases := []*wire.Batch{stackBatch(2), stackBatch(wire.MaxStackFrames),
		{Version: wire.StackVersion, Host: "h", Seq: 1},
		{Version: wire.StackVersion, Host: "h", Seq: 1, StackDrops: map[string]uint64{"x": 1}},
	}
	for i := range 1000 {
		cases = append(cases, wiretest.RandBatch(r, wiretest.Options{MaxEntries: i % 40, MaxStacks: 1 + i%60}))
	}
	for i, b := range cases {
		roundTripBatch(t, i, b)
	}
}

// TestStackFrameTable: a deep caller chain shared by many stacks is written
// once, so a stack costs about a byte a frame, not an image key and an
// offset (36+ bytes) a frame.
func TestStackFrameTable(t *testing.T) {
	flat := stackBatch(2)
	flat.Stacks, flat.StackDrops = nil, nil
	base, err := flat.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	deep, err := stackBatch(wire.MaxStackFrames).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	frames := 8*wire.MaxStackFrames + 2
	perFrame := float64(len(deep)-len(base)) / float64(frames)
	if perFrame > 2 {
		t.Errorf("%.2f bytes per stack frame (%d bytes for %d frames), want at most 2", perFrame, len(deep)-len(base), frames)
	}
}

// TestStackVersions: version 1 and 2 carry no stacks (Validate refuses
// them there), and the stack section exists only in version 3.
func TestStackVersions(t *testing.T) {
	b := stackBatch(3)
	b.Version = wire.FlatVersion
	if err := b.Validate(); !errors.Is(err, wire.ErrInvalid) {
		t.Fatalf("version 2 with stacks: %v", err)
	}
	flat := wire.SampleBatch()
	flat.Version = wire.FlatVersion
	v2, _ := flat.MarshalBinary()
	flat.Version = wire.StackVersion
	v3, _ := flat.MarshalBinary()
	if len(v3) != len(v2)+3 {
		t.Fatalf("an empty stack section adds %d bytes, want 3", len(v3)-len(v2))
	}
}

// TestStackDecodeErrors edits the stack section of a valid encoding, which
// a fuzzer would take long to reach past the checksum.
func TestStackDecodeErrors(t *testing.T) {
	base := &wire.Batch{Version: wire.StackVersion, Host: "h", Seq: 1}
	head, err := base.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	// head ends with the empty stack section (3 zero bytes) and the CRC.
	prefix := head[:len(head)-wire.TrailerLen-3]
	key := []byte{byte(wire.KeyA[0]), wire.KeyA[1]}
	key = append(key, wire.KeyA.ID()...)
	msg := func(parts ...[]byte) []byte {
		b := bytes.Clone(prefix)
		for _, p := range parts {
			b = append(b, p...)
		}
		return wire.Reseal(append(b, 0, 0, 0, 0))
	}
	for _, tc := range []struct {
		name string
		data []byte
		is   error
		want string
	}{
		{"frame count beyond input", msg([]byte{1}, key, []byte{100, 0}), wire.ErrMalformed, "cannot fit"},
		{"empty frame group", msg([]byte{1}, key, []byte{0, 0, 0}), wire.ErrInvalid, "no frames"},
		{"index past table", msg([]byte{1}, key, []byte{1, 8}, []byte{1, 0, 0, 0, 1, 1, 1}, []byte{0}), wire.ErrInvalid, "past the frame table"},
		{"unreferenced frame", msg([]byte{1}, key, []byte{2, 8, 0}, []byte{1, 0, 0, 0, 1, 0, 1}, []byte{0}), wire.ErrInvalid, "referenced by no stack"},
		{"unknown flags", msg([]byte{1}, key, []byte{1, 8}, []byte{1, 0, 0, 2, 1, 0, 1}, []byte{0}), wire.ErrInvalid, "unknown flags"},
		{"no frames", msg([]byte{1}, key, []byte{1, 8}, []byte{1, 0, 0, 0, 0, 1}, []byte{0}), wire.ErrInvalid, "no frames"},
		{"too deep", msg([]byte{1}, key, []byte{1, 8}, []byte{1, 0, 0, 0, wire.MaxStackFrames + 1}, bytes.Repeat([]byte{0}, 70), []byte{1, 0}), wire.ErrTooLarge, "stack frames"},
		{"zero count", msg([]byte{1}, key, []byte{1, 8}, []byte{1, 0, 0, 0, 1, 0, 0}, []byte{0}), wire.ErrInvalid, "zero count"},
		{"stacks out of order", msg([]byte{1}, key, []byte{1, 8}, []byte{2, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1}, []byte{0}), wire.ErrInvalid, "not after stack 0"},
		{"frame groups out of order", msg([]byte{2}, key, []byte{1, 8}, key, []byte{1, 9}, []byte{1, 0, 0, 0, 2, 0, 1, 1}, []byte{0}), wire.ErrInvalid, "image order"},
		{"bad frame image", msg([]byte{1}, []byte{7, 1, 1}, []byte{1, 8}, []byte{1, 0, 0, 0, 1, 0, 1}, []byte{0}), wire.ErrInvalid, "frame image"},
		{"huge stack count", msg([]byte{0}, []byte{0xff, 0xff, 0xff, 0x7f}), wire.ErrTooLarge, "stacks"},
		{"stack drop order", msg([]byte{0, 0, 2, 1, 'b', 1, 1, 'a', 1}), wire.ErrInvalid, "name order"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b wire.Batch
			err := b.UnmarshalBinary(tc.data)
			if err == nil {
				t.Fatalf("decoded %+v", b)
			}
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q; want %v containing %q", err, tc.is, tc.want)
			}
			if b.Stacks != nil || b.Version != 0 {
				t.Fatalf("batch not reset on error: %+v", b)
			}
		})
	}
	// The hand-made section is right when nothing is edited wrong.
	var ok wire.Batch
	if err := ok.UnmarshalBinary(msg([]byte{1}, key, []byte{2, 8, 0}, []byte{1, 5, 2, 1, 2, 1, 0, 3}, []byte{0})); err != nil {
		t.Fatal(err)
	}
	want := []wire.StackEntry{{PID: 5, Event: 2, Truncated: true, Frames: []wire.Frame{{Image: wire.KeyA, Offset: 9}, {Image: wire.KeyA, Offset: 8}}, Count: 3}}
	if !wiretest.BatchEqual(&ok, &wire.Batch{Version: wire.StackVersion, Host: "h", Seq: 1, Stacks: want}) {
		t.Fatalf("decoded %+v", ok.Stacks)
	}
}
