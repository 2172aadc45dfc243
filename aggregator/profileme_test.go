package aggregator

import (
	"fmt"
	"maps"
	"testing"

	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// TestMergeKeepsProfileMe: deltas carry the ProfileMe entries, unknown
// samples and drops of their batches, summed per (image, offset, PID)
// and field; a delta holding a ProfileMe batch is of the ProfileMe
// version; inputs are left alone.
func TestMergeKeepsProfileMe(t *testing.T) {
	r := testRand(t)
	images := wiretest.Keys(3)
	var in []*wire.Batch
	want := map[string]wire.MeCounts{}
	wantDrops := map[string]uint64{}
	var wantUnknown uint64
	for seq := uint64(1); seq <= 6; seq++ {
		b := wiretest.RandBatch(r, wiretest.Options{Host: "h1", Seq: seq, Epoch: 1, MaxEntries: 9, Images: images, Events: 2, Offsets: 8, MaxCount: 9})
		if seq != 3 { // one flat batch among them
			wiretest.AddMe(r, b, images, 8, 12)
		}
		in = append(in, b)
		for _, e := range b.Me {
			k := fmt.Sprintf("%v/%d/%d", e.Image, e.Offset, e.PID)
			c := want[k]
			c.Add(&e.Counts)
			want[k] = c
		}
		wantUnknown += b.MeUnknown
		for name, n := range b.MeDrops {
			wantDrops[name] += n
		}
	}
	d := mergeOne(t, in, wire.MeVersion)
	got := map[string]wire.MeCounts{}
	for _, e := range d.Batch.Me {
		k := fmt.Sprintf("%v/%d/%d", e.Image, e.Offset, e.PID)
		if _, dup := got[k]; dup {
			t.Fatalf("ProfileMe entry %s twice in the delta", k)
		}
		got[k] = e.Counts
	}
	if !maps.Equal(got, want) {
		t.Fatalf("delta ProfileMe entries %v\nwant %v", got, want)
	}
	if d.Batch.MeUnknown != wantUnknown {
		t.Errorf("delta MeUnknown %d, want %d", d.Batch.MeUnknown, wantUnknown)
	}
	if len(wantDrops)+len(d.Batch.MeDrops) > 0 && !maps.Equal(d.Batch.MeDrops, wantDrops) {
		t.Errorf("delta ProfileMe drops %v, want %v", d.Batch.MeDrops, wantDrops)
	}
}
