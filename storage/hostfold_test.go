package storage

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// foldRuns merges per-stream deltas of one host and epoch, CPUs ascending,
// into a host fold, as an aggregator does: the first delta's header, every
// delta's counts, each other delta's run and accounting in Folded.
func foldRuns(ds []Delta) Delta {
	m := wiretest.Clone(ds[0].Batch)
	m.MeHist = slices.Clone(m.MeHist)
	f := Delta{Batch: m, Last: ds[0].last()}
	for _, d := range ds[1:] {
		b := d.Batch
		m.Version = max(m.Version, b.Version)
		m.Entries = append(m.Entries, b.Entries...)
		m.Unknown = append(m.Unknown, b.Unknown...)
		m.Drops = addNamed(m.Drops, b.Drops)
		m.Stacks = append(m.Stacks, wiretest.CloneStacks(b.Stacks)...)
		m.StackDrops = addNamed(m.StackDrops, b.StackDrops)
		m.Me = append(m.Me, b.Me...)
		m.MeUnknown += b.MeUnknown
		m.MeDrops = addNamed(m.MeDrops, b.MeDrops)
		m.MeHist = append(m.MeHist, b.MeHist...)
		m.MeHistDropped += b.MeHistDropped
		m.Start, m.End = min(m.Start, b.Start), max(m.End, b.End)
		f.Folded = append(f.Folded, StreamRun{CPU: b.CPU, First: b.Seq, Last: d.last(), Delivered: b.Delivered, Accounted: b.Accounted})
	}
	m.Normalize()
	return f
}

func addNamed(dst, src map[string]uint64) map[string]uint64 {
	for name, n := range src {
		if dst == nil {
			dst = map[string]uint64{}
		}
		dst[name] += n
	}
	return dst
}

// runBatches is a run of n batches of stream (host, cpu) from seq first in
// epoch, with cumulative accounting, some with stacks and some with
// ProfileMe sums and histories (no address lists: they are merged, not
// summed, so an aggregator keeps them out of host folds).
func runBatches(r *rand.Rand, host string, cpu uint16, first uint64, n int, epoch uint64, acct *[2]uint64) []*wire.Batch {
	var out []*wire.Batch
	for s := range n {
		b := streamBatch(r, host, cpu, first+uint64(s), 12)
		b.Epoch = epoch
		if r.IntN(3) == 0 {
			wiretest.AddMe(r, b, wiretest.Keys(5), 16, 6)
			wiretest.AddMeV2(r, b)
			b.MeAddrs = nil
		}
		if r.IntN(4) != 0 {
			acct[1] += b.Total() + uint64(r.IntN(3))
			acct[0] = acct[1] + uint64(r.IntN(5))
			b.Delivered, b.Accounted = acct[0], acct[1]
		}
		out = append(out, b)
	}
	return out
}

// mergeRun is the delta of a run of one stream, ProfileMe included.
func mergeRun(bs []*wire.Batch) Delta {
	d := Delta{Batch: wiretest.Clone(bs[0]), Last: bs[len(bs)-1].Seq}
	d.Batch.MeHist = slices.Clone(d.Batch.MeHist)
	for _, b := range bs[1:] {
		f := foldRuns([]Delta{d, {Batch: b}})
		f.Batch.Delivered, f.Batch.Accounted = b.Delivered, b.Accounted
		d.Batch = f.Batch
	}
	return d
}

