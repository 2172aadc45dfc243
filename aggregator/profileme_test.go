package aggregator

import (
	"fmt"
	"maps"
	"testing"

	"dcpi/internal/hotlist"
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

// TestMergeKeepsProfileMeV2: deltas carry the pair statistics in the
// entries, the (PC, history) counts summed per key, the history drops, and
// one address hot list per instruction whose sample count is the inputs'
// sum (hotlist.Merge); the history counts still sum to the entries'
// samples, as in every input.
func TestMergeKeepsProfileMeV2(t *testing.T) {
	r := testRand(t)
	images := wiretest.Keys(2)
	var in []*wire.Batch
	wantHist := map[string]uint64{}
	wantAddrN := map[string]uint64{}
	var wantDropped, samples uint64
	for seq := uint64(1); seq <= 5; seq++ {
		b := wiretest.RandBatch(r, wiretest.Options{Host: "h1", Seq: seq, Epoch: 1, MaxEntries: 4, Images: images, Events: 1, Offsets: 6, MaxCount: 9})
		wiretest.AddMe(r, b, images, 6, 10)
		wiretest.AddMeV2(r, b)
		if err := b.Validate(); err != nil {
			t.Fatal(err)
		}
		in = append(in, b)
		for _, h := range b.MeHist {
			wantHist[fmt.Sprintf("%v/%d/%d", h.Image, h.Offset, h.History)] += h.Count
		}
		for _, a := range b.MeAddrs {
			wantAddrN[fmt.Sprintf("%v/%d", a.Image, a.Offset)] += a.List.N
		}
		for _, e := range b.Me {
			samples += e.Counts[wire.MeSamples]
		}
		wantDropped += b.MeHistDropped
	}
	d := mergeOne(t, in, wire.MeVersion)
	gotHist := map[string]uint64{}
	var histSum uint64
	for _, h := range d.Batch.MeHist {
		k := fmt.Sprintf("%v/%d/%d", h.Image, h.Offset, h.History)
		if _, dup := gotHist[k]; dup {
			t.Fatalf("history key %s twice", k)
		}
		gotHist[k] = h.Count
		histSum += h.Count
	}
	gotAddrN := map[string]uint64{}
	for _, a := range d.Batch.MeAddrs {
		gotAddrN[fmt.Sprintf("%v/%d", a.Image, a.Offset)] = a.List.N
		if err := a.List.Check(); err != nil || len(a.List.Entries) > hotlist.M {
			t.Fatalf("merged list %+v: %v", a.List, err)
		}
	}
	if !maps.Equal(gotHist, wantHist) || histSum != samples || d.Batch.MeHistDropped != wantDropped {
		t.Fatalf("history %v (sum %d, %d dropped)\nwant %v (sum %d, %d dropped)", gotHist, histSum, d.Batch.MeHistDropped, wantHist, samples, wantDropped)
	}
	if !maps.Equal(gotAddrN, wantAddrN) {
		t.Fatalf("address list samples %v, want %v", gotAddrN, wantAddrN)
	}
}
