package transport

import (
	"testing"

	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// TestTombstoneKeepsProfileMe: a batch replaced by its tombstone counts
// its ProfileMe samples (entries and unknown) under the same reason in
// MeDrops, beside the ProfileMe drops it already carried, so the
// ProfileMe view's conservation survives the transport's drops too.
func TestTombstoneKeepsProfileMe(t *testing.T) {
	r := testRand(t)
	keys := wiretest.Keys(2)
	b := streamBatch(r, "alpha0", 1, 0, 1, 0, keys)
	wiretest.AddMe(r, b, keys, 8, 20)
	b.Me = append(b.Me[:0], wire.MeEntry{Image: keys[0], Offset: 4, Counts: wire.MeCounts{wire.MeSamples: 5, wire.MeRetired: 5}})
	b.MeUnknown = 2
	b.MeDrops = map[string]uint64{wire.DropMeHardwareFull: 3}
	it, err := newBatchItem(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := it.tombstone(wire.DropBufferFull); !ok {
		t.Fatal("no tombstone")
	}
	var got wire.Batch
	if err := got.UnmarshalBinary(it.data); err != nil {
		t.Fatal(err)
	}
	if len(got.Me) != 0 || got.MeUnknown != 0 || got.MeDrops[wire.DropBufferFull] != 7 || got.MeDrops[wire.DropMeHardwareFull] != 3 {
		t.Fatalf("tombstone ProfileMe: %d entries, %d unknown, drops %v; want none, 0, {%s 7, %s 3}",
			len(got.Me), got.MeUnknown, got.MeDrops, wire.DropBufferFull, wire.DropMeHardwareFull)
	}
}
