package coordinator

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"dcpi/storage"
	"dcpi/wire/coordproto"
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
	tot, err := cl.Totals(ctx, storage.Query{}, true)
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
			return db.MeProfile(t.Context(), q, func(r *storage.MeRow) error {
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
			return db.MeHistory(t.Context(), q, func(r *storage.MeHistRow) error {
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
	checkPages(t, cl, "ProfileMe address lists", []storage.Query{{}, {Hosts: []string{"alpha2"}}, {Epochs: []uint64{1}}},
		func(q storage.Query, w io.Writer) error {
			return db.MeAddrs(t.Context(), q, func(r *storage.MeAddrRow) error {
				_, err := fmt.Fprintln(w, r.Image, r.Offset, r.List.Shift, r.List.N, r.List.Entries)
				return err
			})
		},
		func(q storage.Query, linearizable bool, w io.Writer) error {
			return cl.MeAddrs(ctx, q, linearizable, func(r *storage.MeAddrRow) error {
				_, err := fmt.Fprintln(w, r.Image, r.Offset, r.List.Shift, r.List.N, r.List.Entries)
				return err
			})
		})
}

// TestClusterMeAddrsRejects: a malformed or negative-skip address query is
// a bad request that says what is wrong.
func TestClusterMeAddrsRejects(t *testing.T) {
	c := newCluster(t, 1)
	nc := connect(t, c.url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The client waits for the leader's subjects; an empty database has no lists.
	if err := NewClient(nc).MeAddrs(ctx, storage.Query{}, true, func(r *storage.MeAddrRow) error {
		return fmt.Errorf("a list in an empty database: %+v", r)
	}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		data []byte
		want string
	}{
		{[]byte(`{"Query":`), "bad request"},
		{[]byte(`{"Skip":-3}`), "skip -3"},
	} {
		for _, subject := range []string{coordproto.SubjectQuery + coordproto.QueryMeAddrs, coordproto.SubjectLinearQuery + coordproto.QueryMeAddrs} {
			msg, err := nc.Request(subject, tc.data, 5*time.Second)
			if err != nil {
				t.Fatalf("%s: %v", subject, err)
			}
			if msg.Header.Get(HeaderErrorCode) != codeBadRequest || !strings.Contains(msg.Header.Get(HeaderError), tc.want) {
				t.Errorf("%s %q: reply %q %q, want bad-request mentioning %q", subject, tc.data, msg.Header.Get(HeaderErrorCode), msg.Header.Get(HeaderError), tc.want)
			}
		}
	}
}
