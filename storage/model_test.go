package storage

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"dcpi/wire"
)

// checkAgainstModel compares every read of q with the model.
func checkAgainstModel(t *testing.T, db *DB, m *model, q Query) {
	t.Helper()
	if got, want := readProfile(t, db, q), m.profile(q); !maps.Equal(got, want) {
		t.Fatalf("Profile(%+v): %d rows, model %d\n got %v\nwant %v", q, len(got), len(want), got, want)
	}
	s, u, d, err := db.Totals(q)
	if err != nil {
		t.Fatalf("Totals(%+v): %v", q, err)
	}
	ws, wu, wd := m.totals(q)
	if s != ws || u != wu || !maps.Equal(d, wd) {
		t.Fatalf("Totals(%+v) = %d %d %v; model %d %d %v", q, s, u, d, ws, wu, wd)
	}
	if got, want := readStacks(t, db, q), m.stackProfile(q); !maps.Equal(got, want) {
		t.Fatalf("Stacks(%+v): %d rows, model %d\n got %v\nwant %v", q, len(got), len(want), got, want)
	}
	ss, sd, err := db.StackTotals(q)
	if err != nil {
		t.Fatalf("StackTotals(%+v): %v", q, err)
	}
	if wss, wsd := m.stackTotals(q); ss != wss || !maps.Equal(sd, wsd) {
		t.Fatalf("StackTotals(%+v) = %d %v; model %d %v", q, ss, sd, wss, wsd)
	}
	// Records: the raw rows.
	got := map[Record]uint64{}
	var prev *Record
	err = db.Records(q, func(r Record) error {
		if prev != nil && !recordLess(*prev, r) {
			t.Errorf("Records order: %+v after %+v", r, *prev)
		}
		rc := r
		prev = &rc
		n := r.Count
		r.Count = 0
		got[r] = n
		return nil
	})
	if err != nil {
		t.Fatalf("Records(%+v): %v", q, err)
	}
	want := map[Record]uint64{}
	for r, n := range m.counts {
		if in(q.Epochs, r.Epoch) && in(q.Events, r.Event) && in(q.Hosts, r.Host) && in(q.Images, r.Image) && in(q.PIDs, r.PID) && hpin(q, r.Host, r.PID) {
			want[r] = n
		}
	}
	if !maps.Equal(got, want) {
		t.Fatalf("Records(%+v): %d rows, model %d", q, len(got), len(want))
	}
	for id, seq := range m.applied {
		if got, err := db.Applied(id.host, id.cpu); got != seq || err != nil {
			t.Fatalf("Applied(%v) = %d %v, model %d", id, got, err, seq)
		}
	}
}

func recordLess(a, b Record) bool {
	ka := fmt.Sprintf("%020d %03d %x %020d %s\x00 %010d", a.Epoch, a.Event, a.Image[:], a.Offset, a.Host, a.PID)
	kb := fmt.Sprintf("%020d %03d %x %020d %s\x00 %010d", b.Epoch, b.Event, b.Image[:], b.Offset, b.Host, b.PID)
	return ka < kb
}

// randQuery picks a query over the small key space streamBatch uses; lists
// are sometimes nil (all), sometimes empty (none), sometimes a subset.
func randQuery(r *rand.Rand) Query {
	var q Query
	pick := func() int { return r.IntN(6) } // 0-3: nil, 4: empty, 5: subset
	switch pick() {
	case 4:
		q.Epochs = []uint64{}
	case 5:
		q.Epochs = []uint64{uint64(r.IntN(3)), uint64(r.IntN(4))}
	}
	switch pick() {
	case 4:
		q.Events = []uint8{}
	case 5:
		q.Events = []uint8{uint8(r.IntN(3)), uint8(r.IntN(3)), 200}
	}
	switch pick() {
	case 4:
		q.Hosts = []string{}
	case 5:
		q.Hosts = []string{fmt.Sprintf("h%d", r.IntN(3)), "nosuchhost"}
		if r.IntN(2) == 0 {
			q.Hosts = append(q.Hosts, fmt.Sprintf("h%d", r.IntN(3)), "h") // "h" sorts before "h0"
		}
		if r.IntN(4) == 0 {
			// More (epoch, host) ranges than the 'h' table is read
			// for at once: the query reads 'c'.
			q.Hosts = append(q.Hosts, manyHosts...)
		}
	}
	switch pick() {
	case 4:
		q.Images = []wire.ImageKey{}
	case 5:
		q.Images = []wire.ImageKey{key(r.IntN(5)), key(r.IntN(6)), key(99)}
	}
	switch pick() {
	case 4:
		q.PIDs = []uint32{}
	case 5:
		q.PIDs = []uint32{uint32(r.IntN(4))}
	}
	if r.IntN(5) == 0 {
		// The process selectors' per-host PIDs.
		q.HostPIDs = map[string][]uint32{}
		for range r.IntN(4) {
			h := fmt.Sprintf("h%d", r.IntN(3))
			q.HostPIDs[h] = append(q.HostPIDs[h], uint32(r.IntN(4)))
		}
	}
	return q
}

