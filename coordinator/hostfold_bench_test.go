package coordinator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"dcpi/aggregator"
	"dcpi/loadgen"
	"dcpi/storage"
	"dcpi/wire"
)

// benchRecording is the recorded host BenchmarkIngestHostFold replays:
// $DCPI_BENCH_RECORDING if set (e.g. a longer `dcpi loadgen record`),
// else testdata/host-2s.dcpiload — 2 simulated seconds of a 4-CPU host
// running the default mix, published every second (the node's default),
// its image records left out (`dcpi loadgen record --seconds 2
// --publish-every 1`; the benchmark needs the batches only).
func benchRecording(b *testing.B) *loadgen.Recording {
	path := os.Getenv("DCPI_BENCH_RECORDING")
	if path == "" {
		path = filepath.Join("testdata", "host-2s.dcpiload")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	rec, err := loadgen.Decode(data)
	if err != nil {
		b.Fatal(err)
	}
	return rec
}

// hostFoldFeed makes one proposer's fetches: each the next publish window
// of each of its hosts — a batch per CPU — replayed from a recording under
// the hosts' names, merged as the aggregator does, with or without host
// folds.
type hostFoldFeed struct {
	agents []*loadgen.Agent
	item   []int    // next item of each agent
	loop   []uint64 // its loop
	cpus   int
	lim    aggregator.Limits
}

func newHostFoldFeed(b *testing.B, rec *loadgen.Recording, worker, hosts int, fold bool) *hostFoldFeed {
	f := &hostFoldFeed{cpus: rec.Header.CPUs, item: make([]int, hosts), loop: make([]uint64, hosts),
		lim: aggregator.Limits{FoldHosts: fold}}
	for h := range hosts {
		a, err := loadgen.NewAgent(rec, fmt.Sprintf("w%d-host%d", worker, h), 1)
		if err != nil {
			b.Fatal(err)
		}
		f.agents = append(f.agents, a)
	}
	return f
}

// fetch returns the next fetch's deltas, the entries its batches publish
// and the entries its deltas propose.
func (f *hostFoldFeed) fetch() (ds []storage.Delta, published, proposed int) {
	var bs []*wire.Batch
	for h, a := range f.agents {
		for n := 0; n < f.cpus; {
			b := new(wire.Batch)
			if a.Batch(f.loop[h], f.item[h], b) {
				bs = append(bs, b)
				published += len(b.Entries) + len(b.Unknown)
				n++
			}
			if f.item[h]++; f.item[h] == a.Len() {
				f.item[h], f.loop[h] = 0, f.loop[h]+1
			}
		}
	}
	for _, p := range aggregator.Merge(bs, f.lim) {
		ds = append(ds, p.Deltas...)
		proposed += p.Entries()
	}
	return ds, published, proposed
}

// BenchmarkIngestHostFold measures what host folds save on the replicated
// ingest path, beside per-stream deltas in the same run: recorded real
// batches of 4-CPU hosts (benchRecording), one publish window of 4 hosts
// per fetch, merged as the aggregator merges them, applied by raw
// storage.ApplyDeltas and proposed through a 3-replica coordinator by 4
// proposers (as BenchmarkIngest). The fetches are made and merged before
// the timer starts, so the CPU is the ingest path's alone. It reports
// proposed/published (entries proposed per entry the nodes published),
// and the process's CPU per published entry — cpu-ns/entry for raw,
// cpu-ns/entry/replica for the cluster (divided by its three replicas) —
// which is the same data stored either way, so the ratio of the two
// variants is what folding saves per sample stored.
func BenchmarkIngestHostFold(b *testing.B) {
	rec := benchRecording(b)
	const workers, hosts = 4, 4
	// fetches makes b.N fetches, dealt round-robin to the workers.
	fetches := func(b *testing.B, fold bool) (per [workers][][]storage.Delta, published, proposed int) {
		feeds := make([]*hostFoldFeed, workers)
		for w := range feeds {
			feeds[w] = newHostFoldFeed(b, rec, w, hosts, fold)
		}
		for i := range b.N {
			ds, pub, prop := feeds[i%workers].fetch()
			per[i%workers] = append(per[i%workers], ds)
			published, proposed = published+pub, proposed+prop
		}
		return per, published, proposed
	}
	report := func(b *testing.B, start time.Time, cpu time.Duration, published, proposed, replicas int) {
		b.ReportMetric(float64(proposed)/float64(published), "proposed/published")
		b.ReportMetric(float64(published)/time.Since(start).Seconds(), "entries/s")
		unit := "cpu-ns/entry"
		if replicas > 1 {
			unit = "cpu-ns/entry/replica"
		}
		b.ReportMetric(float64(processCPU(b)-cpu)/float64(published)/float64(replicas), unit)
	}
	for _, fold := range []bool{false, true} {
		mode := "per-stream"
		if fold {
			mode = "host-fold"
		}
		b.Run("raw/"+mode, func(b *testing.B) {
			db, err := storage.Open(filepath.Join(b.TempDir(), "db"), storage.Options{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			per, published, proposed := fetches(b, fold)
			b.ResetTimer()
			start, cpu := time.Now(), processCPU(b)
			for w := range workers {
				for _, ds := range per[w] {
					out, err := db.ApplyDeltas(ds)
					if err != nil || out[0] != storage.Applied {
						b.Fatal(out, err)
					}
				}
			}
			report(b, start, cpu, published, proposed, 1)
		})
	}
	for _, fold := range []bool{false, true} {
		mode := "per-stream"
		if fold {
			mode = "host-fold"
		}
		b.Run("coordinator/3-replicas/"+mode, func(b *testing.B) {
			c := newTunedCluster(b, 3, func(cfg *Config) {
				cfg.RaftTimeout, cfg.TrailingLogs, cfg.WALSegmentBytes = 0, 0, 0
			})
			c.leader()
			cl := NewClient(connect(b, c.url))
			per, published, proposed := fetches(b, fold)
			b.ResetTimer()
			start, cpu := time.Now(), processCPU(b)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					for _, ds := range per[w] {
						out, err := cl.Propose(context.Background(), ds, nil)
						// Duplicate: an attempt that timed out
						// committed (see BenchmarkIngest).
						if err != nil || (out[0] != storage.Applied && out[0] != storage.Duplicate) {
							b.Error(out, err)
							return
						}
					}
				})
			}
			wg.Wait()
			report(b, start, cpu, published, proposed, 3)
		})
	}
}
