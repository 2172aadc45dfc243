package storage

import (
	"math"
	"reflect"
	"testing"

	"dcpi/internal/hotlist"
	"dcpi/wire"
)

// valueRecords builds, for several hosts, records whose hot lists sample
// known streams: one load whose latency is 2 (a hit) 70% of the time and
// 60 (memory) otherwise, offered host by host and record by record into
// lists of different τ. It returns the records and the exact counts.
func valueRecords(t *testing.T, hosts []string, perRecord int) ([]*wire.ValuesRecord, map[uint64]uint64) {
	r := testRand(t)
	img := wire.MustParseImageKey("sha256:0101010101010101010101010101010101010101010101010101010101010101")
	exact := map[uint64]uint64{}
	var out []*wire.ValuesRecord
	for _, h := range hosts {
		for seq := uint64(1); seq <= 3; seq++ {
			var l hotlist.List
			n := perRecord * (1 + r.IntN(4))
			for range n {
				v := uint64(2)
				if r.Float64() < 0.3 {
					v = 60
				}
				if r.Float64() < 0.05 {
					v = 100 + r.Uint64N(40) // a tail of rare latencies pushes τ up
				}
				exact[v]++
				l.Offer(v, r)
			}
			out = append(out, &wire.ValuesRecord{Version: 1, Host: h, Epoch: 1, Seq: seq, Module: "loadlat",
				Stats: wire.ValueStats{Interrupts: uint64(n), Completed: uint64(n), Values: uint64(n)},
				Lists: []wire.ValueList{{Image: img, Offset: 0x40, Kind: 1, List: l}}})
		}
	}
	return out, exact
}

// TestValuesApplyMergesUnbiased applies records of three hosts and checks
// the fleet-wide list against the exact counts (within 6σ of its binomial
// spread), per-host queries, redeliveries, and that two databases
// applying the same records store the same lists (replicas agree).
func TestValuesApplyMergesUnbiased(t *testing.T) {
	hosts := []string{"a", "b", "c"}
	recs, exact := valueRecords(t, hosts, 2000)
	db, _ := openTest(t)
	db2, _ := openTest(t)
	for _, r := range recs {
		for _, d := range []*DB{db, db2} {
			ok, err := d.ApplyValues(r)
			if err != nil || !ok {
				t.Fatalf("apply %s/%d: %v, %v", r.Host, r.Seq, ok, err)
			}
		}
	}
	if ok, err := db.ApplyValues(recs[0]); ok || err != nil {
		t.Fatalf("redelivery applied: %v, %v", ok, err)
	}
	fleet, err := db.ValueLists(t.Context(), ValueQuery{Epochs: []uint64{1}})
	if err != nil || len(fleet) != 1 {
		t.Fatalf("fleet lists: %v, %v", fleet, err)
	}
	fleet2, _ := db2.ValueLists(t.Context(), ValueQuery{Epochs: []uint64{1}})
	if !reflect.DeepEqual(fleet, fleet2) {
		t.Fatal("two databases applying the same records store different lists")
	}
	l := fleet[0].List
	var total uint64
	for _, c := range exact {
		total += c
	}
	if l.N != total {
		t.Fatalf("fleet list N %d, exact %d", l.N, total)
	}
	tau := float64(l.Tau())
	for _, v := range []uint64{2, 60} {
		n, est := float64(exact[v]), float64(l.Estimate(v))
		sd := math.Sqrt(n * tau)
		if math.Abs(est-n) > 6*sd+tau {
			t.Errorf("value %d: estimate %.0f, exact %.0f (τ %.0f)", v, est, n, tau)
		}
	}
	one, err := db.ValueLists(t.Context(), ValueQuery{Epochs: []uint64{1}, Hosts: []string{"b"}})
	if err != nil || len(one) != 1 || one[0].List.N >= l.N {
		t.Fatalf("host b: %v, %v", one, err)
	}
	mods, st, err := db.ValueTotals(t.Context(), ValueQuery{Epochs: []uint64{1}})
	if err != nil || len(mods) != 1 || mods[0] != "loadlat" || st.Interrupts != total || !st.Conserved() {
		t.Fatalf("totals: %v %+v %v", mods, st, err)
	}
	if _, err := db.ApplyValues(&wire.ValuesRecord{Version: 1, Host: "a"}); err == nil {
		t.Fatal("an invalid record applied")
	}
}

// TestValuesApplyWithOutcomes: a merged run is decided against the host's
// last applied Seq as a delta is — Applied, Duplicate (changes nothing),
// Gap (an earlier record missing: nothing applied), Overlap — across
// epochs, since a host numbers its records once over all of them; the
// Meta's writes go in whatever the outcome.
func TestValuesApplyWithOutcomes(t *testing.T) {
	recs, _ := valueRecords(t, []string{"a"}, 50) // seqs 1..3 of host a, epoch 1
	db, _ := openTest(t)
	totals := func() wire.ValueStats {
		_, s, err := db.ValueTotals(t.Context(), ValueQuery{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	apply := func(first uint64, r *wire.ValuesRecord, want Outcome) {
		t.Helper()
		var m Meta
		m.SetLogIndex(uint64(100*first + r.Seq))
		o, err := db.ApplyValuesWith(first, r, &m)
		if err != nil || o != want {
			t.Fatalf("apply %d..%d: %v, %v; want %v", first, r.Seq, o, err, want)
		}
		if idx, err := db.LogIndex(); err != nil || idx != uint64(100*first+r.Seq) {
			t.Fatalf("apply %d..%d (%v): log index %d, %v: the meta was not written", first, r.Seq, o, idx, err)
		}
	}
	apply(2, recs[1], Gap)
	if s := totals(); s.Interrupts != 0 {
		t.Fatalf("a gap applied %d interrupts", s.Interrupts)
	}
	apply(1, recs[0], Applied)
	after1 := totals()
	apply(1, recs[0], Duplicate)
	if s := totals(); s.Interrupts != after1.Interrupts {
		t.Fatalf("a duplicate changed the accounting: %d, then %d", after1.Interrupts, s.Interrupts)
	}
	// recs[2] standing for the run 1..3: record 1 is applied already.
	apply(1, recs[2], Overlap)
	apply(2, recs[1], Applied)
	apply(3, recs[2], Applied)
	// The host's next record, in epoch 2, follows on from 3.
	next := *recs[0]
	next.Epoch, next.Seq = 2, 4
	apply(4, &next, Applied)
	if seq, err := db.ValuesApplied("a"); err != nil || seq != 4 {
		t.Fatalf("ValuesApplied: %d, %v; want 4", seq, err)
	}
	want := recs[0].Stats.Interrupts + recs[1].Stats.Interrupts + recs[2].Stats.Interrupts + next.Stats.Interrupts
	if s := totals(); s.Interrupts != want {
		t.Fatalf("stored %d interrupts, want %d", s.Interrupts, want)
	}
	if _, s, _ := db.ValueTotals(t.Context(), ValueQuery{Epochs: []uint64{2}}); s.Interrupts != next.Stats.Interrupts {
		t.Fatalf("epoch 2 holds %d interrupts, want %d", s.Interrupts, next.Stats.Interrupts)
	}
	for _, first := range []uint64{0, 5} {
		if _, err := db.ApplyValuesWith(first, &next, nil); err == nil {
			t.Errorf("run %d..%d accepted", first, next.Seq)
		}
	}
}
