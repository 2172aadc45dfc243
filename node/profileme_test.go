package node

import (
	"testing"

	"dcpi/hwsim/alpha"
	"dcpi/wire"
)

// TestDriverProfileMeConserves feeds a small ProfileMe table more PCs
// than it holds, some while flushing: every record ends up summed in what
// the daemon drains, still pending, or dropped, and the drained sums are
// the records' own (retired, D-misses, stall cycles).
func TestDriverProfileMeConserves(t *testing.T) {
	cfg := DefaultDriverConfig()
	cfg.Me = MeConfig{Entries: 8, BufferEntries: 3}
	d, err := NewDriver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var want wire.MeCounts
	var recs []MeRecord
	for i := range 200 {
		r := MeRecord{Incarnation: 1, MeRecord: alpha.MeRecord{PC: 0x1000 + uint64(i%37)*4, Events: alpha.MeRetired, Head: uint32(i % 9)}}
		if i%5 == 0 {
			r.Events |= alpha.MeDMiss
			r.Stall[alpha.StallDCache] = 7
			r.LoadLatency = 30
		}
		if i%11 == 0 {
			r.Events, r.Abort = 0, alpha.TrapEvent
		}
		recs = append(recs, r)
		var s meSlot
		s.fill(&r)
		want.Add(&s.c)
	}
	var got []MeSample
	for i := 0; i < len(recs); i += 4 {
		if i == 100 {
			d.BeginFlush()
			got = d.DrainMe(got)
		}
		d.SampleMe(recs[i:min(i+4, len(recs))], 0)
		if i == 100 {
			d.EndFlush()
		}
		if i%40 == 0 {
			d.HandOff(false)
			for ok := true; ok; {
				got, ok = d.TakeFullMe(got)
			}
			d.Release()
		}
	}
	d.SampleMe(nil, 3)
	st := d.Stats()
	if st.MeSamples != 200 || st.MeLost != 3 {
		t.Fatalf("stats %+v", st)
	}
	if st.MeDropped == 0 {
		t.Fatal("no drops: the test should overflow the buffers")
	}
	pending := d.PendingMe()
	if st.MeSamples != d.MeDelivered()+pending+st.MeDropped {
		t.Fatalf("%d samples != %d delivered + %d pending + %d dropped", st.MeSamples, d.MeDelivered(), pending, st.MeDropped)
	}
	// Drain the rest: with nothing dropped the sums would equal want; with
	// drops, every drained field is at most want's and the samples add up.
	d.BeginFlush()
	got = d.DrainMe(got)
	d.EndFlush()
	d.HandOff(true)
	for ok := true; ok; {
		got, ok = d.TakeFullMe(got)
	}
	d.Release()
	var sum wire.MeCounts
	for i := range got {
		c := got[i].Counts
		if c[wire.MeSamples] != c[wire.MeRetired]+c[wire.MeAbortIntr]+c[wire.MeAbortTrap] {
			t.Fatalf("entry %+v: samples != retired + aborted", got[i])
		}
		sum.Add(&c)
	}
	if sum[wire.MeSamples]+st.MeDropped != 200 || d.PendingMe() != 0 {
		t.Fatalf("drained %d + dropped %d != 200 (pending %d)", sum[wire.MeSamples], st.MeDropped, d.PendingMe())
	}
	for f := range wire.MeFields {
		if sum[f] > want[f] {
			t.Fatalf("field %s: drained %d > fed %d", wire.MeFieldName(f), sum[f], want[f])
		}
	}
}