// manyHosts are absent hosts enough to send a query from the 'h' table
// to 'c'.
var manyHosts = func() []string {
	var hs []string
	for i := range maxHostCursors + 1 {
		hs = append(hs, fmt.Sprintf("absent%03d", i))
	}
	return hs
}()

// checkPagesAgainstModel reads q's profile with ProfileAfter in pages of
// size rows, each resuming after the last row of the one before, and
// compares the rows, their order and their number with the model.
func checkPagesAgainstModel(t *testing.T, db *DB, m *model, q Query, size int) {
	t.Helper()
	got := map[profKey]uint64{}
	var last *ProfileKey
	errPage := errors.New("page full")
	for pages := 0; ; pages++ {
		if pages > len(m.counts)+1 {
			t.Fatalf("ProfileAfter(%+v) in pages of %d: no end after %d pages", q, size, pages)
		}
		n := 0
		after := last
		err := db.ProfileAfter(t.Context(), q, after, func(img wire.ImageKey, off uint64, ev uint8, host string, c uint64) error {
			k := profKey{img, off, ev, host}
			if _, dup := got[k]; dup {
				t.Fatalf("ProfileAfter(%+v, %+v) in pages of %d: %+v twice", q, after, size, k)
			}
			if last != nil && !profLess(profKey{last.Image, last.Offset, last.Event, last.Host}, k) {
				t.Fatalf("ProfileAfter(t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), t.Context(), %+v) in pages of %d: %+v after %+v", q, size, k, *last)
			}
			got[k] = c
			last = &ProfileKey{ev, img, off, host}
			if n++; n == size {
				return errPage
			}
			return nil
		})
		if err == nil {
			break
		}
		if err != errPage {
			t.Fatalf("ProfileAfter(%+v): %v", q, err)
		}
	}
	if want := m.profile(q); !maps.Equal(got, want) {
		t.Fatalf("ProfileAfter(%+v) in pages of %d: %d rows, model %d", q, size, len(got), len(want))
	}
}

