package storage

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// mergeBatches merges consecutive batches of one stream and epoch into one
// delta, as an aggregator does.
func mergeBatches(bs []*wire.Batch) Delta {
	m := &wire.Batch{Version: wire.Version, Host: bs[0].Host, CPU: bs[0].CPU, Seq: bs[0].Seq, Epoch: bs[0].Epoch}
	for _, b := range bs {
		m.Entries = append(m.Entries, b.Entries...)
		m.Unknown = append(m.Unknown, b.Unknown...)
		for name, n := range b.Drops {
			if m.Drops == nil {
				m.Drops = map[string]uint64{}
			}
			m.Drops[name] += n
		}
		m.Stacks = append(m.Stacks, wiretest.CloneStacks(b.Stacks)...)
		for name, n := range b.StackDrops {
			if m.StackDrops == nil {
				m.StackDrops = map[string]uint64{}
			}
			m.StackDrops[name] += n
		}
	}
	m.Normalize()
	return Delta{Batch: m, Last: bs[len(bs)-1].Seq}
}

// modelDelta is what ApplyDeltas should do with a delta, given the model's
// applied Seqs; it applies an Applied delta's batches to the model.
func (m *model) applyDelta(d Delta, parts []*wire.Batch) Outcome {
	id := streamID{d.Batch.Host, d.Batch.CPU}
	have, last := m.applied[id], d.Last
	if last == 0 {
		last = d.Batch.Seq
	}
	switch {
	case last <= have:
		return Duplicate
	case d.Batch.Seq > have+1:
		return Gap
	case d.Batch.Seq <= have:
		return Overlap
	}
	for _, b := range parts {
		m.apply(b)
	}
	return Applied
}

// TestDeltasAgainstModel runs random calls of ApplyDeltas — in-order
// deltas of several batches, redeliveries, gaps, overlaps, consecutive
// deltas of one stream in one call, reopen — against the map model.
func TestDeltasAgainstModel(t *testing.T) {
	r := testRand(t)
	rounds := 4
	if testing.Short() {
		rounds = 1
	}
	type sentDelta struct {
		d     Delta
		parts []*wire.Batch
	}
	for round := range rounds {
		dir := filepath.Join(t.TempDir(), "db")
		db, err := Open(dir, Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		m := newModel()
		var sent []sentDelta
		for op := range 250 {
			if r.IntN(25) == 0 {
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				if db, err = Open(dir, Options{NoSync: true}); err != nil {
					t.Fatal(err)
				}
				continue
			}
			// A call of 1..5 deltas; the model's expectation is taken
			// in order over a copy of the applied Seqs, as ApplyDeltas
			// does.
			var call []sentDelta
			exp := maps.Clone(m.applied)
			for range 1 + r.IntN(5) {
				host, cpu := fmt.Sprintf("h%d", r.IntN(3)), uint16(r.IntN(2))
				if r.IntN(10) == 0 {
					cpu = wire.AllCPUs
				}
				id := streamID{host, cpu}
				first := exp[id] + 1
				switch k := r.IntN(10); {
				case k < 1 && len(sent) > 0: // redelivery
					call = append(call, sent[r.IntN(len(sent))])
					continue
				case k < 2: // gap
					first += 1 + uint64(r.IntN(3))
				case k < 3 && first > 1: // overlap
					first -= 1 + uint64(r.IntN(int(min(first-1, 3))))
				}
				n := 1 + r.IntN(4)
				epoch := uint64(r.IntN(3))
				var parts []*wire.Batch
				for s := range n {
					b := streamBatch(r, host, cpu, first+uint64(s), 8)
					b.Epoch = epoch
					parts = append(parts, b)
				}
				d := mergeBatches(parts)
				if n == 1 && r.IntN(2) == 0 {
					d.Last = 0
				}
				call = append(call, sentDelta{d, parts})
				if last := first + uint64(n) - 1; first <= exp[id]+1 && last > exp[id] {
					exp[id] = last
				}
			}
			ds := make([]Delta, len(call))
			want := make([]Outcome, len(call))
			for i, c := range call {
				ds[i] = c.d
				want[i] = m.applyDelta(c.d, c.parts)
			}
			got, err := db.ApplyDeltas(ds)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("round %d op %d: ApplyDeltas = %v %v; model %v", round, op, got, err, want)
			}
			for i, c := range call {
				if got[i] == Applied {
					sent = append(sent, c)
				}
			}
			if op%10 == 0 {
				checkAgainstModel(t, db, m, randQuery(r))
			}
		}
		checkAgainstModel(t, db, m, Query{})
		checkAgainstModel(t, db, m, Query{Hosts: []string{"h0", "h1", "h2"}})
		db.Close()
	}
}

