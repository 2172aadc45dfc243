package coordinator

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dcpi/storage"
	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// stackDelta is randDelta with call stacks (a version-3 batch).
func stackDelta(t testing.TB, host string, seq, epoch uint64) storage.Delta {
	r := testRand(t)
	b := wiretest.RandBatch(r, wiretest.Options{Host: host, Seq: seq, Epoch: epoch, MaxEntries: 20, MaxStacks: 40,
		Images: wiretest.Keys(8), Events: 2, Offsets: 64, MaxCount: 40})
	b.Version = wire.StackVersion
	return storage.Delta{Batch: b}
}

// TestFSMStacks: Ingest commands carry stacks (the command embeds the
// version-3 batch), a redelivered entry adds nothing, and a snapshot
// restores them.
func TestFSMStacks(t *testing.T) {
	src := openTestFSM(t)
	idx := uint64(0)
	apply := func(f *FSM, c Command) { idx++; mustApply(t, f, idx, c) }
	var ds []storage.Delta
	var want uint64
	for seq := uint64(1); seq <= 6; seq++ {
		d := stackDelta(t, "h0", seq, 1)
		ds = append(ds, d)
		want += d.Batch.StackTotal()
		apply(src, &Ingest{Deltas: []storage.Delta{d}})
	}
	apply(src, &Ingest{Deltas: ds[2:4]}) // redelivered
	if got, _, err := src.DB().StackTotals(storage.Query{}); err != nil || got != want || want == 0 {
		t.Fatalf("stack samples %d %v, want %d", got, err, want)
	}
	dump := dumpDB(t, src.DB())
	if !strings.Contains(dump, "stack ") {
		t.Fatalf("no stacks in the dump:\n%s", dump)
	}
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	dst, err := OpenFSM(filepath.Join(t.TempDir(), "dst"), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if err := dst.Restore(readCloser{bytes.NewReader(sink.Bytes())}); err != nil {
		t.Fatal(err)
	}
	if got := dumpDB(t, dst.DB()); got != dump {
		t.Fatalf("restored database differs:\n%s\nwant\n%s", got, dump)
	}
}

// TestClusterStacks: proposals carry stacks to the replicas, and the
// query service pages them out as the database holds them.
func TestClusterStacks(t *testing.T) {
	c := newCluster(t, 1)
	cl := NewClient(connect(t, c.url))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ds []storage.Delta
	for seq := uint64(1); seq <= 5; seq++ {
		ds = append(ds, stackDelta(t, "alpha1", seq, 1), stackDelta(t, "alpha2", seq, 2))
	}
	// A frame no image map covered travels as its raw PC.
	b := ds[0].Batch
	b.Stacks = append(b.Stacks, wire.StackEntry{Truncated: true, Frames: []wire.Frame{{Offset: 0x120001234}, {Image: wiretest.Key(1), Offset: 8}}, Count: 3})
	b.Normalize()
	out, err := cl.Propose(ctx, ds, nil)
	if err != nil {
		t.Fatal(err)
	}
	allOutcomes(t, out, storage.Applied)
	c.converged()
	db := c.reps[c.leader()].DB()
	checkPages(t, cl, "stacks", []storage.Query{{}, {Hosts: []string{"alpha2"}}, {Epochs: []uint64{1}, Events: []uint8{1}}},
		func(q storage.Query, w io.Writer) error {
			return db.Stacks(t.Context(), q, func(st *storage.Stack, ev uint8, host string, n uint64) error {
				_, err := fmt.Fprintln(w, st.ID, st.Truncated, st.Frames, ev, host, n)
				return err
			})
		},
		func(q storage.Query, linearizable bool, w io.Writer) error {
			return cl.Stacks(ctx, q, linearizable, func(st *storage.Stack, ev uint8, host string, n uint64) error {
				_, err := fmt.Fprintln(w, st.ID, st.Truncated, st.Frames, ev, host, n)
				return err
			})
		})
}

// checkPages requires a skip-paged query, through the client with the
// server's page size (linearizable) and with pages of 7 rows, to list for
// each of qs the rows the database lists, and some: direct and client
// write the rows, one a line.
func checkPages(t *testing.T, cl *Client, what string, qs []storage.Query,
	direct func(q storage.Query, w io.Writer) error, client func(q storage.Query, linearizable bool, w io.Writer) error) {
	t.Helper()
	for _, q := range qs {
		var want strings.Builder
		if err := direct(q, &want); err != nil {
			t.Fatal(err)
		}
		for _, page := range []int{0, 7} {
			cl.PageRows = page
			var got strings.Builder
			if err := client(q, page == 0, &got); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() || got.Len() == 0 {
				t.Fatalf("client %s %+v (page %d) differ from the database's:\n%s\nwant\n%s", what, q, page, got.String(), want.String())
			}
		}
	}
}
