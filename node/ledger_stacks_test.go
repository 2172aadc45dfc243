package node

import (
	"fmt"
	"slices"
	"testing"

	"dcpi/wire"
)

// TestLedgerStacks books stacks: frames attributed through the image maps
// (a mapped frame to its image and offset, an unmapped one to its PC),
// equal stacks merged, the PID kept only by the leaf frame's image's
// rule, stack drops reported as deltas, version 3 only for batches that
// carry stacks, and every stack image published once.
func TestLedgerStacks(t *testing.T) {
	im := NewImageMaps()
	im.ProcessEvent(Event{Kind: EventExec, PID: 42, Incarnation: 5})
	prog := fmt.Sprintf("buildid:%040x", 7)
	lib := fmt.Sprintf("buildid:%040x", 8)
	im.ProcessEvent(Event{Kind: EventMap, PID: 42, Incarnation: 5, Base: 0x120000000, Size: 0x10000, ImageID: prog, Path: "/bin/prog"})
	im.ProcessEvent(Event{Kind: EventMap, PID: 42, Incarnation: 5, Base: 0x130000000, Size: 0x10000, ImageID: lib, Path: "/lib/x"})
	cfg := DefaultConfig()
	cfg.PerProcess = []string{"/lib/x"}
	l, err := NewLedger(cfg, 1, im)
	if err != nil {
		t.Fatal(err)
	}
	a := []uint64{0x120000100, 0x120000204, 0x200000000}
	b := []uint64{0x130000010, 0x120000204}
	stacks := []StackSample{
		{PID: 5, Event: 0, Frames: a, Count: 3},
		{PID: 5, Event: 0, Frames: a, Count: 2},
		{PID: 5, Event: 0, Frames: a, Truncated: true, Count: 1},
		{PID: 5, Event: 1, Frames: b, Count: 4},
	}
	batch, newImages, err := l.DrainedStacks(0, nil, stacks, DriverStats{Samples: 10, StackSamples: 12, StackDropped: 2}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if batch == nil || batch.Version != wire.StackVersion {
		t.Fatalf("batch %+v, want version %d", batch, wire.StackVersion)
	}
	if len(newImages) != 2 {
		t.Fatalf("new images %+v, want both", newImages)
	}
	pk, _ := wire.ParseImageKey(prog)
	lk, _ := wire.ParseImageKey(lib)
	fa := []wire.Frame{{Image: pk, Offset: 0x100}, {Image: pk, Offset: 0x204}, {Offset: 0x200000000}}
	want := []wire.StackEntry{
		{PID: 0, Event: 0, Frames: fa, Count: 5},
		{PID: 0, Event: 0, Frames: fa, Truncated: true, Count: 1},
		{PID: 42, Event: 1, Frames: []wire.Frame{{Image: lk, Offset: 0x10}, {Image: pk, Offset: 0x204}}, Count: 4},
	}
	if !slices.EqualFunc(batch.Stacks, want, func(x, y wire.StackEntry) bool {
		return x.PID == y.PID && x.Event == y.Event && x.Truncated == y.Truncated && x.Count == y.Count && slices.Equal(x.Frames, y.Frames)
	}) {
		t.Fatalf("stacks\n%+v\nwant\n%+v", batch.Stacks, want)
	}
	if batch.StackDrops[wire.DropStackOverflowFull] != 2 || batch.StackTotal() != 10 {
		t.Fatalf("stack drops %v, total %d", batch.StackDrops, batch.StackTotal())
	}
	// A flat-only drain: version 2, no stack drops repeated.
	batch, _, err = l.DrainedStacks(0, []Entry{{PID: 5, PC: 0x120000100, Count: 1}}, nil, DriverStats{Samples: 11, StackSamples: 12, StackDropped: 2}, 200)
	if err != nil {
		t.Fatal(err)
	}
	if batch.Version != wire.FlatVersion || len(batch.Stacks) != 0 || len(batch.StackDrops) != 0 {
		t.Fatalf("flat-only batch: version %d, %d stacks, drops %v", batch.Version, len(batch.Stacks), batch.StackDrops)
	}
	// Stack drops going backwards are refused.
	if _, _, err := l.DrainedStacks(0, nil, nil, DriverStats{Samples: 11, StackDropped: 1}, 300); err == nil {
		t.Fatal("stack drops going back: no error")
	}
}
