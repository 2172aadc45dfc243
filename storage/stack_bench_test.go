package storage

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"dcpi/wire"
)

// stackBenchBatches makes batches of samples with call stacks from a
// synthetic program: 200 procedures over 4 images, each calling a few
// later ones from fixed call sites; 4,000 call paths of 2 to 12 frames
// below main, drawn with a Zipf law (a few hot paths, a long tail), each
// ending at one of 64 instructions of its procedure; 1,000 samples a
// batch. Each sample is one flat entry (its leaf) and one stack; batches
// are the streams of 8 hosts × 4 CPUs.
func stackBenchBatches(count int) []*wire.Batch {
	r := rand.New(rand.NewPCG(7, 7))
	const procs = 200
	base := func(p int) wire.Frame { return wire.Frame{Image: key(p % 4), Offset: 0x10000 * uint64(p/4)} }
	callees := make([][]int, procs)
	for p := range procs - 1 {
		for range 1 + r.IntN(4) {
			callees[p] = append(callees[p], p+1+r.IntN(min(20, procs-1-p)))
		}
	}
	type path struct {
		chain []wire.Frame // outermost first: return addresses
		leaf  int          // the procedure it ends in
	}
	paths := make([]path, 4000)
	for i := range paths {
		p := 0
		var chain []wire.Frame
		for depth := 2 + r.IntN(11); depth > 0 && len(callees[p]) > 0; depth-- {
			k := r.IntN(len(callees[p]))
			site := base(p)
			site.Offset += 0x100 + 8*uint64(k) + 4 // after the call
			chain = append(chain, site)
			p = callees[p][k]
		}
		paths[i] = path{chain, p}
	}
	zipf := rand.NewZipf(r, 1.1, 1, uint64(len(paths)-1))
	out := make([]*wire.Batch, count)
	for i := range out {
		b := &wire.Batch{Version: wire.StackVersion, Host: fmt.Sprintf("host%d", i%8), CPU: uint16(i / 8 % 4), Seq: uint64(i/32 + 1), Epoch: 1}
		for range 1000 {
			pa := paths[zipf.Uint64()]
			chain, p := pa.chain, pa.leaf
			leaf := base(p)
			leaf.Offset += 4 * uint64(r.IntN(64))
			s := wire.StackEntry{Frames: []wire.Frame{leaf}, Count: 1}
			for j := len(chain) - 1; j >= 0; j-- {
				s.Frames = append(s.Frames, chain[j])
			}
			b.Stacks = append(b.Stacks, s)
			b.Entries = append(b.Entries, wire.Entry{Image: leaf.Image, Offset: leaf.Offset, Count: 1})
		}
		b.Normalize()
		out[i] = b
	}
	return out
}

// BenchmarkStorageBytesPerSample stores the same samples twice in the same
// run, as a flat profile alone and with their call stacks, compacts, and
// reports the bytes of sstables per sample of each: what keeping stacks
// costs on disk.
func BenchmarkStorageBytesPerSample(b *testing.B) {
	bs := stackBenchBatches(256)
	var samples, stacks, entries int
	for _, x := range bs {
		samples += int(x.Total())
		stacks += len(x.Stacks)
		entries += len(x.Entries)
	}
	for _, withStacks := range []bool{false, true} {
		name := "flat"
		if withStacks {
			name = "stacks"
		}
		b.Run(name, func(b *testing.B) {
			var size int64
			distinct := map[uint64]bool{}
			for b.Loop() {
				dir := filepath.Join(b.TempDir(), "db")
				db, err := Open(dir, Options{NoSync: true})
				if err != nil {
					b.Fatal(err)
				}
				for _, x := range bs {
					y := *x
					if !withStacks {
						y.Version, y.Stacks = wire.FlatVersion, nil
					}
					if _, err := db.ApplyBatch(&y); err != nil {
						b.Fatal(err)
					}
				}
				if err := db.Compact(); err != nil {
					b.Fatal(err)
				}
				total := db.pdb.Metrics().Total()
				size = total.TablesSize
				clear(distinct)
				if err := db.Stacks(b.Context(), Query{}, func(st *Stack, _ uint8, _ string, _ uint64) error { distinct[st.ID] = true; return nil }); err != nil {
					b.Fatal(err)
				}
				db.Close()
			}
			b.ReportMetric(float64(size)/float64(samples), "bytes/sample")
			b.ReportMetric(float64(samples), "samples")
			if withStacks {
				b.ReportMetric(float64(stacks), "stack-rows")
				b.ReportMetric(float64(len(distinct)), "distinct-stacks")
			} else {
				b.ReportMetric(float64(entries), "flat-rows")
			}
		})
	}
}
