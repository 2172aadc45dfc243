package coordinator

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dcpi/internal/testrand"
	"dcpi/storage"
	"dcpi/wire"
	"dcpi/wire/wiretest"
)

func testRand(t testing.TB) *rand.Rand { return testrand.New(t) }

// imgKey is the i-th image key of the tests' small space.
var imgKey = wiretest.Key

// randDelta builds a normalized delta of stream (host, cpu) covering seqs
// [first, last] in epoch, of entries entries (fewer where two draws fall
// together) over eight images.
func randDelta(r *rand.Rand, host string, cpu uint16, first, last, epoch uint64, entries int) storage.Delta {
	b := wiretest.RandBatch(r, wiretest.Options{Host: host, CPU: cpu, Seq: first, Epoch: epoch,
		MinEntries: entries, MaxEntries: entries, Images: wiretest.Keys(8), Events: 2, Offsets: 512, MaxCount: 40})
	return storage.Delta{Batch: b, Last: last}
}

func imageRec(i int) *wire.ImageRecord {
	return &wire.ImageRecord{Version: wire.Version, Key: imgKey(i), Path: fmt.Sprintf("/bin/prog%d", i), Size: 4096, TextStart: 0x1000, TextEnd: 0x2000,
		Symbols: []wire.Symbol{{Name: "main", Addr: 0x1000, Size: 0x100}}}
}

// dumpDB renders everything a query can see, for comparing replicas.
func dumpDB(t testing.TB, db *storage.DB) string {
	t.Helper()
	var b strings.Builder
	err := db.Records(storage.Query{}, func(r storage.Record) error {
		fmt.Fprintf(&b, "rec %d %d %v %d %s %d = %d\n", r.Epoch, r.Event, r.Image, r.Offset, r.Host, r.PID, r.Count)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Profile(t.Context(), storage.Query{}, func(img wire.ImageKey, off uint64, ev uint8, host string, n uint64) error {
		fmt.Fprintf(&b, "prof %v %d %d = %d\n", img, off, ev, n)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s, u, d, err := db.Totals(storage.Query{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "totals %d %d %v\n", s, u, d)
	err = db.Stacks(t.Context(), storage.Query{Hosts: mustHosts(t, db)}, func(st *storage.Stack, ev uint8, host string, n uint64) error {
		fmt.Fprintf(&b, "stack %016x %v %v %d %s = %d\n", st.ID, st.Truncated, st.Frames, ev, host, n)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ss, sd, err := db.StackTotals(storage.Query{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "stack totals %d %v\n", ss, sd)
	eps, err := db.Epochs()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range eps {
		fmt.Fprintf(&b, "epoch %d %v %v %v\n", e.Number, e.State, e.Start.UnixNano(), e.End.UnixNano())
		acks, err := db.EpochAcks(e.Number)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range acks {
			fmt.Fprintf(&b, "  ack %s %v late=%v at=%d\n", a.Host, a.LastSeq, a.Late, a.At.UnixNano())
		}
	}
	nodes, err := db.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		fmt.Fprintf(&b, "node %s %d %v %d %d\n", n.Host, n.CPUs, n.Labels, n.Registered.UnixNano(), n.Updated.UnixNano())
	}
	hosts, err := db.Hosts()
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		for _, cpu := range []uint16{0, 1, 2, 3, wire.AllCPUs} {
			if a, _ := db.Applied(h, cpu); a != 0 {
				fmt.Fprintf(&b, "applied %s %d = %d\n", h, cpu, a)
			}
		}
	}
	for i := range 8 {
		if r, err := db.Image(t.Context(), imgKey(i)); err == nil {
			fmt.Fprintf(&b, "image %v %s\n", r.Key, r.Path)
		}
	}
	return b.String()
}

func openTestFSM(t testing.TB) *FSM {
	t.Helper()
	f, err := OpenFSM(filepath.Join(t.TempDir(), "fsm"), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// mustApply applies c as log entry index and returns the result, failing
// on an error result.
func mustApply(t testing.TB, f *FSM, index uint64, c Command) any {
	t.Helper()
	b, err := EncodeCommand(c)
	if err != nil {
		t.Fatalf("encode %T: %v", c, err)
	}
	res := f.ApplyCommand(index, b)
	if err, ok := res.(error); ok {
		t.Fatalf("apply %T at %d: %v", c, index, err)
	}
	return res
}

func outcomes(res any) []storage.Outcome {
	o, _ := res.([]storage.Outcome)
	return slices.Clone(o)
}

func mustHosts(t testing.TB, db *storage.DB) []string {
	t.Helper()
	hosts, err := db.Hosts()
	if err != nil {
		t.Fatal(err)
	}
	if hosts == nil {
		hosts = []string{}
	}
	return hosts
}
