package coordinator

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"dcpi/storage"
	"dcpi/wire/wiretest"
)

// meDelta is randDelta with ProfileMe samples (a version-4 batch).
func meDelta(t testing.TB, host string, seq, epoch uint64) storage.Delta {
	r := testRand(t)
	images := wiretest.Keys(4)
	b := wiretest.RandBatch(r, wiretest.Options{Host: host, Seq: seq, Epoch: epoch, MaxEntries: 10, Images: images})
	wiretest.AddMe(r, b, images, 32, 30)
	wiretest.AddMeV2(r, b)
	return storage.Delta{Batch: b}
}

// TestClusterProfileMe: proposals carry ProfileMe samples (section
// version 2: pairs, history, address lists) to the replicas, the query
// service pages them and the (PC, history) counts out as the database
// holds them, and Totals reports the ProfileMe view's conservation
// counters.
func TestClusterProfileMe(t *testing.T) {
	c := newCluster(t, 1)
	cl := NewClient(connect(t, c.url))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ds []storage.Delta
	var wantMe, wantUnknown, wantDrops uint64
	for seq := uint64(1); seq <= 5; seq++ {
		for _, d := range []storage.Delta{meDelta(t, "alpha1", seq, 1), meDelta(t, "alpha2", seq, 2)} {
			ds = append(ds, d)
			wantMe += d.Batch.MeTotal() - d.Batch.MeUnknown
			wantUnknown += d.Batch.MeUnknown
			for _, n := range d.Batch.MeDrops {
				wantDrops += n
			}
		}
	}
	out, err := cl.Propose(ctx, ds, nil)
	if err != nil {
		t.Fatal(err)
	}
	allOutcomes(t, out, storage.Applied)
	c.converged()
	tot, err := cl.Totals(ctx, storage.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var drops uint64
	for _, n := range tot.MeDrops {
		drops += n
	}
	if tot.MeSamples != wantMe || tot.MeUnknown != wantUnknown || drops != wantDrops || wantMe == 0 {
		t.Fatalf("totals: ProfileMe %d + %d unknown + %d dropped, want %d + %d + %d", tot.MeSamples, tot.MeUnknown, drops, wantMe, wantUnknown, wantDrops)
	}
	db := c.reps[c.leader()].DB()
	checkPages(t, cl, "ProfileMe rows", []storage.Query{{}, {Hosts: []string{"alpha2"}}, {Epochs: []uint64{1}, PIDs: []uint32{1}}},
		func(q storage.Query, w io.Writer) error {
			return db.MeProfile(q, func(r *storage.MeRow) error {
				_, err := fmt.Fprintln(w, r.Image, r.Offset, r.Host, r.Counts)
				return err
			})
		},
		func(q storage.Query, linearizable bool, w io.Writer) error {
			return cl.MeProfile(ctx, q, linearizable, func(r *storage.MeRow) error {
				_, err := fmt.Fprintln(w, r.Image, r.Offset, r.Host, r.Counts)
				return err
			})
		})
	checkPages(t, cl, "ProfileMe history rows", []storage.Query{{}, {Hosts: []string{"alpha1"}}, {Epochs: []uint64{2}}},
		func(q storage.Query, w io.Writer) error {
			return db.MeHistory(q, func(r *storage.MeHistRow) error {
				_, err := fmt.Fprintln(w, r.Image, r.Offset, r.History, r.Count)
				return err
			})
		},
		func(q storage.Query, linearizable bool, w io.Writer) error {
			return cl.MeHistory(ctx, q, linearizable, func(r *storage.MeHistRow) error {
				_, err := fmt.Fprintln(w, r.Image, r.Offset, r.History, r.Count)
				return err
			})
		})
}
