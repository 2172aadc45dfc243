package coordinator

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync/atomic"
	"syscall"
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
			Drops: map[string]uint64{wire.DropOverflowFull: 1}}, Last: first + 3}
		f.entries += len(es)
		f.i++
	}
	return ds
}

// processCPU is the CPU time (user and system) the test process has used:
// the cluster's replicas, NATS server and clients all run in it.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkIngest measures sustained ingest in entries/s through a
// 3-replica coordinator (client → NATS → leader → Raft → three FSMs), beside
// raw storage.ApplyDeltas of the same deltas on one Pebble database, with
// and without fsync, in the same run. raw/nosync is the baseline to compare
// with: it opens its database with the FSM's options (storage.Open's
// defaults, NoSync, as OpenFSM does), and each subject starts from an empty
// database. The FSM may commit several log entries in one Pebble batch
// (FSM.ApplyBatch); raw commits each call's eight deltas alone.
//
// Besides entries/s, which a shared machine's load moves, each reports
// the process's CPU per entry: cpu-ns/entry for raw, and for the
// cluster cpu-ns/entry/replica, the whole process's CPU (three replicas,
// NATS, Raft, the proposing clients) per entry divided by the three
// replicas that each apply it. Their ratio is what the replicated path
// costs per entry beyond a local apply, whatever the load.
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
			b.ResetTimer()
			start, cpu := time.Now(), processCPU(b)
			for b.Loop() {
				out, err := db.ApplyDeltas(feed.call(perCall))
				if err != nil || out[0] != storage.Applied {
					b.Fatal(out, err)
				}
			}
			b.ReportMetric(float64(feed.entries)/time.Since(start).Seconds(), "entries/s")
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(feed.entries), "cpu-ns/entry")
		})
	}
	b.Run("coordinator/3-replicas", func(b *testing.B) {
		// Raft as in production: the tests' small log segments and
		// short timeouts would measure segment churn and elections.
		c := newTunedCluster(b, 3, func(cfg *Config) {
			cfg.RaftTimeout, cfg.TrailingLogs, cfg.WALSegmentBytes = 0, 0, 0
		})
		c.leader()
		cl := NewClient(connect(b, c.url))
		var workers, entries atomic.Int64
		b.SetParallelism(4) // aggregators proposing at once
		// Starting the cluster and electing a leader (a second or two
		// with Raft's production timeouts) is not ingest: without the
		// reset it counted in ns/op, so b.N was sized too small and the
		// measured interval was short and noisy.
		b.ResetTimer()
		start, cpu := time.Now(), processCPU(b)
		b.RunParallel(func(pb *testing.PB) {
			feed := newBenchFeed(pool, int(workers.Add(1)), 4)
			ctx := context.Background()
			for pb.Next() {
				out, err := cl.Propose(ctx, feed.call(perCall), nil)
				// Duplicate: an attempt that timed out on the
				// loaded machine committed, and the retry found
				// the deltas applied (Client.Propose).
				if err != nil || (out[0] != storage.Applied && out[0] != storage.Duplicate) {
					b.Error(out, err)
					return
				}
			}
			entries.Add(int64(feed.entries))
		})
		b.ReportMetric(float64(entries.Load())/time.Since(start).Seconds(), "entries/s")
		b.ReportMetric(float64(processCPU(b)-cpu)/float64(entries.Load())/3, "cpu-ns/entry/replica")
	})
}
