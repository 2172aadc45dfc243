package coordinator

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"dcpi/aggregator"
	"dcpi/storage"
	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// foldFeed is rounds of batches of several hosts' CPU streams, each
// round a few batches per stream, as fetches bring them.
type foldFeed struct {
	r    *rand.Rand
	next map[string]uint64
}

func (f *foldFeed) round(hosts, cpus int, epoch uint64) []*wire.Batch {
	var out []*wire.Batch
	for h := range hosts {
		host := fmt.Sprintf("alpha%d", h)
		for cpu := range uint16(cpus) {
			if f.r.IntN(5) == 0 {
				continue
			}
			k := fmt.Sprintf("%s/%d", host, cpu)
			for range 1 + f.r.IntN(3) {
				f.next[k]++
				b := wiretest.RandBatch(f.r, wiretest.Options{Host: host, CPU: cpu, Seq: f.next[k], Epoch: epoch,
					MaxEntries: 30, Images: wiretest.Keys(8), Events: 2, Offsets: 64, MaxCount: 20})
				b.Delivered, b.Accounted = 1000*f.next[k]+uint64(cpu), 1000*f.next[k]
				out = append(out, b)
			}
		}
	}
	return out
}

func mergeDeltas(bs []*wire.Batch, fold bool) []storage.Delta {
	var ds []storage.Delta
	for _, p := range aggregator.Merge(bs, aggregator.Limits{FoldHosts: fold}) {
		ds = append(ds, p.Deltas...)
	}
	return ds
}

// TestFSMHostFolds: log entries of host folds, applied in groups by
// ApplyBatch, leave a replica's database as entries of per-stream deltas
// applied one by one do; a fold with a run already stored is Unfold and
// changes nothing, and its runs sent again per stream store it once.
func TestFSMHostFolds(t *testing.T) {
	r := testRand(t)
	folded, perStream := openTestFSM(t), openTestFSM(t)
	feed := &foldFeed{r: r, next: map[string]uint64{}}
	var logs []*raft.Log
	index, folds := uint64(0), 0
	for round := range 8 {
		bs := feed.round(3, 4, 1+uint64(round/3))
		fd := mergeDeltas(bs, true)
		for _, d := range fd {
			if len(d.Folded) > 0 {
				folds++
			}
		}
		b, err := EncodeCommand(&Ingest{Deltas: fd})
		if err != nil {
			t.Fatal(err)
		}
		index++
		logs = append(logs, &raft.Log{Index: index, Type: raft.LogCommand, Data: b})
		out := outcomes(mustApply(t, perStream, index, &Ingest{Deltas: mergeDeltas(bs, false)}))
		if slices.ContainsFunc(out, func(o storage.Outcome) bool { return o != storage.Applied }) {
			t.Fatalf("per-stream round %d: %v", round, out)
		}
	}
	if folds == 0 {
		t.Fatal("no host folds")
	}
	for i := 0; i < len(logs); i += 3 {
		for j, res := range folded.ApplyBatch(logs[i:min(i+3, len(logs))]) {
			if out := outcomes(res); len(out) == 0 || slices.ContainsFunc(out, func(o storage.Outcome) bool { return o != storage.Applied }) {
				t.Fatalf("entry %d: %v", i+j+1, res)
			}
		}
	}
	if a, b := dumpDB(t, folded.DB()), dumpDB(t, perStream.DB()); a != b {
		t.Fatalf("host folds and per-stream deltas stored different databases:\n%s\nvs\n%s", a, b)
	}

	// alpha0's CPU 1 stores its next batch alone; a fold of it with CPU
	// 0's next is then Unfold and writes nothing but the log index.
	next := func(host string, cpu uint16) *wire.Batch {
		k := fmt.Sprintf("%s/%d", host, cpu)
		feed.next[k]++
		return wiretest.RandBatch(r, wiretest.Options{Host: host, CPU: cpu, Seq: feed.next[k], Epoch: 4,
			MaxEntries: 30, Images: wiretest.Keys(8), Events: 2, Offsets: 64, MaxCount: 20})
	}
	b0, b1 := next("alpha0", 0), next("alpha0", 1)
	for _, f := range []*FSM{folded, perStream} {
		index := f.AppliedIndex() + 1
		if out := outcomes(mustApply(t, f, index, &Ingest{Deltas: []storage.Delta{{Batch: b1}}})); !slices.Equal(out, []storage.Outcome{storage.Applied}) {
			t.Fatalf("cpu 1 alone: %v", out)
		}
	}
	fold := mergeDeltas([]*wire.Batch{b0, b1}, true)
	if len(fold) != 1 || len(fold[0].Folded) != 1 {
		t.Fatalf("no fold of cpus 0 and 1: %+v", fold)
	}
	before := dumpDB(t, folded.DB())
	if out := outcomes(mustApply(t, folded, folded.AppliedIndex()+1, &Ingest{Deltas: fold})); !slices.Equal(out, []storage.Outcome{storage.Unfold}) {
		t.Fatalf("fold with a stored run: %v, want unfold", out)
	}
	if dumpDB(t, folded.DB()) != before {
		t.Fatal("an Unfold entry changed the database")
	}
	var again []storage.Delta
	for _, p := range aggregator.MergeStreams([]*wire.Batch{b0, b1}, []int{0, 1}, aggregator.Limits{FoldHosts: true}) {
		again = append(again, p.Deltas...)
	}
	if out := outcomes(mustApply(t, folded, folded.AppliedIndex()+1, &Ingest{Deltas: again})); !slices.Equal(out, []storage.Outcome{storage.Applied, storage.Duplicate}) {
		t.Fatalf("the runs again: %v", out)
	}
	mustApply(t, perStream, perStream.AppliedIndex()+1, &Ingest{Deltas: []storage.Delta{{Batch: b0}}})
	if a, b := dumpDB(t, folded.DB()), dumpDB(t, perStream.DB()); a != b {
		t.Fatalf("after the fallback the databases differ:\n%s\nvs\n%s", a, b)
	}
}

