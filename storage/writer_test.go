package storage

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestApplyDeltasManyInOneCall: a call carrying many deltas — of several
// streams of one host (their 'c' keys meet), one stream's consecutive
// deltas, redeliveries and gaps — stores what the model says, so the
// writer's merged, summed order loses and doubles nothing.
func TestApplyDeltasManyInOneCall(t *testing.T) {
	r := testRand(t)
	db, _ := openTest(t)
	m := newModel()
	next := map[streamID]uint64{}
	for range 20 {
		var ds []Delta
		for range 1 + r.IntN(24) {
			host := []string{"h0", "h1", "h2"}[r.IntN(3)]
			cpu := uint16(r.IntN(3))
			id := streamID{host, cpu}
			seq := next[id] + 1
			switch r.IntN(8) {
			case 0:
				seq = max(1, seq-1) // redelivery (or the next)
			case 1:
				seq++ // gap
			}
			b := randBatch(r, host, cpu, seq, 60)
			ds = append(ds, Delta{Batch: b})
			if applied, _ := m.apply(b); applied {
				next[id] = seq
			}
		}
		if _, err := db.ApplyDeltas(ds); err != nil {
			t.Fatal(err)
		}
	}
	checkAgainstModel(t, db, m, Query{})
	checkAgainstModel(t, db, m, Query{Hosts: []string{"h1"}, Events: []uint8{0, 2}})
}

// TestCompact: a full compaction changes no answer; a closed or read-only
// database refuses it.
func TestCompact(t *testing.T) {
	r := testRand(t)
	dir := filepath.Join(t.TempDir(), "db")
	db, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	m := newModel()
	for s := uint64(1); s <= 40; s++ {
		b := randBatch(r, "h0", uint16(s%4), (s+3)/4, 50)
		m.apply(b)
		if _, err := db.ApplyBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	checkAgainstModel(t, db, m, Query{})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(); !errors.Is(err, ErrClosed) {
		t.Errorf("Compact after Close: %v, want ErrClosed", err)
	}
	ro, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.Compact(); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Compact read-only: %v, want ErrReadOnly", err)
	}
	checkAgainstModel(t, ro, m, Query{})
}