// TestRandomizedAgainstModel runs random operation sequences (apply in
// order, redeliver, skip ahead, apply groups, close and reopen, checkpoint)
// against the database and a map, comparing random queries as it goes.
func TestRandomizedAgainstModel(t *testing.T) {
	r := testRand(t)
	rounds := 6
	if testing.Short() {
		rounds = 2
	}
	for round := range rounds {
		dir := filepath.Join(t.TempDir(), "db")
		db, err := Open(dir, Options{NoSync: r.IntN(2) == 0})
		if err != nil {
			t.Fatal(err)
		}
		m := newModel()
		var sent []*wire.Batch
		for op := range 300 {
			host, cpu := fmt.Sprintf("h%d", r.IntN(3)), uint16(r.IntN(2))
			if r.IntN(10) == 0 {
				cpu = wire.AllCPUs
			}
			next := m.applied[streamID{host, cpu}] + 1
			switch k := r.IntN(20); {
			case k < 12: // in order
				b := streamBatch(r, host, cpu, next, 30)
				sent = append(sent, b)
				wantApplied, _ := m.apply(b)
				if applied, err := db.ApplyBatch(b); err != nil || applied != wantApplied {
					t.Fatalf("round %d op %d: apply: %v %v", round, op, applied, err)
				}
			case k < 15 && len(sent) > 0: // redelivery of an old batch
				b := sent[r.IntN(len(sent))]
				if applied, err := db.ApplyBatch(b); err != nil || applied {
					t.Fatalf("round %d op %d: redelivery: %v %v", round, op, applied, err)
				}
			case k < 16: // gap
				b := streamBatch(r, host, cpu, next+1+uint64(r.IntN(3)), 5)
				if _, err := db.ApplyBatch(b); !errors.Is(err, ErrSeqGap) {
					t.Fatalf("round %d op %d: gap: %v", round, op, err)
				}
			case k < 18: // a group
				var group []*wire.Batch
				exp := map[streamID]uint64{}
				for range 1 + r.IntN(4) {
					h, c := fmt.Sprintf("h%d", r.IntN(3)), uint16(r.IntN(2))
					id := streamID{h, c}
					if _, ok := exp[id]; !ok {
						exp[id] = m.applied[id]
					}
					exp[id]++
					group = append(group, streamBatch(r, h, c, exp[id], 10))
				}
				if _, err := db.ApplyBatches(group); err != nil {
					t.Fatalf("round %d op %d: group: %v", round, op, err)
				}
				for _, b := range group {
					m.apply(b)
					sent = append(sent, b)
				}
			case k < 19: // close and reopen
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				if db, err = Open(dir, Options{}); err != nil {
					t.Fatal(err)
				}
			default: // read from a checkpoint
				cp := filepath.Join(t.TempDir(), fmt.Sprintf("cp%d-%d", round, op))
				if err := db.Checkpoint(cp); err != nil {
					t.Fatal(err)
				}
				cdb, err := Open(cp, Options{ReadOnly: true})
				if err != nil {
					t.Fatal(err)
				}
				checkAgainstModel(t, cdb, m, randQuery(r))
				cdb.Close()
			}
			if op%10 == 0 {
				checkAgainstModel(t, db, m, randQuery(r))
			}
			if op%30 == 0 {
				q := randQuery(r)
				if q.Hosts == nil && r.IntN(2) == 0 {
					q.Hosts = []string{"h0", "h2"}
				}
				checkPagesAgainstModel(t, db, m, q, 1+r.IntN(40))
			}
		}
		checkAgainstModel(t, db, m, Query{})
		checkAgainstModel(t, db, m, Query{Hosts: []string{"h0", "h1", "h2"}})
		checkAgainstModel(t, db, m, Query{Hosts: append([]string{"h0", "h1", "h2"}, manyHosts...)})
		checkPagesAgainstModel(t, db, m, Query{Hosts: []string{"h0", "h1", "h2"}}, 1+r.IntN(10))
		db.Close()
	}
}

// TestCheckpoint: a checkpoint opens as a DB with identical contents, and
// goes on being identical to nothing written after it.
func TestCheckpoint(t *testing.T) {
	db, _ := openTest(t)
	r := testRand(t)
	m := newModel()
	for s := uint64(1); s <= 30; s++ {
		b := streamBatch(r, "h0", uint16(s%2), (s+1)/2, 40)
		m.apply(b)
		if _, err := db.ApplyBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	rec := &wire.ImageRecord{Version: wire.Version, Key: key(1), Path: "/bin/x", Symbols: []wire.Symbol{{Name: "main", Addr: 4, Size: 8}}}
	if err := db.PutImage(rec); err != nil {
		t.Fatal(err)
	}
	if err := db.PutEpoch(Epoch{Number: 1, State: EpochSealed}); err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "cp")
	if err := db.Checkpoint(cp); err != nil {
		t.Fatal(err)
	}
	if err := db.Checkpoint(cp); err == nil {
		t.Error("checkpoint over an existing directory succeeded")
	}
	// Writes after the checkpoint do not reach it.
	if _, err := db.ApplyBatch(streamBatch(r, "h9", 0, 1, 10)); err != nil {
		t.Fatal(err)
	}
	cdb, err := Open(cp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cdb.Close()
	checkAgainstModel(t, cdb, m, Query{})
	checkAgainstModel(t, cdb, m, Query{Hosts: []string{"h0", "h9"}})
	got, err := cdb.Image(t.Context(), key(1))
	if err != nil || !reflect.DeepEqual(got, rec) {
		t.Errorf("image in checkpoint: %+v %v", got, err)
	}
	eps, err := cdb.Epochs()
	if err != nil || len(eps) != 1 || eps[0].State != EpochSealed {
		t.Errorf("epochs in checkpoint: %+v %v", eps, err)
	}
	if hosts, _ := cdb.Hosts(); !slices.Equal(hosts, []string{"h0"}) {
		t.Errorf("hosts in checkpoint: %v", hosts)
	}
}
