package calc

import (
	"context"
	"math/rand/v2"
	"path"
	"testing"

	"dcpi/analysis/report"
	"dcpi/analysis/symbolize"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/vmunix"
	"dcpi/storage"
	"dcpi/wire"
	"dcpi/workloads"
)

// demoFleetDB builds a profile database shaped like the demo cluster's
// (docs/tools.md: hashdb, interp, matmul, ptrchase, server and stream, and
// vmunix), spread over a fleet: hosts × 2 epochs, CYCLES samples on every
// instruction of 40 procedures of each image (a few hot, most warm), and
// IMISS and DMISS samples on some. The counts are synthetic; the images,
// their procedures and CFGs are the real ones dcpi calc analyzes.
func demoFleetDB(b *testing.B, hosts int) (*storage.DB, []string) {
	b.Helper()
	db, err := storage.Open(b.TempDir(), storage.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	type image struct {
		rec   *wire.ImageRecord
		procs []wire.Symbol
	}
	var images []image
	names := []string{"hashdb", "interp", "matmul", "ptrchase", "server", "stream", vmunix.Path}
	for _, name := range names {
		data := vmunix.Image()
		if name != vmunix.Path {
			if data, err = workloads.Binary(name); err != nil {
				b.Fatal(err)
			}
			name = "/bin/" + name
		}
		key, im, err := symbolize.ImageKeyOf(data, name)
		if err != nil {
			b.Fatal(err)
		}
		rec := &wire.ImageRecord{Version: wire.Version, Key: key, Path: name, Size: uint64(len(data)), TextStart: im.TextStart, TextEnd: im.TextEnd,
			Base: ^uint64(0)}
		for _, s := range im.Segments {
			rec.Base = min(rec.Base, s.Vaddr&^(alpha.PageSize-1))
		}
		var procs []wire.Symbol
		for _, s := range im.Symbols {
			rec.Symbols = append(rec.Symbols, wire.Symbol{Name: s.Name, Addr: s.Addr, Size: s.Size})
			if s.Size >= 16 && s.Size <= 4096 && s.Addr >= im.TextStart && s.Addr+s.Size <= im.TextEnd {
				procs = append(procs, wire.Symbol{Name: s.Name, Addr: s.Addr, Size: s.Size})
			}
		}
		if err := db.PutImage(rec); err != nil {
			b.Fatal(err)
		}
		r := rand.New(rand.NewPCG(uint64(len(images)), 7))
		r.Shuffle(len(procs), func(i, j int) { procs[i], procs[j] = procs[j], procs[i] })
		images = append(images, image{rec, procs[:min(40, len(procs))]})
	}
	var hostNames []string
	r := rand.New(rand.NewPCG(1, 2))
	var batches []*wire.Batch
	for h := range hosts {
		host := "alpha" + string(rune('a'+h%26)) + string(rune('0'+h/26))
		hostNames = append(hostNames, host)
		for epoch := uint64(1); epoch <= 2; epoch++ {
			bt := &wire.Batch{Version: wire.Version, Host: host, Seq: epoch, Epoch: epoch}
			for _, im := range images {
				for p, s := range im.procs {
					weight := 1 + 400/(1+p) // the first procedures of each image are hot
					for off := s.Addr - im.rec.Base; off < s.Addr+s.Size-im.rec.Base; off += 4 {
						if r.IntN(4) == 0 {
							continue // an instruction without samples here
						}
						bt.Entries = append(bt.Entries, wire.Entry{Image: im.rec.Key, Offset: off, Event: uint8(alpha.EvCycles), Count: 1 + uint64(r.IntN(weight))})
						if r.IntN(8) == 0 {
							bt.Entries = append(bt.Entries, wire.Entry{Image: im.rec.Key, Offset: off, Event: uint8(alpha.EvDMiss), Count: 1 + uint64(r.IntN(4))})
						}
					}
				}
			}
			bt.Normalize()
			batches = append(batches, bt)
		}
	}
	if _, err := db.ApplyBatches(batches); err != nil {
		b.Fatal(err)
	}
	return db, hostNames
}

// demoFinder finds the demo fleet's images among the embedded binaries.
type demoFinder struct{}

func (demoFinder) FindImage(_ context.Context, rec *wire.ImageRecord) ([]byte, string, error) {
	if rec.Path == vmunix.Path {
		return vmunix.Image(), "embedded", nil
	}
	data, err := workloads.Binary(path.Base(rec.Path))
	return data, "embedded", err
}

// BenchmarkCalcTop20 is dcpi calc's target (under 1 s): the 20 procedures
// with the most CYCLES samples of a demo-like fleet of 16 hosts, each
// analyzed from the samples of every host and epoch, from a fresh symbol
// cache. Beside it, in the same run, the baseline: dcpi prof's top 20 over
// the same selection (the ranking calc starts from). "mixed-periods" gives
// half the hosts another CYCLES period, so every image is read per host
// and scaled.
func BenchmarkCalcTop20(b *testing.B) {
	db, hosts := demoFleetDB(b, 16)
	periods := func(mixed bool) map[string]map[uint8]float64 {
		m := map[string]map[uint8]float64{}
		for i, h := range hosts {
			cyc := 63488.0
			if mixed && i%2 == 1 {
				cyc = 31744
			}
			m[h] = map[uint8]float64{uint8(alpha.EvCycles): cyc, uint8(alpha.EvDMiss): 4096}
		}
		return m
	}
	for _, bc := range []struct {
		name string
		run  func() (int, error)
	}{
		{"baseline-prof", func() (int, error) {
			t, err := report.Prof(b.Context(), db, report.ProfQuery{Events: []uint8{uint8(alpha.EvCycles)}, Limit: 20})
			if err != nil {
				return 0, err
			}
			return len(t.Rows), nil
		}},
		{"calc", func() (int, error) {
			r, err := Run(b.Context(), db, Query{Top: 20, Files: demoFinder{}, Periods: periods(false)})
			if err != nil {
				return 0, err
			}
			return len(r.Procedures), nil
		}},
		{"calc/mixed-periods", func() (int, error) {
			r, err := Run(b.Context(), db, Query{Top: 20, Files: demoFinder{}, Periods: periods(true)})
			if err != nil {
				return 0, err
			}
			return len(r.Procedures), nil
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				var err error
				if n, err = bc.run(); err != nil {
					b.Fatal(err)
				}
			}
			if n != 20 {
				b.Fatalf("%d procedures", n)
			}
			b.ReportMetric(float64(n), "procs")
		})
	}
}
