package aggregator

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"dcpi/storage"
	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// stackKey names one stack's count: (PID, event, frames, truncated).
func stackKey(s *wire.StackEntry) string {
	return fmt.Sprintf("%d/%d/%v/%v", s.PID, s.Event, s.Truncated, s.Frames)
}

// mergeOne merges in with the default limits and requires one proposal
// of one valid delta, of the given batch version, with the inputs left
// alone.
func mergeOne(t *testing.T, in []*wire.Batch, version uint16) storage.Delta {
	t.Helper()
	before := make([]*wire.Batch, len(in))
	for i, b := range in {
		before[i] = wiretest.Clone(b)
	}
	ps := Merge(in, DefaultLimits())
	for i, b := range in {
		if !wiretest.BatchEqual(before[i], b) {
			t.Fatalf("Merge modified its input batch %d", i)
		}
	}
	if len(ps) != 1 || len(ps[0].Deltas) != 1 {
		t.Fatalf("%d proposals, want one of one delta", len(ps))
	}
	d := ps[0].Deltas[0]
	if err := storage.CheckDelta(d); err != nil {
		t.Fatal(err)
	}
	if d.Batch.Version != version {
		t.Errorf("delta version %d, want %d", d.Batch.Version, version)
	}
	return d
}

// TestMergeKeepsStacks: deltas carry the stacks and stack drops of their
// batches, summed per (PID, event, frames, truncated); a delta holding a
// stack batch is of the stack version; inputs are left alone.
func TestMergeKeepsStacks(t *testing.T) {
	r := testRand(t)
	var in []*wire.Batch
	for seq := uint64(1); seq <= 6; seq++ {
		o := wiretest.Options{Host: "h1", Seq: seq, Epoch: 1, MinEntries: 1, MaxEntries: 9, Images: wiretest.Keys(3), Events: 2, Offsets: 8, MaxCount: 9}
		if seq != 2 { // one flat batch among them
			o.MaxStacks = 12
		}
		in = append(in, wiretest.RandBatch(r, o))
	}
	want := map[string]uint64{}
	wantDrops := map[string]uint64{}
	for _, b := range in {
		for k := range b.Stacks {
			want[stackKey(&b.Stacks[k])] += b.Stacks[k].Count
		}
		for name, n := range b.StackDrops {
			if n != 0 {
				wantDrops[name] += n
			}
		}
	}
	d := mergeOne(t, in, wire.StackVersion)
	got := map[string]uint64{}
	for k := range d.Batch.Stacks {
		s := &d.Batch.Stacks[k]
		if _, dup := got[stackKey(s)]; dup {
			t.Fatalf("stack %s twice in the delta", stackKey(s))
		}
		got[stackKey(s)] = s.Count
	}
	if !maps.Equal(got, want) {
		t.Fatalf("delta stacks %v\nwant %v", got, want)
	}
	if len(wantDrops) > 0 && !maps.Equal(d.Batch.StackDrops, wantDrops) || len(wantDrops) == 0 && len(d.Batch.StackDrops) != 0 {
		t.Fatalf("delta stack drops %v, want %v", d.Batch.StackDrops, wantDrops)
	}
	// Stacks count against the delta limit as entries do (every batch
	// holds an entry, so none merges into its neighbour for free).
	small := Merge(in, Limits{MaxDeltaEntries: 1, MaxProposalEntries: 1})
	if len(small) != len(in) {
		t.Fatalf("with limits of 1, %d proposals for %d batches", len(small), len(in))
	}
}

// TestEntriesCountedAlike: the aggregator counts the entries it takes in
// as it counts those it proposes — stacks included — so a fetch of one
// stream's batches, all applied at once, never proposes more entries than
// it took in (the demo once reported twice as many out as in).
func TestEntriesCountedAlike(t *testing.T) {
	r := testRand(t)
	s := &MemSource{}
	var size int
	for seq := uint64(1); seq <= 6; seq++ {
		b := wiretest.RandBatch(r, wiretest.Options{Host: "h1", Seq: seq, Epoch: 1, MinEntries: 1, MaxEntries: 9,
			Images: wiretest.Keys(3), Events: 2, Offsets: 8, MaxCount: 9, MaxStacks: 12})
		size += deltaSize(b)
		s.Add(b)
	}
	a := New(Config{}, s, applyAll{}, nil)
	ds, _ := s.Fetch(context.Background(), 100, 0)
	a.Handle(context.Background(), ds)
	st := a.Stats()
	if st.EntriesIn != uint64(size) || st.EntriesOut == 0 || st.EntriesOut > st.EntriesIn {
		t.Errorf("entries in %d (batches hold %d), out %d: want in = batches and 0 < out <= in", st.EntriesIn, size, st.EntriesOut)
	}
}

// applyAll answers every delta Applied.
type applyAll struct{}

func (applyAll) Propose(_ context.Context, ds []storage.Delta, _ []*wire.ImageRecord) ([]storage.Outcome, error) {
	out := make([]storage.Outcome, len(ds))
	for i := range out {
		out[i] = storage.Applied
	}
	return out, nil
}