// TestDeltasInvalid: one invalid delta fails the whole call and writes
// nothing, not even the valid deltas before it.
func TestDeltasInvalid(t *testing.T) {
	db, _ := openTest(t)
	good := batch("h0", 0, 1, 1, []wire.Entry{{Image: key(1), Count: 3}}, nil, nil)
	bad := batch("h0", 1, 1, 1, []wire.Entry{{Image: key(1), Count: 3}}, nil, nil)
	bad.Entries[0].Count = 0
	backwards := batch("h0", 2, 5, 1, []wire.Entry{{Image: key(1), Count: 3}}, nil, nil)
	for _, tc := range []struct {
		name string
		d    Delta
		err  error
	}{
		{"nil batch", Delta{}, ErrInvalid},
		{"invalid batch", Delta{Batch: bad}, wire.ErrInvalid},
		{"last before first", Delta{Batch: backwards, Last: 4}, ErrInvalid},
	} {
		_, err := db.ApplyDeltas([]Delta{{Batch: good}, tc.d})
		if !errors.Is(err, tc.err) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.err)
		}
		if s, _, _, _ := db.Totals(Query{}); s != 0 {
			t.Fatalf("%s: %d samples stored after a failed call", tc.name, s)
		}
		if a, _ := db.Applied("h0", 0); a != 0 {
			t.Fatalf("%s: applied seq %d after a failed call", tc.name, a)
		}
	}
}

// TestDeltasOutcomes walks one stream through each outcome.
func TestDeltasOutcomes(t *testing.T) {
	db, _ := openTest(t)
	d := func(first, last uint64) Delta {
		return Delta{Batch: batch("h", 0, first, 1, []wire.Entry{{Image: key(0), Count: 1}}, nil, nil), Last: last}
	}
	steps := []struct {
		ds   []Delta
		want []Outcome
		seq  uint64
	}{
		{[]Delta{d(1, 3)}, []Outcome{Applied}, 3},
		{[]Delta{d(1, 3), d(2, 2), d(3, 0)}, []Outcome{Duplicate, Duplicate, Duplicate}, 3},
		{[]Delta{d(5, 6)}, []Outcome{Gap}, 3},
		{[]Delta{d(3, 5)}, []Outcome{Overlap}, 3},
		{[]Delta{d(4, 4), d(5, 0), d(6, 9), d(8, 10), d(11, 0)}, []Outcome{Applied, Applied, Applied, Overlap, Gap}, 9},
	}
	for i, s := range steps {
		got, err := db.ApplyDeltas(s.ds)
		if err != nil || !slices.Equal(got, s.want) {
			t.Fatalf("step %d: %v %v, want %v", i, got, err, s.want)
		}
		if a, _ := db.Applied("h", 0); a != s.seq {
			t.Fatalf("step %d: applied %d, want %d", i, a, s.seq)
		}
	}
	if s, _, _, _ := db.Totals(Query{}); s != 4 {
		t.Errorf("samples %d, want 4 (deltas applied)", s)
	}
}

