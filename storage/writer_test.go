package storage

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"dcpi/wire"
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
			b := streamBatch(r, host, cpu, seq, 60)
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
	db, dir := openTest(t)
	m := newModel()
	for s := uint64(1); s <= 40; s++ {
		b := streamBatch(r, "h0", uint16(s%4), (s+3)/4, 50)
		m.apply(b)
		if _, err := db.ApplyBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	checkAgainstModel(t, db, m, Query{})
	checkCompactRefused(t, db, dir, m, (*DB).Compact)
}

// checkCompactRefused closes db, then checks that compact refuses it
// (ErrClosed) and the database reopened read-only (ErrReadOnly), which
// still answers as m.
func checkCompactRefused(t *testing.T, db *DB, dir string, m *model, compact func(*DB) error) {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := compact(db); !errors.Is(err, ErrClosed) {
		t.Errorf("compaction after Close: %v, want ErrClosed", err)
	}
	ro, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := compact(ro); !errors.Is(err, ErrReadOnly) {
		t.Errorf("compaction read-only: %v, want ErrReadOnly", err)
	}
	checkAgainstModel(t, ro, m, Query{})
}

// TestCompactEpoch: compacting one epoch's ranges changes no answer, for
// that epoch or the others; a closed or read-only database refuses it.
func TestCompactEpoch(t *testing.T) {
	r := testRand(t)
	db, dir := openTest(t)
	m := newModel()
	for s := uint64(1); s <= 60; s++ {
		b := streamBatch(r, fmt.Sprint("h", s%3), uint16(s%4), (s+11)/12, 50)
		m.apply(b)
		if _, err := db.ApplyBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range []uint64{1, 0, ^uint64(0)} {
		if err := db.CompactEpoch(e); err != nil {
			t.Fatalf("epoch %d: %v", e, err)
		}
		checkAgainstModel(t, db, m, Query{})
	}
	checkCompactRefused(t, db, dir, m, func(db *DB) error { return db.CompactEpoch(1) })
}

// TestEpochTablesMatchSchema: CompactEpoch covers exactly the tables
// whose keys doc.go's schema begins with the epoch.
func TestEpochTablesMatchSchema(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for _, line := range strings.Split(string(doc), "\n") {
		if t, ok := strings.CutPrefix(line, "//\t'"); ok && len(t) > 3 && strings.HasPrefix(t[1:], "' epoch:8 ") {
			want = append(want, t[0])
		}
	}
	got := slices.Clone(epochTables)
	slices.Sort(got)
	slices.Sort(want)
	if len(want) < 20 || !slices.Equal(got, want) {
		t.Errorf("epochTables %q, the schema's tables keyed by epoch first %q", got, want)
	}
}

// TestHostsTableMirrorsCounts: the 'h' table holds exactly the 'c' table's
// counts in host-major order, and a query naming hosts reads it.
func TestHostsTableMirrorsCounts(t *testing.T) {
	r := testRand(t)
	db, _ := openTest(t)
	next := map[streamID]uint64{}
	for range 30 {
		var ds []Delta
		for range 1 + r.IntN(12) {
			id := streamID{[]string{"h", "h0", "h1", "h10"}[r.IntN(4)], uint16(r.IntN(3))}
			next[id]++
			ds = append(ds, Delta{Batch: streamBatch(r, id.host, id.cpu, next[id], 40)})
		}
		if _, err := db.ApplyDeltas(ds); err != nil {
			t.Fatal(err)
		}
	}
	raw := func(table byte, decode func([]byte) (countsRow, error)) map[countsRow]uint64 {
		out := map[countsRow]uint64{}
		var prev []byte
		err := db.scanTable(table, &filter{}, func(k, v []byte) error {
			if prev != nil && bytes.Compare(prev, k) >= 0 {
				t.Fatalf("table %c: key %x after %x", table, k, prev)
			}
			prev = bytes.Clone(k)
			row, err := decode(k)
			if err != nil {
				return err
			}
			n, err := decodeCount(k, v)
			out[row] = n
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	c, h := raw(tCounts, decodeCountsKey), raw(tHosts, decodeHostsKey)
	if len(c) == 0 || !maps.Equal(c, h) {
		t.Fatalf("'c' has %d rows, 'h' %d, or they differ", len(c), len(h))
	}
	for _, tc := range []struct {
		q    Query
		want byte
	}{
		{Query{}, tFleet},
		{Query{Images: []wire.ImageKey{key(1)}}, tFleet},
		{Query{PIDs: []uint32{0}}, tCounts},
		{Query{Hosts: []string{"h1"}}, tHosts},
		{Query{Hosts: []string{"h1"}, PIDs: []uint32{0}}, tHosts},
		{Query{Hosts: manyHosts}, tCounts},
	} {
		if got, _, err := db.countsTable(newFilter(&tc.q)); err != nil || got != tc.want {
			t.Errorf("countsTable(%+v) = %c %v, want %c", tc.q, got, err, tc.want)
		}
	}
}
