package node

import (
	"fmt"
	"testing"
	"time"

	"dcpi/hwsim/alpha"
)

// meRecords returns n ProfileMe records over the hot keys' PCs, a few
// histories each, with the Table 1 stages and cycles the 21264 fills;
// paired, consecutive records form pairs.
func meRecords(n int, paired bool) []MeRecord {
	keys := hotKeys(n)
	recs := make([]MeRecord, n)
	for i, k := range keys {
		r := MeRecord{Incarnation: k.pid, MeRecord: alpha.MeRecord{PC: k.pc, Events: alpha.MeRetired, History: uint16(i % 3),
			Head: uint32(i % 9), Stages: [alpha.NumMeStages]uint32{2, uint32(i % 5), 1, 3, 1}, Fetched: uint64(100 * i), Finished: uint64(100*i + 12)}}
		if i%5 == 0 {
			r.Events |= alpha.MeDMiss
			r.LoadLatency = 30
		}
		if paired {
			r.Pair = alpha.MeFirst + alpha.MePairRole(i%2)
			r.Fetched = uint64(100*(i/2) + 3*(i%2))
			r.Finished = r.Fetched + 12
		}
		recs[i] = r
	}
	return recs
}

// BenchmarkProfileMe measures ProfileMe's driver and daemon beside the
// counter driver's, in the same run: the handler's host ns and modelled
// cycles per sample (hit path: the records' keys fit the table), single
// and paired, against the counter handler's hit path; and the daemon's
// host ns per ProfileMe sample attributed (8K-sample buffers) against its
// ns per counter entry.
//
//	go test -run XXX -bench ProfileMe -benchmem ./node
func BenchmarkProfileMe(b *testing.B) {
	const n = 512 // 512 keys x 3 histories fit a 2K-entry 4-way table
	b.Run("handler/counter-hit", func(b *testing.B) {
		d, err := NewDriver(DefaultDriverConfig())
		if err != nil {
			b.Fatal(err)
		}
		keys := hotKeys(n)
		for _, k := range keys {
			d.Sample(k.pid, k.pc, k.event)
		}
		before := d.Stats()
		b.ReportAllocs()
		start := time.Now()
		for i := 0; b.Loop(); i++ {
			k := &keys[i&(n-1)]
			d.Sample(k.pid, k.pc, k.event)
		}
		reportPerSample(b, start)
		st := d.Stats()
		b.ReportMetric(float64(st.CyclesHit-before.CyclesHit)/float64(st.Hits-before.Hits), "cycles/sample")
	})
	for _, paired := range []bool{false, true} {
		name := "handler/me-single"
		if paired {
			name = "handler/me-paired"
		}
		b.Run(name, func(b *testing.B) {
			cfg := DefaultDriverConfig()
			cfg.Me = DefaultMeConfig()
			d, err := NewDriver(cfg)
			if err != nil {
				b.Fatal(err)
			}
			recs := meRecords(n, paired)
			d.SampleMe(recs, 0)
			before := d.Stats()
			b.ReportAllocs()
			start := time.Now()
			for i := 0; b.Loop(); i++ {
				j := (4 * i) & (n - 1)
				d.SampleMe(recs[j:j+4], 0) // one interrupt: 4 register copies
			}
			st := d.Stats()
			samples := st.MeSamples - before.MeSamples
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(samples), "ns/sample")
			b.ReportMetric(float64(st.CyclesMe-before.CyclesMe)/float64(samples), "cycles/sample")
			if st.MePairUnmatched != 0 || st.MeDropped != 0 {
				b.Fatalf("stats %+v: the benchmark should neither drop nor split pairs", st)
			}
		})
	}
	maps := mapsWithKernel(Mapping{Base: alpha.KernelBase, Size: 1 << 22, Image: "buildid:" + fmt.Sprintf("%040x", 1), Path: "/vmunix"})
	for p := range uint32(5) {
		maps.ProcessEvent(Event{Kind: EventExec, PID: int(100 + p), Incarnation: 100 + p})
		maps.ProcessEvent(Event{Kind: EventMap, PID: int(100 + p), Incarnation: 100 + p, Base: 0x120000000, Size: 1 << 24,
			ImageID: "buildid:" + fmt.Sprintf("%040x", 2+p), Path: fmt.Sprintf("/bin/prog%d", p)})
	}
	const perBuffer = 8 << 10
	b.Run("daemon/counter-entries", func(b *testing.B) {
		keys := hotKeys(perBuffer)
		entries := make([]Entry, perBuffer)
		for i, k := range keys {
			entries[i] = Entry{PID: k.pid, PC: k.pc, Event: k.event, Count: 1}
		}
		at := newAttributor(maps, nil)
		var fb flatBook
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := at.add(&fb, entries); err != nil {
				b.Fatal(err)
			}
			at.batch(&fb, "h", 1, 0, uint64(i+1), 0, 1, nil)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perBuffer), "ns/entry")
	})
	b.Run("daemon/me-samples", func(b *testing.B) {
		cfg := DefaultDriverConfig()
		cfg.Me = MeConfig{Entries: 4 * perBuffer, BufferEntries: 512}
		d, err := NewDriver(cfg)
		if err != nil {
			b.Fatal(err)
		}
		d.SampleMe(meRecords(perBuffer, true), 0)
		d.BeginFlush()
		samples := d.DrainMe(nil)
		d.EndFlush()
		at := newAttributor(maps, nil)
		var book meBook
		b.ReportAllocs()
		for b.Loop() {
			if _, err := at.addMe(&book, samples, nil); err != nil {
				b.Fatal(err)
			}
			book.batch(at.images)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(samples)), "ns/entry")
	})
}
