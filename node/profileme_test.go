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

// TestDriverProfileMePairs: a pair's two records get each other's pair
// statistics (role, partner retired, overlap and its cycles, useful
// overlap, in-progress cycles, from the Table 1 stages), each summed
// under its own (PC, history); a first without its second and a second
// without its first are refused, counted in MePairUnmatched, never summed;
// a squashed record counts as an abort of its own reason.
func TestDriverProfileMePairs(t *testing.T) {
	cfg := DefaultDriverConfig()
	cfg.Me = MeConfig{Entries: 64, BufferEntries: 8}
	d, err := NewDriver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	first := MeRecord{Incarnation: 1, MeRecord: alpha.MeRecord{PC: 0x1000, Abort: alpha.TrapSquash, History: 0b101,
		Stages: [alpha.NumMeStages]uint32{2, 3, 1, 5, 4}, Fetched: 100, Finished: 115, Pair: alpha.MeFirst, PairDistance: 3}}
	second := MeRecord{Incarnation: 1, MeRecord: alpha.MeRecord{PC: 0x100c, Events: alpha.MeRetired, History: 0b1010,
		Stages: [alpha.NumMeStages]uint32{1, 1, 1, 2, 0}, Fetched: 104, Finished: 109, Pair: alpha.MeSecond, PairDistance: 3}}
	lone := first
	lone.PC = 0x2000
	orphan := second
	orphan.PC = 0x3000
	d.SampleMe([]MeRecord{orphan, first, second, lone}, 0)
	st := d.Stats()
	if st.MeSamples != 2 || st.MePairUnmatched != 2 {
		t.Fatalf("stats %+v: want 2 samples and 2 unmatched", st)
	}
	d.BeginFlush()
	got := d.DrainMe(nil)
	d.EndFlush()
	if len(got) != 2 {
		t.Fatalf("drained %+v", got)
	}
	by := map[uint64]MeSample{}
	for _, s := range got {
		by[s.PC] = s
	}
	f, s := by[0x1000], by[0x100c]
	if f.History != 0b101 || s.History != 0b1010 {
		t.Fatalf("histories %b, %b", f.History, s.History)
	}
	// The first: fetched 100, issued 106, ready to retire 111, finished
	// 115, squashed. The second: fetched 104, issued 107, ready and
	// finished 109, retired. They overlap for 109-104 = 5 cycles; the
	// second issued while the first was in progress and retired: useful.
	fc, sc := f.Counts, s.Counts
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"first squashed", fc[wire.MeAbortSquash], 1}, {"first role", fc[wire.MeFirst], 1},
		{"first's partner retired", fc[wire.MePartnerRetired], 1}, {"first overlap", fc[wire.MeOverlap], 1},
		{"first overlap cycles", fc[wire.MeOverlapCycles], 5}, {"first useful", fc[wire.MeUseful], 1},
		{"first in progress", fc[wire.MeInProgress], 11}, {"first stage map-ready", fc[wire.MeStage0+1], 3},
		{"second retired", sc[wire.MeRetired], 1}, {"second role", sc[wire.MeSecond], 1},
		{"second's partner retired", sc[wire.MePartnerRetired], 0}, {"second overlap", sc[wire.MeOverlap], 1},
		{"second useful", sc[wire.MeUseful], 0}, {"second in progress", sc[wire.MeInProgress], 5},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
	for _, smp := range got {
		if err := smp.Counts.Check(); err != nil {
			t.Errorf("%+v: %v", smp, err)
		}
	}
}

// TestDriverProfileMeAddrs: every record with an effective address offers
// it to its instruction's hot list, which DrainMe hands over beside the
// sums (as a sample with no counts) and empties; with the lists all taken
// the rest are counted not kept; the sums are unaffected.
func TestDriverProfileMeAddrs(t *testing.T) {
	cfg := DefaultDriverConfig()
	cfg.Me = MeConfig{Entries: 64, BufferEntries: 8, AddrLists: 2}
	d, err := NewDriver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var recs []MeRecord
	for i := range 30 {
		recs = append(recs, MeRecord{Incarnation: 1, MeRecord: alpha.MeRecord{PC: 0x1000 + 4*uint64(i%3), Events: alpha.MeRetired,
			Addr: 0x8000 + 8*uint64(i%2)}})
	}
	d.SampleMe(recs, 0)
	st := d.Stats()
	if st.MeSamples != 30 || st.MeAddrsNotKept != 10 {
		t.Fatalf("stats %+v: want 30 samples, the 10 of the third PC's addresses not kept", st)
	}
	d.BeginFlush()
	got := d.DrainMe(nil)
	d.EndFlush()
	var lists, samples uint64
	for _, s := range got {
		if s.Addrs != nil {
			lists++
			if s.Counts != (wire.MeCounts{}) || s.Addrs.N != 10 || len(s.Addrs.Entries) != 2 || s.Addrs.Estimate(0x8000) != 5 {
				t.Fatalf("address list %+v of %#x", s.Addrs, s.PC)
			}
			continue
		}
		samples += s.Counts[wire.MeSamples]
	}
	if lists != 2 || samples != 30 {
		t.Fatalf("%d lists, %d samples drained", lists, samples)
	}
	d.BeginFlush()
	if again := d.DrainMe(nil); len(again) != 0 {
		t.Fatalf("drained twice: %+v", again)
	}
	d.EndFlush()
}
