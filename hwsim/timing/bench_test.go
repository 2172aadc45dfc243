package timing

import (
	"math/rand/v2"
	"testing"
)

// benchAddrs returns n addresses drawn from [0, span), aligned to align.
func benchAddrs(n int, span, align uint64) []uint64 {
	r := rand.New(rand.NewPCG(1, 2))
	a := make([]uint64, n)
	for i := range a {
		a[i] = r.Uint64N(span) &^ (align - 1)
	}
	return a
}

func report(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mcalls/s")
}

func BenchmarkCache(b *testing.B) {
	cases := []struct {
		name string
		cfg  CacheConfig
		span uint64 // addresses drawn from [0, span)
	}{
		{"dcache-hit", CacheConfig{Size: 8 << 10, Line: 32, Ways: 1}, 8 << 10},
		{"dcache-mixed", CacheConfig{Size: 8 << 10, Line: 32, Ways: 1}, 32 << 10},
		{"scache-lru-hit", CacheConfig{Size: 96 << 10, Line: 64, Ways: 3}, 96 << 10},
		{"scache-random-mixed", CacheConfig{Size: 96 << 10, Line: 64, Ways: 3, Replacement: Random}, 512 << 10},
		{"bcache-4MB-mixed", CacheConfig{Size: 4 << 20, Line: 64, Ways: 1}, 16 << 20},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			cache := mustCache(b, c.cfg)
			addrs := benchAddrs(4096, c.span, 8)
			for _, a := range addrs {
				cache.Access(a) // warm: the -hit cases then always hit
			}
			b.ReportAllocs()
			b.ResetTimer()
			hits := 0
			for i := 0; b.Loop(); i++ {
				if cache.Access(addrs[i&4095]) {
					hits++
				}
			}
			b.ReportMetric(float64(hits)/float64(b.N), "hit-rate")
		})
	}
}

// BenchmarkTLB compares the hash-indexed TLB with a linear scan of the
// same 64 entries (the baseline), on lookups that hit a random one of 64
// resident pages, on repeated lookups of one page, and on misses.
func BenchmarkTLB(b *testing.B) {
	pages := benchAddrs(4096, 64, 1)
	for i := range pages {
		pages[i] += 0x90000 // the resident pages are 0x90000..0x9003f
	}
	b.Run("hit-64-pages/indexed", func(b *testing.B) {
		tlb := mustTLB(b, 64, NotLastUsed)
		for p := range uint64(64) {
			tlb.Lookup(0x90000+p, 1)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			tlb.Lookup(pages[i&4095], 1)
		}
		if s := tlb.Stats(); s.Misses != 64 {
			b.Fatalf("%d misses", s.Misses)
		}
	})
	b.Run("hit-64-pages/linear-baseline", func(b *testing.B) {
		tlb := newLinearTLB(64, NotLastUsed)
		for p := range uint64(64) {
			tlb.Lookup(0x90000+p, 1)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			tlb.Lookup(pages[i&4095], 1)
		}
	})
	b.Run("same-page/indexed", func(b *testing.B) {
		tlb := mustTLB(b, 64, NotLastUsed)
		b.ReportAllocs()
		for b.Loop() {
			tlb.Lookup(0x90000, 1)
		}
	})
	b.Run("miss/indexed", func(b *testing.B) {
		tlb := mustTLB(b, 64, NotLastUsed)
		b.ReportAllocs()
		for i := uint64(0); b.Loop(); i++ {
			tlb.Lookup(i, 1) // always a new page: insert and evict
		}
	})
	b.Run("miss/linear-baseline", func(b *testing.B) {
		tlb := newLinearTLB(64, NotLastUsed)
		b.ReportAllocs()
		for i := uint64(0); b.Loop(); i++ {
			tlb.Lookup(i, 1)
		}
	})
}

func BenchmarkHierarchy(b *testing.B) {
	b.Run("load-dcache-hit", func(b *testing.B) {
		h := newTestHierarchy(b, nil)
		addrs := benchAddrs(4096, 8<<10, 8) // one page, all in the D-cache
		for _, a := range addrs {
			h.Load(0x200000+a, 0x200000+a, 0)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			a := 0x200000 + addrs[i&4095]
			h.Load(a, a, 1000+uint64(i))
		}
		report(b)
	})
	b.Run("load-mixed", func(b *testing.B) {
		// Random loads over 16 MB: misses everywhere, the DTB too.
		h := newTestHierarchy(b, nil)
		addrs := benchAddrs(4096, 16<<20, 8)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			a := addrs[i&4095]
			h.Load(a, a, uint64(i)*4)
		}
		report(b)
	})
	b.Run("store-stream", func(b *testing.B) {
		// Sequential quadword stores, one a cycle, over 64 KB.
		h := newTestHierarchy(b, nil)
		b.ReportAllocs()
		for i := uint64(0); b.Loop(); i++ {
			a := 0x400000 + i*8&(64<<10-1)
			h.Store(a, a, i)
		}
		report(b)
	})
	b.Run("fetch-icache-hit", func(b *testing.B) {
		h := newTestHierarchy(b, nil)
		for pc := uint64(0); pc < 4<<10; pc += 32 {
			h.Fetch(0x120000000+pc, 0x120000000+pc, 0)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := uint64(0); b.Loop(); i++ {
			pc := 0x120000000 + i*32&(4<<10-1)
			h.Fetch(pc, pc, i)
		}
		report(b)
	})
	b.Run("branch", func(b *testing.B) {
		h := newTestHierarchy(b, nil)
		b.ReportAllocs()
		for i := uint64(0); b.Loop(); i++ {
			pc := 0x120000000 + i*4&(16<<10-1)
			h.Branch(pc, pc-64, i%7 != 0)
		}
		report(b)
	})
	b.Run("call-return", func(b *testing.B) {
		h := newTestHierarchy(b, nil)
		b.ReportAllocs()
		for i := uint64(0); b.Loop(); i++ {
			h.Call(i)
			h.Return(i)
		}
		report(b)
	})
}
