package storage

import (
	"errors"
	"testing"

	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// TestStackCollisions forces every stack's hash to one value: each stack
// still gets an ID of its own (never another stack's counts), across calls,
// within one call, and after a reopen empties the cache; and when every ID
// a hash may probe is taken, the apply fails and writes nothing.
func TestStackCollisions(t *testing.T) {
	old := stackHash
	stackHash = func([]byte) uint64 { return 1<<64 - 3 } // probes wrap past 2^64-1
	t.Cleanup(func() { stackHash = old })
	db, dir := openTest(t)
	m := newModel()
	frames := func(i int) []wire.Frame {
		return []wire.Frame{{Image: key(i % 3), Offset: uint64(4 * i)}, {Image: key(0), Offset: 0x100}}
	}
	mk := func(seq uint64, from, to int) *wire.Batch {
		b := &wire.Batch{Version: wire.StackVersion, Host: "h", Seq: seq, Epoch: 1}
		for i := from; i < to; i++ {
			b.Stacks = append(b.Stacks, wire.StackEntry{Frames: frames(i), Count: uint64(i + 1)}, wire.StackEntry{Truncated: true, Frames: frames(i), Count: 1})
		}
		b.Normalize()
		return b
	}
	for seq, span := range [][2]int{{0, 5}, {3, 9}, {9, 12}} {
		b := mk(uint64(seq+1), span[0], span[1])
		m.apply(b)
		if _, err := db.ApplyBatch(b); err != nil {
			t.Fatal(err)
		}
		if seq == 1 {
			db.Close()
			var err error
			if db, err = Open(dir, Options{NoSync: true}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
		}
	}
	checkAgainstModel(t, db, m, Query{})
	checkAgainstModel(t, db, m, Query{Hosts: []string{"h"}})
	ids := map[uint64]bool{}
	db.Stacks(t.Context(), Query{}, func(st *Stack, _ uint8, _ string, _ uint64) error { ids[st.ID] = true; return nil })
	if len(ids) != 24 {
		t.Fatalf("%d stack IDs for 24 stacks", len(ids))
	}
	// 24 of the 65 IDs are taken; 42 new stacks need more.
	b := mk(4, 12, 33)
	if _, err := db.ApplyBatch(b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("apply with every ID taken: %v", err)
	}
	checkAgainstModel(t, db, m, Query{})
	if seq, _ := db.Applied("h", 0); seq != 3 {
		t.Fatalf("applied seq %d after a failed apply, want 3", seq)
	}
}

// TestStacksExactlyOnce: a redelivered batch or delta with stacks adds
// nothing, and a stack's counts and drops add up over batches.
func TestStacksExactlyOnce(t *testing.T) {
	db, _ := openTest(t)
	m := newModel()
	var sent []*wire.Batch
	r := testRand(t)
	for seq := uint64(1); seq <= 8; seq++ {
		b := wiretest.RandBatch(r, wiretest.Options{Host: "h", Seq: seq, Epoch: 1, MaxEntries: 10, MaxStacks: 30, Images: wiretest.Keys(3)})
		m.apply(b)
		sent = append(sent, b)
		if ok, err := db.ApplyBatch(b); !ok || err != nil {
			t.Fatalf("apply %d: %v %v", seq, ok, err)
		}
		for _, old := range sent {
			if ok, err := db.ApplyBatch(old); ok || err != nil {
				t.Fatalf("redelivery of %d: %v %v", old.Seq, ok, err)
			}
		}
	}
	out, err := db.ApplyDeltas([]Delta{mergeBatches(sent[2:5])})
	if err != nil || out[0] != Duplicate {
		t.Fatalf("redelivered delta: %v %v", out, err)
	}
	checkAgainstModel(t, db, m, Query{})
	checkAgainstModel(t, db, m, Query{Hosts: []string{"h"}, PIDs: []uint32{0, 1}})
	var want uint64
	for _, b := range sent {
		want += b.StackTotal()
	}
	if got, _, _ := db.StackTotals(Query{}); got != want || want == 0 {
		t.Fatalf("stack samples %d, batches hold %d", got, want)
	}
}

// TestStackRecord: a record decodes to the stack it encodes, and damaged
// records are errors, never panics.
func TestStackRecord(t *testing.T) {
	frames := []wire.Frame{{Image: key(1), Offset: 8}, {Offset: 0x120000000}, {Image: key(1), Offset: 0x40}}
	rec := encodeStack(true, frames)
	st, err := decodeStack(5, rec)
	if err != nil || !st.Truncated || st.ID != 5 || !wiretest.BatchEqual(&wire.Batch{Stacks: []wire.StackEntry{{Frames: st.Frames}}}, &wire.Batch{Stacks: []wire.StackEntry{{Frames: frames}}}) {
		t.Fatalf("decoded %+v %v", st, err)
	}
	if string(encodeStack(false, frames)) == string(rec) {
		t.Fatal("truncated and complete stacks share a record")
	}
	for i := range len(rec) {
		if _, err := decodeStack(1, rec[:i]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("record cut to %d bytes: %v", i, err)
		}
	}
	bad := map[string][]byte{"version": append([]byte{9}, rec[1:]...), "flags": append([]byte{1, 4}, rec[2:]...), "trailing": append(rec, 0)}
	for name, b := range bad {
		if _, err := decodeStack(1, b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
