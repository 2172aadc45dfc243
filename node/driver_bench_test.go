package node

import (
	"testing"
	"time"
)

// benchKey is one sample's (PID, PC, EVENT).
type benchKey struct {
	pid   uint32
	pc    uint64
	event uint8
}

// hotKeys returns n keys shaped like a profile's: a few processes, runs of
// consecutive instructions, two events.
func hotKeys(n int) []benchKey {
	keys := make([]benchKey, n)
	for i := range keys {
		keys[i] = benchKey{pid: uint32(100 + i%5), pc: 0x120000000 + uint64(i/5)*4*7, event: uint8(i % 7 / 6 * 2)}
	}
	return keys
}

// BenchmarkHandler measures the interrupt handler's hit and miss paths in
// host ns per sample, beside a Go map counting the same keys.
//
//	go test -run XXX -bench Handler -benchmem ./node
func BenchmarkHandler(b *testing.B) {
	const nHot = 1024 // fits a 16K-entry table without a bucket overflowing
	keys := hotKeys(nHot)

	for _, c := range []struct {
		name   string
		assoc  int
		policy Policy
	}{{"4way-rr", 4, RoundRobin}, {"6way-stf", 6, SwapToFront}, {"8way-rr", 8, RoundRobin}} {
		cfg := DefaultDriverConfig()
		cfg.Assoc, cfg.Policy = c.assoc, c.policy
		cfg.TableEntries = 16 << 10 / c.assoc * c.assoc

		b.Run("hit/"+c.name, func(b *testing.B) {
			d, err := NewDriver(cfg)
			if err != nil {
				b.Fatal(err)
			}
			for _, k := range keys {
				d.Sample(k.pid, k.pc, k.event)
			}
			before := d.Stats()
			b.ReportAllocs()
			start := time.Now()
			for i := 0; b.Loop(); i++ {
				k := &keys[i&(nHot-1)]
				d.Sample(k.pid, k.pc, k.event)
			}
			reportPerSample(b, start)
			st := d.Stats()
			if misses := st.Misses - before.Misses; misses != 0 {
				b.Fatalf("hit benchmark took %d misses", misses)
			}
			b.ReportMetric(float64(st.CyclesHit-before.CyclesHit)/float64(st.Hits-before.Hits), "cycles/sample")
		})

		b.Run("miss/"+c.name, func(b *testing.B) {
			d, err := NewDriver(cfg)
			if err != nil {
				b.Fatal(err)
			}
			// Fill the table so that every new key evicts.
			pc := uint64(0x120000000)
			for range cfg.TableEntries * 4 {
				sampleServiced(d, 7, pc, 0, nil)
				pc += 4
			}
			before := d.Stats()
			dst := make([]Entry, 0, cfg.BufferEntries)
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				dst = sampleServiced(d, 7, pc, 0, dst)
				pc += 4
			}
			reportPerSample(b, start)
			st := d.Stats()
			if hits := st.Hits - before.Hits; hits != 0 {
				b.Fatalf("miss benchmark hit %d times", hits)
			}
			if st.Dropped != 0 {
				b.Fatalf("dropped %d", st.Dropped)
			}
			b.ReportMetric(float64(st.CyclesMiss-before.CyclesMiss)/float64(st.Misses-before.Misses), "cycles/sample")
		})
	}

	b.Run("hit/map-baseline", func(b *testing.B) {
		m := make(map[benchKey]uint32, nHot)
		for _, k := range keys {
			m[k]++
		}
		b.ReportAllocs()
		start := time.Now()
		for i := 0; b.Loop(); i++ {
			m[keys[i&(nHot-1)]]++
		}
		reportPerSample(b, start)
	})

	b.Run("miss/map-baseline", func(b *testing.B) {
		// A new key every sample, the map emptied whenever it reaches the
		// table's 16K entries (a map cannot evict one entry cheaply).
		m := make(map[benchKey]uint32, 16<<10)
		pc := uint64(0x120000000)
		b.ReportAllocs()
		start := time.Now()
		for b.Loop() {
			if len(m) == 16<<10 {
				clear(m)
			}
			m[benchKey{pid: 7, pc: pc}]++
			pc += 4
		}
		reportPerSample(b, start)
	})
}

// sampleServiced takes one sample and, when it completes a buffer, plays
// the daemon at once: hand off, copy, release.
func sampleServiced(d *Driver, pid uint32, pc uint64, event uint8, dst []Entry) []Entry {
	if _, full := d.Sample(pid, pc, event); full {
		d.HandOff(false)
		for ok := true; ok; {
			dst, ok = d.TakeFull(dst[:0])
		}
		d.Release()
	}
	return dst
}

func reportPerSample(b *testing.B, start time.Time) {
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N), "ns/sample")
}
