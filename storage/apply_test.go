package storage

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"

	"dcpi/wire"
)

func TestApplySemantics(t *testing.T) {
	db, _ := openTest(t)
	e := func(img, off, n int) wire.Entry {
		return wire.Entry{Image: key(img), Offset: uint64(off), Count: uint64(n)}
	}
	b1 := batch("alpha1", 0, 1, 7, []wire.Entry{e(0, 0, 5), e(0, 4, 2)}, []wire.UnknownEntry{{PID: 9, PC: 0x10, Count: 1}}, map[string]uint64{wire.DropOverflowFull: 3})
	b2 := batch("alpha1", 0, 2, 7, []wire.Entry{e(0, 0, 1)}, nil, nil)
	b4 := batch("alpha1", 0, 4, 7, []wire.Entry{e(1, 0, 100)}, nil, nil)
	other := batch("alpha1", 1, 1, 7, []wire.Entry{e(0, 0, 10)}, nil, nil) // another CPU: its own stream

	steps := []struct {
		b       *wire.Batch
		applied bool
		err     error
	}{
		{b1, true, nil},
		{b1, false, nil}, // redelivery
		{b4, false, ErrSeqGap},
		{b2, true, nil},
		{b1, false, nil},
		{other, true, nil},
		{b2, false, nil},
	}
	for i, s := range steps {
		applied, err := db.ApplyBatch(s.b)
		if applied != s.applied || !errors.Is(err, s.err) {
			t.Fatalf("step %d (cpu %d seq %d): applied %v err %v; want %v %v", i, s.b.CPU, s.b.Seq, applied, err, s.applied, s.err)
		}
	}
	got := readProfile(t, db, Query{})
	want := map[profKey]uint64{
		{key(0), 0, 0, ""}: 5 + 1 + 10,
		{key(0), 4, 0, ""}: 2,
	}
	if !maps.Equal(got, want) {
		t.Errorf("profile %v, want %v", got, want)
	}
	samples, unknown, drops, err := db.Totals(Query{})
	if err != nil || samples != 18 || unknown != 1 || drops[wire.DropOverflowFull] != 3 {
		t.Errorf("Totals = %d %d %v %v; want 18 1 overflow_full:3", samples, unknown, drops, err)
	}
	for _, c := range []struct {
		cpu  uint16
		want uint64
	}{{0, 2}, {1, 1}, {2, 0}} {
		if got, err := db.Applied("alpha1", c.cpu); got != c.want || err != nil {
			t.Errorf("Applied(cpu %d) = %d %v, want %d", c.cpu, got, err, c.want)
		}
	}
	hosts, err := db.Hosts()
	if err != nil || len(hosts) != 1 || hosts[0] != "alpha1" {
		t.Errorf("Hosts = %v %v", hosts, err)
	}
}

func TestApplyRejectsInvalid(t *testing.T) {
	db, _ := openTest(t)
	bad := []*wire.Batch{
		{Version: wire.Version, Host: "h", Seq: 0},
		{Version: wire.Version + 1, Host: "h", Seq: 1},
		{Version: wire.Version, Host: "", Seq: 1},
		{Version: wire.Version, Host: "h", Seq: 1, Entries: []wire.Entry{{Image: key(1), Count: 1}, {Image: key(0), Count: 1}}},
		{Version: wire.Version, Host: "h", Seq: 1, Entries: []wire.Entry{{Count: 1}}},
		nil,
	}
	for i, b := range bad {
		if applied, err := db.ApplyBatch(b); err == nil || applied {
			t.Errorf("batch %d: applied %v err %v", i, applied, err)
		}
	}
	if n, _, _, _ := db.Totals(Query{}); n != 0 {
		t.Errorf("invalid batches stored %d samples", n)
	}
	if s, _ := db.Applied("h", 0); s != 0 {
		t.Errorf("applied seq %d after invalid batches", s)
	}
}

