package storage

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"dcpi/wire"
)

// benchBatches makes a daemon's stream of batches: n entries each over 20
// images, 2 events, offsets 4 bytes apart, as Alpha instructions are.
func benchBatches(count, n int) []*wire.Batch {
	r := rand.New(rand.NewPCG(1, 1))
	out := make([]*wire.Batch, count)
	for i := range out {
		var es []wire.Entry
		for range n {
			es = append(es, wire.Entry{Image: key(r.IntN(20)), Event: uint8(r.IntN(2)), Offset: 4 * uint64(r.IntN(1<<14)), Count: 1 + uint64(r.IntN(50))})
		}
		out[i] = batch(fmt.Sprintf("host%d", i%8), uint16(i/8%4), uint64(i/32+1), 1, es, nil, map[string]uint64{wire.DropOverflowFull: 1})
	}
	return out
}

// BenchmarkApplyBatch measures ApplyBatch in entries/s beside a baseline of
// raw Pebble: one merge per entry of the same per-host counts keys, one
// commit per batch, with the same sync setting, in the same run.
func BenchmarkApplyBatch(b *testing.B) {
	const perBatch = 1000
	for _, sync := range []bool{false, true} {
		name := "nosync"
		if sync {
			name = "sync"
		}
		bs := benchBatches(256, perBatch)
		entries := 0
		for _, x := range bs {
			entries += len(x.Entries)
		}
		b.Run("dcpi/"+name, func(b *testing.B) {
			db, err := Open(filepath.Join(b.TempDir(), "db"), Options{NoSync: !sync})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			done := 0
			for b.Loop() {
				// Sequence numbers keep rising across rounds so each
				// batch applies.
				for _, x := range bs {
					y := *x
					y.Seq += uint64(done) * uint64(len(bs)/32)
					applied, err := db.ApplyBatch(&y)
					if err != nil || !applied {
						b.Fatal(applied, err)
					}
				}
				done++
			}
			b.ReportMetric(float64(entries)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
		})
		b.Run("raw-pebble/"+name, func(b *testing.B) {
			pdb, err := pebble.Open(filepath.Join(b.TempDir(), "raw"), &pebble.Options{Merger: counterMerger, Logger: pebbleLogger{}, FormatMajorVersion: pebble.FormatNewest})
			if err != nil {
				b.Fatal(err)
			}
			defer pdb.Close()
			wo := pebble.NoSync
			if sync {
				wo = pebble.Sync
			}
			var k []byte
			var v [8]byte
			for b.Loop() {
				for _, x := range bs {
					pb := pdb.NewBatch()
					for i := range x.Entries {
						k = countsKey(k, x.Epoch, &x.Entries[i], x.Host)
						pb.Merge(k, encodeCount(&v, x.Entries[i].Count), nil)
					}
					if err := pb.Commit(wo); err != nil {
						b.Fatal(err)
					}
					pb.Close()
				}
			}
			b.ReportMetric(float64(entries)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
		})
	}
}

// BenchmarkProfileFleet reads a fleet-wide profile of one epoch and event
// (hosts summed through the roll-up), in rows/s: as ingested (each key's
// value is a stack of merge operands until compactions combine them) and
// after Compact.
func BenchmarkProfileFleet(b *testing.B) {
	for _, compact := range []bool{false, true} {
		name := "ingested"
		if compact {
			name = "compacted"
		}
		b.Run(name, func(b *testing.B) {
			db, err := Open(filepath.Join(b.TempDir(), "db"), Options{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			for _, x := range benchBatches(256, 1000) {
				if _, err := db.ApplyBatch(x); err != nil {
					b.Fatal(err)
				}
			}
			if compact {
				if err := db.Compact(); err != nil {
					b.Fatal(err)
				}
			}
			rows := 0
			for b.Loop() {
				rows = 0
				err := db.Profile(b.Context(), Query{Epochs: []uint64{1}, Events: []uint8{0}}, func(wire.ImageKey, uint64, uint8, string, uint64) error {
					rows++
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(rows), "rows")
		})
	}
}

// BenchmarkSealCompaction measures the compaction a seal starts, on a
// database holding a sealed and compacted epoch 1, epoch 2 just sealed,
// and epoch 3 open with half an epoch written since the cut: the whole
// database (Compact) beside the sealed epoch's ranges (CompactEpoch), in
// the same run. MB-compacted is what the compaction wrote; the open
// epoch's part of it is written again by later compactions as ingest
// goes on merging into its keys.
func BenchmarkSealCompaction(b *testing.B) {
	bs := benchBatches(256, 1000)
	for _, whole := range []bool{true, false} {
		name := "epoch"
		if whole {
			name = "whole"
		}
		b.Run(name, func(b *testing.B) {
			var written uint64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				db, err := Open(filepath.Join(b.TempDir(), fmt.Sprint("db", i)), Options{NoSync: true})
				if err != nil {
					b.Fatal(err)
				}
				round := uint64(0)
				fill := func(epoch uint64, n int) {
					for _, x := range bs[:n] {
						y := *x
						y.Epoch = epoch
						y.Seq += round * uint64(len(bs)/32)
						if applied, err := db.ApplyBatch(&y); err != nil || !applied {
							b.Fatal(applied, err)
						}
					}
					round++
				}
				fill(1, len(bs))
				if err := db.Compact(); err != nil {
					b.Fatal(err)
				}
				fill(2, len(bs))
				fill(3, len(bs)/2)
				before := compactedBytes(db)
				b.StartTimer()
				if whole {
					err = db.Compact()
				} else {
					err = db.CompactEpoch(2)
				}
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				written += compactedBytes(db) - before
				db.Close()
			}
			b.ReportMetric(float64(written)/float64(b.N)/(1<<20), "MB-compacted")
		})
	}
}

func compactedBytes(db *DB) uint64 {
	m := db.pdb.Metrics()
	var n uint64
	for _, l := range m.Levels {
		n += l.TableBytesCompacted
	}
	return n
}
