package wiretest_test

import (
	"slices"
	"testing"

	"dcpi/internal/testrand"
	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// TestRandBatchValid: every batch RandBatch draws validates, sits in the
// stream it was asked for and draws entries from the space it was given.
func TestRandBatchValid(t *testing.T) {
	r := testrand.New(t)
	images := wiretest.Keys(3)
	var wideEvents, narrowEntries, unknown, drops int
	for i := range 3000 {
		o := wiretest.Options{MaxEntries: i % 50}
		if i%2 == 1 {
			o.Host, o.CPU, o.Seq, o.Epoch = "alpha1", uint16(i%4), uint64(1+i), uint64(i%3)
		}
		if i%4 >= 2 {
			o.Images, o.Events, o.Offsets, o.MinEntries = images, 2, 10, o.MaxEntries
		}
		b := wiretest.RandBatch(r, o)
		if err := b.Validate(); err != nil {
			t.Fatalf("batch %d (%+v): %v", i, o, err)
		}
		if len(b.Entries) > o.MaxEntries {
			t.Fatalf("batch %d: %d entries, at most %d asked", i, len(b.Entries), o.MaxEntries)
		}
		if o.Host != "" && (b.Host != o.Host || b.CPU != o.CPU || b.Seq != o.Seq || b.Epoch != o.Epoch || b.Start != 1000*o.Seq) {
			t.Fatalf("batch %d: header %+v, asked %+v", i, b, o)
		}
		for _, e := range b.Entries {
			if o.Images == nil {
				if e.Event > 3 {
					wideEvents++
				}
				continue
			}
			narrowEntries++
			if !slices.Contains(images, e.Image) || e.Event >= 2 || e.Offset%4 != 0 || e.Offset >= 40 {
				t.Fatalf("batch %d: entry %+v outside the space asked", i, e)
			}
		}
		if o.Images != nil && o.MaxEntries > 0 && len(b.Entries) == 0 {
			t.Fatalf("batch %d: no entries of at least %d asked", i, o.MinEntries)
		}
		unknown += len(b.Unknown)
		drops += len(b.Drops)
	}
	if wideEvents == 0 || narrowEntries == 0 || unknown == 0 || drops == 0 {
		t.Errorf("draws never reached some shapes: %d wide events, %d narrow entries, %d unknown, %d drops", wideEvents, narrowEntries, unknown, drops)
	}
}

func TestBatchEqualAndClone(t *testing.T) {
	r := testrand.New(t)
	for range 200 {
		b := wiretest.RandBatch(r, wiretest.Options{MaxEntries: 20, Host: "h", Seq: 1, Images: wiretest.Keys(2)})
		c := wiretest.Clone(b)
		if !wiretest.BatchEqual(b, c) {
			t.Fatalf("clone differs:\n%+v\n%+v", b, c)
		}
		if len(c.Entries) > 0 {
			c.Entries[0].Count++
			if wiretest.BatchEqual(b, c) || b.Entries[0].Count == c.Entries[0].Count {
				t.Fatal("a clone shares its entries, or BatchEqual missed a count")
			}
		}
	}
	a := &wire.Batch{Version: wire.Version, Host: "h", Seq: 1, Entries: []wire.Entry{}, Drops: map[string]uint64{}}
	b := &wire.Batch{Version: wire.Version, Host: "h", Seq: 1}
	if !wiretest.BatchEqual(a, b) {
		t.Error("empty and nil lists differ")
	}
	if b.Seq = 2; wiretest.BatchEqual(a, b) {
		t.Error("different sequence numbers equal")
	}
}