// TestApplyBatchesAtomic: a gap anywhere in a group writes nothing.
func TestApplyBatchesAtomic(t *testing.T) {
	db, _ := openTest(t)
	ent := []wire.Entry{{Image: key(0), Count: 1}}
	group := []*wire.Batch{
		batch("a", 0, 1, 0, ent, nil, nil),
		batch("b", 0, 1, 0, ent, nil, nil),
		batch("a", 0, 2, 0, ent, nil, nil),
		batch("a", 0, 1, 0, ent, nil, nil), // redelivery inside the group
		batch("b", 0, 3, 0, ent, nil, nil), // gap
	}
	if _, err := db.ApplyBatches(group); !errors.Is(err, ErrSeqGap) {
		t.Fatalf("err %v, want gap", err)
	}
	if n, _, _, _ := db.Totals(Query{}); n != 0 {
		t.Fatalf("failed group stored %d samples", n)
	}
	applied, err := db.ApplyBatches(group[:4])
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(applied) != "[true true true false]" {
		t.Errorf("applied %v", applied)
	}
	if n, _, _, _ := db.Totals(Query{}); n != 3 {
		t.Errorf("stored %d samples, want 3", n)
	}
	if s, _ := db.Applied("a", 0); s != 2 {
		t.Errorf("applied seq %d, want 2", s)
	}
}

// TestApplyConcurrent: many goroutines deliver overlapping copies of many
// streams at once; every batch counts exactly once. Run with -race.
func TestApplyConcurrent(t *testing.T) {
	db, _ := openTest(t)
	r := testRand(t)
	const hosts, cpus, perStream, copies = 4, 3, 30, 3
	streams := map[streamID][]*wire.Batch{}
	m := newModel()
	for h := range hosts {
		for c := range cpus {
			id := streamID{fmt.Sprintf("host%d", h), uint16(c)}
			for s := 1; s <= perStream; s++ {
				b := streamBatch(r, id.host, id.cpu, uint64(s), 40)
				streams[id] = append(streams[id], b)
				m.apply(b)
			}
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	appliedCount := map[streamID]int{}
	errs := make(chan error, hosts*cpus*copies)
	for id, bs := range streams {
		for range copies {
			// Each copy delivers its stream in order, as a redelivering
			// consumer does, so it never sees a gap.
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, b := range bs {
					applied, err := db.ApplyBatch(b)
					if err != nil {
						errs <- err
						return
					}
					if applied {
						mu.Lock()
						appliedCount[id]++
						mu.Unlock()
					}
				}
			}()
		}
	}
	// Readers race the writers.
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if _, _, _, err := db.Totals(Query{}); err != nil {
					errs <- err
					return
				}
				if err := db.Profile(t.Context(), Query{Events: []uint8{1}}, func(wire.ImageKey, uint64, uint8, string, uint64) error { return nil }); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for id, n := range appliedCount {
		if n != perStream {
			t.Errorf("stream %v applied %d times, want %d", id, n, perStream)
		}
	}
	checkAgainstModel(t, db, m, Query{})
	checkAgainstModel(t, db, m, Query{Hosts: []string{"host0", "host2"}})
}

// TestReopen: what was applied is there after close and reopen, including
// the applied sequence numbers that make redelivery harmless.
func TestReopen(t *testing.T) {
	db, dir := openTest(t)
	r := testRand(t)
	m := newModel()
	for s := uint64(1); s <= 20; s++ {
		b := streamBatch(r, "h", 0, s, 50)
		m.apply(b)
		if _, err := db.ApplyBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	last := streamBatch(r, "h", 0, 20, 50)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ApplyBatch(last); !errors.Is(err, ErrClosed) {
		t.Errorf("apply after close: %v", err)
	}
	db2, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	checkAgainstModel(t, db2, m, Query{})
	if applied, err := db2.ApplyBatch(last); applied || err != nil {
		t.Errorf("redelivery after reopen: applied %v err %v", applied, err)
	}
	checkAgainstModel(t, db2, m, Query{})
}