// TestProfileAfter: reading a profile in pages of every size, resuming
// after the last row of each page, gives the whole profile in order.
func TestProfileAfter(t *testing.T) {
	db, _ := openTest(t)
	r := testRand(t)
	for s := uint64(1); s <= 20; s++ {
		if _, err := db.ApplyBatch(streamBatch(r, fmt.Sprintf("h%d", s%3), 0, (s+2)/3, 30)); err != nil {
			t.Fatal(err)
		}
	}
	type row struct {
		k ProfileKey
		n uint64
	}
	for _, q := range []Query{{}, {Hosts: []string{"h0", "h2"}}, {PIDs: []uint32{0, 1}}, {Events: []uint8{1, 2}, Epochs: []uint64{0, 2}},
		{Hosts: []string{"h1", "h2"}, PIDs: []uint32{1, 2, 3}}, {Hosts: []string{"h1"}, Images: []wire.ImageKey{key(1), key(3)}, Events: []uint8{0}},
		{Hosts: append([]string{"h0", "h1"}, manyHosts...)}} {
		var all []row
		db.Profile(t.Context(), q, func(img wire.ImageKey, off uint64, ev uint8, host string, n uint64) error {
			all = append(all, row{ProfileKey{ev, img, off, host}, n})
			return nil
		})
		if len(all) == 0 {
			t.Fatalf("%+v: empty profile", q)
		}
		for _, page := range []int{1, 7, 100} {
			var got []row
			var after *ProfileKey
			for {
				n := 0
				errPage := errors.New("page full")
				err := db.ProfileAfter(t.Context(), q, after, func(img wire.ImageKey, off uint64, ev uint8, host string, c uint64) error {
					got = append(got, row{ProfileKey{ev, img, off, host}, c})
					if n++; n == page {
						return errPage
					}
					return nil
				})
				if err == nil {
					break
				}
				if err != errPage {
					t.Fatal(err)
				}
				after = &got[len(got)-1].k
			}
			if !slices.Equal(got, all) {
				t.Fatalf("%+v pages of %d: %d rows, want %d", q, page, len(got), len(all))
			}
		}
	}
}

// TestStreamStateKeepsAccounting: a stream's applied state carries the
// sample accounting of the batch that applied it, through merged deltas
// and version-1 batches (which carry none).
func TestStreamStateKeepsAccounting(t *testing.T) {
	db, _ := openTest(t)
	b1 := batch("h", 0, 1, 1, []wire.Entry{{Image: key(1), Offset: 4, Count: 3}}, nil, nil)
	b1.Delivered, b1.Accounted = 10, 3
	if _, err := db.ApplyDeltas([]Delta{{Batch: b1}}); err != nil {
		t.Fatal(err)
	}
	if st, err := db.Stream("h", 0); err != nil || st != (StreamState{Seq: 1, Delivered: 10, Accounted: 3}) {
		t.Fatalf("state %+v, %v", st, err)
	}
	// A delta merging seqs 2-4 carries its last batch's accounting.
	b2 := batch("h", 0, 2, 1, []wire.Entry{{Image: key(1), Offset: 8, Count: 5}}, nil, nil)
	b2.Delivered, b2.Accounted = 40, 38
	if out, err := db.ApplyDeltas([]Delta{{Batch: b2, Last: 4}}); err != nil || out[0] != Applied {
		t.Fatalf("%v %v", out, err)
	}
	if st, _ := db.Stream("h", 0); st != (StreamState{Seq: 4, Delivered: 40, Accounted: 38}) {
		t.Fatalf("state %+v after a merged delta", st)
	}
	if seq, _ := db.Applied("h", 0); seq != 4 {
		t.Fatalf("applied %d", seq)
	}
	old := batch("h", 0, 5, 1, nil, nil, map[string]uint64{"x": 1})
	old.Version = 1
	if _, err := db.ApplyDeltas([]Delta{{Batch: old}}); err != nil {
		t.Fatal(err)
	}
	if st, _ := db.Stream("h", 0); st != (StreamState{Seq: 5}) {
		t.Fatalf("state %+v after a version-1 batch", st)
	}
	if st, err := db.Stream("nobody", 3); err != nil || st != (StreamState{}) {
		t.Fatalf("unknown stream: %+v, %v", st, err)
	}
}