// dumpKV is every key and value of db, merges resolved: what any query
// can read, byte for byte.
func dumpKV(t *testing.T, db *DB) string {
	t.Helper()
	it, err := db.newIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var b bytes.Buffer
	for it.First(); it.Valid(); it.Next() {
		fmt.Fprintf(&b, "%x=%x\n", it.Key(), it.Value())
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

var foldCPUs = []uint16{0, 1, 2, 3, wire.AllCPUs}

// TestHostFoldIdentity: ingesting runs of a host's streams as host folds
// leaves the database byte for byte as ingesting them as per-stream
// deltas does: counts, unknown samples, drops, stacks, ProfileMe sums and
// histories, and every stream's applied Seq and accounting.
func TestHostFoldIdentity(t *testing.T) {
	r := testRand(t)
	perStream, _ := openTest(t)
	folded, _ := openTest(t)
	next := map[streamID]uint64{}
	acct := map[streamID]*[2]uint64{}
	folds := 0
	for round := range 12 {
		var streams, folds1 []Delta
		for h := range 3 {
			host := fmt.Sprintf("h%d", h)
			epoch := uint64(round / 4)
			var runs []Delta
			for _, cpu := range foldCPUs {
				if r.IntN(4) == 0 {
					continue // this CPU published nothing in the fetch
				}
				id := streamID{host, cpu}
				if acct[id] == nil {
					acct[id] = new([2]uint64)
				}
				n := 1 + r.IntN(3)
				d := mergeRun(runBatches(r, host, cpu, next[id]+1, n, epoch, acct[id]))
				next[id] += uint64(n)
				runs = append(runs, d)
			}
			streams = append(streams, runs...)
			switch len(runs) {
			case 0:
			case 1:
				folds1 = append(folds1, runs[0])
			default:
				folds1 = append(folds1, foldRuns(runs))
				folds++
			}
		}
		for _, c := range []struct {
			db *DB
			ds []Delta
		}{{perStream, streams}, {folded, folds1}} {
			out, err := c.db.ApplyDeltas(c.ds)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			for i, o := range out {
				if o != Applied {
					t.Fatalf("round %d: delta %d: %v", round, i, o)
				}
			}
		}
	}
	if folds == 0 {
		t.Fatal("no host folds drawn")
	}
	want, got := dumpKV(t, perStream), dumpKV(t, folded)
	if got != want {
		t.Fatalf("host folds stored %d bytes of keys and values, per-stream deltas %d; they differ", len(got), len(want))
	}
	for id := range next {
		a, _ := perStream.Stream(id.host, id.cpu)
		b, _ := folded.Stream(id.host, id.cpu)
		if a != b || a.Seq != next[id] {
			t.Fatalf("%v: stream state %+v folded, %+v per stream, sent through %d", id, b, a, next[id])
		}
	}
}

// TestHostFoldOutcomes: a fold applies only when every run is next. With
// one run already applied, or one gapped, it is Unfold and changes
// nothing, and the runs sent separately then store everything once; all
// duplicates are Duplicate and all gaps Gap. A fold after a per-stream
// delta in the same call is judged against the call's Seqs so far.
func TestHostFoldOutcomes(t *testing.T) {
	r := testRand(t)
	reference, _ := openTest(t)
	db, _ := openTest(t)
	var acct [4][2]uint64
	run := func(cpu uint16, first uint64, n int) Delta {
		return mergeRun(runBatches(r, "h", cpu, first, n, 1, &acct[cpu]))
	}
	apply := func(db *DB, ds []Delta, want ...Outcome) {
		t.Helper()
		out, err := db.ApplyDeltas(ds)
		if err != nil || !slices.Equal(out, want) {
			t.Fatalf("ApplyDeltas = %v, %v; want %v", out, err, want)
		}
	}
	a0, a1, a2 := run(0, 1, 2), run(1, 1, 3), run(2, 1, 1)
	apply(reference, []Delta{a0, a1, a2}, Applied, Applied, Applied)

	// CPU 1's run is stored already: the fold changes nothing.
	apply(db, []Delta{a1}, Applied)
	before := dumpKV(t, db)
	apply(db, []Delta{foldRuns([]Delta{a0, a1, a2})}, Unfold)
	if dumpKV(t, db) != before {
		t.Fatal("an Unfold fold changed the database")
	}
	// The fallback: the runs alone.
	apply(db, []Delta{a0, a1, a2}, Applied, Duplicate, Applied)
	if dumpKV(t, db) != dumpKV(t, reference) {
		t.Fatal("after the fallback the database differs from the per-stream one")
	}
	// Every run stored: Duplicate.
	apply(db, []Delta{foldRuns([]Delta{a0, a1, a2})}, Duplicate)

	// CPU 2 skips a seq: Unfold, nothing written; every run past its
	// stream's next: Gap.
	b0, b1, b2 := run(0, 3, 1), run(1, 4, 2), run(2, 3, 1)
	before = dumpKV(t, db)
	apply(db, []Delta{foldRuns([]Delta{b0, b1, b2})}, Unfold)
	apply(db, []Delta{foldRuns([]Delta{run(0, 5, 1), run(1, 7, 1)})}, Gap)
	if dumpKV(t, db) != before {
		t.Fatal("a refused fold changed the database")
	}
	// A run that overlaps what is stored makes the fold Unfold, even
	// with every run overlapping.
	apply(db, []Delta{foldRuns([]Delta{run(0, 2, 2), run(1, 3, 2)})}, Unfold)

	// In one call: CPU 2's missing seq 2 first, then the fold, which the
	// call's Seqs so far make next.
	c2 := run(2, 2, 1)
	apply(db, []Delta{c2, foldRuns([]Delta{b0, b1, b2})}, Applied, Applied)
	apply(reference, []Delta{c2, b0, b1, b2}, Applied, Applied, Applied, Applied)
	if dumpKV(t, db) != dumpKV(t, reference) {
		t.Fatal("fold after a delta in one call: database differs from the per-stream one")
	}
	for cpu := range uint16(3) {
		a, _ := db.Stream("h", cpu)
		b, _ := reference.Stream("h", cpu)
		if a != b {
			t.Fatalf("cpu %d: state %+v, per stream %+v", cpu, a, b)
		}
	}
}

// TestHostFoldInvalid: a fold whose runs break a rule fails the call and
// writes nothing.
func TestHostFoldInvalid(t *testing.T) {
	db, _ := openTest(t)
	good := Delta{Batch: batch("h", 0, 1, 1, []wire.Entry{{Image: key(1), Count: 3}}, nil, nil)}
	fold := func(runs ...StreamRun) Delta {
		return Delta{Batch: batch("h", 1, 1, 1, []wire.Entry{{Image: key(1), Count: 3}}, nil, nil), Folded: runs}
	}
	v1 := fold(StreamRun{CPU: 2, First: 1, Last: 1, Delivered: 4, Accounted: 3})
	v1.Batch.Version = 1
	for _, tc := range []struct {
		name string
		d    Delta
	}{
		{"cpu repeated", fold(StreamRun{CPU: 2, First: 1, Last: 1}, StreamRun{CPU: 2, First: 1, Last: 1})},
		{"cpu before the batch's", fold(StreamRun{CPU: 0, First: 1, Last: 1})},
		{"cpu of the batch", fold(StreamRun{CPU: 1, First: 1, Last: 1})},
		{"seq 0", fold(StreamRun{CPU: 2, First: 0, Last: 1})},
		{"last before first", fold(StreamRun{CPU: 2, First: 3, Last: 2})},
		{"accounted past delivered", fold(StreamRun{CPU: 2, First: 1, Last: 1, Delivered: 3, Accounted: 4})},
		{"accounting in version 1", v1},
		{"too many", fold(make([]StreamRun, MaxFolded+1)...)},
	} {
		_, err := db.ApplyDeltas([]Delta{good, tc.d})
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", tc.name, err)
		}
		if err := CheckDelta(tc.d); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: CheckDelta: %v", tc.name, err)
		}
	}
	if s, _, _, _ := db.Totals(Query{}); s != 0 {
		t.Fatalf("%d samples stored after failed calls", s)
	}
	for cpu := range uint16(3) {
		if a, _ := db.Applied("h", cpu); a != 0 {
			t.Fatalf("cpu %d: applied seq %d after failed calls", cpu, a)
		}
	}
	if err := CheckDelta(fold(StreamRun{CPU: 2, First: 1, Last: 4, Delivered: 9, Accounted: 9}, StreamRun{CPU: wire.AllCPUs, First: 7, Last: 7})); err != nil {
		t.Fatalf("a valid fold: %v", err)
	}
}
