package coordinator

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"dcpi/storage"
	"dcpi/wire"
)

// benchEntries is a pool of daemon-like entry lists: n entries over 20
// images, 2 events, offsets 4 bytes apart (Alpha instructions), sorted.
func benchEntries(pool, n int) [][]wire.Entry {
	r := rand.New(rand.NewPCG(1, 1))
	out := make([][]wire.Entry, pool)
	for i := range out {
		b := &wire.Batch{}
		for range n {
			b.Entries = append(b.Entries, wire.Entry{Image: imgKey(r.IntN(20)), Event: uint8(r.IntN(2)), Offset: 4 * uint64(r.IntN(1<<14)), Count: 1 + uint64(r.IntN(50))})
		}
		b.Normalize()
		out[i] = b.Entries
	}
	return out
}

// benchFeed makes one aggregator's calls: each call carries perCall deltas,
// one per stream of its hosts in turn, each delta standing for 4 batches.
type benchFeed struct {
	pool    [][]wire.Entry
	hosts   []string
	next    map[string]uint64
	i       int
	entries int // entries fed
}

func newBenchFeed(pool [][]wire.Entry, worker, hosts int) *benchFeed {
	f := &benchFeed{pool: pool, next: map[string]uint64{}}
	for h := range hosts {
		f.hosts = append(f.hosts, fmt.Sprintf("w%d-host%d", worker, h))
	}
	return f
}

func (f *benchFeed) call(perCall int) []storage.Delta {
	ds := make([]storage.Delta, perCall)
	for j := range ds {
		host := f.hosts[f.i%len(f.hosts)]
		cpu := uint16(f.i / len(f.hosts) % 4)
		k := fmt.Sprintf("%s/%d", host, cpu)
		first := f.next[k] + 1
		f.next[k] = first + 3
		es := f.pool[f.i%len(f.pool)]
		ds[j] = storage.Delta{Batch: &wire.Batch{Version: wire.Version, Host: host, CPU: cpu, Seq: first, Epoch: 1, Entries: es,
			Drops: map[string]uint64{"driver.overflow_full": 1}}, Last: first + 3}
		f.entries += len(es)
		f.i++
	}
	return ds
}

// BenchmarkIngest measures sustained ingest in entries/s through a
// 3-replica coordinator (client → NATS → leader → Raft → three FSMs), beside
// raw storage.ApplyDeltas of the same deltas on one Pebble database, with
// and without fsync, in the same run.
func BenchmarkIngest(b *testing.B) {
	const perDelta, perCall = 1000, 8
	pool := benchEntries(64, perDelta)
	for _, sync := range []bool{false, true} {
		name := "raw/nosync"
		if sync {
			name = "raw/sync"
		}
		b.Run(name, func(b *testing.B) {
			db, err := storage.Open(filepath.Join(b.TempDir(), "db"), storage.Options{NoSync: !sync})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			feed := newBenchFeed(pool, 0, 16)
			start := time.Now()
			for b.Loop() {
				out, err := db.ApplyDeltas(feed.call(perCall))
				if err != nil || out[0] != storage.Applied {
					b.Fatal(out, err)
				}
			}
			b.ReportMetric(float64(feed.entries)/time.Since(start).Seconds(), "entries/s")
		})
	}
	b.Run("coordinator/3-replicas", func(b *testing.B) {
		c := newCluster(b, 3)
		c.leader()
		cl := NewClient(connect(b, c.url))
		var workers, entries atomic.Int64
		b.SetParallelism(4) // aggregators proposing at once
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			feed := newBenchFeed(pool, int(workers.Add(1)), 4)
			ctx := context.Background()
			for pb.Next() {
				out, err := cl.Propose(ctx, feed.call(perCall), nil)
				if err != nil || out[0] != storage.Applied {
					b.Error(out, err)
					return
				}
			}
			entries.Add(int64(feed.entries))
		})
		b.ReportMetric(float64(entries.Load())/time.Since(start).Seconds(), "entries/s")
	})
}