// TestClusterHostFolds: host folds proposed through the client commit on
// every replica alike, Unfold included, and the replicas read as a lone
// state machine given the same batches as per-stream deltas.
func TestClusterHostFolds(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-replica cluster")
	}
	r := testRand(t)
	c := newCluster(t, 3)
	cl := NewClient(connect(t, c.url))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lone := openTestFSM(t)
	feed := &foldFeed{r: r, next: map[string]uint64{}}
	var sent []*wire.Batch
	for round := range 4 {
		bs := feed.round(4, 4, 1)
		sent = append(sent, bs...)
		out, err := cl.Propose(ctx, mergeDeltas(bs, true), nil)
		if err != nil {
			t.Fatal(err)
		}
		allOutcomes(t, out, storage.Applied)
		mustApply(t, lone, uint64(round+1), &Ingest{Deltas: mergeDeltas(bs, false)})
	}
	// A redelivered batch of alpha0's CPU 0 beside new batches of its
	// other CPUs: the fold is Unfold on every replica.
	var redelivery []*wire.Batch
	for _, b := range sent {
		if b.Host == "alpha0" && b.CPU == 0 {
			redelivery = []*wire.Batch{b}
		}
	}
	for _, b := range feed.round(1, 4, 1) {
		if b.CPU != 0 {
			redelivery = append(redelivery, b)
		}
	}
	fold := mergeDeltas(redelivery, true)
	if len(fold) != 1 || len(fold[0].Folded) == 0 {
		t.Fatalf("no fold: %+v", fold)
	}
	out, err := cl.Propose(ctx, fold, nil)
	if err != nil || !slices.Equal(out, []storage.Outcome{storage.Unfold}) {
		t.Fatalf("fold with a stored run: %v %v", out, err)
	}
	members := make([]int, len(redelivery))
	for i := range members {
		members[i] = i
	}
	var again []storage.Delta
	for _, p := range aggregator.MergeStreams(redelivery, members, aggregator.Limits{FoldHosts: true}) {
		again = append(again, p.Deltas...)
	}
	out, err = cl.Propose(ctx, again, nil)
	if err != nil || out[0] != storage.Duplicate {
		t.Fatalf("the runs again: %v %v", out, err)
	}
	allOutcomes(t, out[1:], storage.Applied)
	mustApply(t, lone, 5, &Ingest{Deltas: mergeDeltas(redelivery[1:], false)})
	// The cluster's leader opened an epoch; the lone state machine did not.
	if got, want := withoutEpochs(c.converged()), withoutEpochs(dumpDB(t, lone.DB())); got != want {
		t.Fatalf("replicas given host folds differ from a state machine given per-stream deltas:\n%s\nvs\n%s", got, want)
	}
}

func withoutEpochs(dump string) string {
	var keep []string
	for _, l := range strings.Split(dump, "\n") {
		if !strings.HasPrefix(l, "epoch ") && !strings.HasPrefix(l, "  ack ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
