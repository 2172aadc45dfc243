package coordinator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dcpi/internal/hotlist"
	"dcpi/storage"
	"dcpi/wire"
	"dcpi/wire/coordproto"
)

// valuesRec is a value record of host with seq, a load whose latency is
// 3 or 143 cycles, offered n times.
func valuesRec(host string, epoch, seq uint64, n int) *wire.ValuesRecord {
	var l hotlist.List
	coin := hotlist.NewCoin(seq)
	for i := range n {
		l.Offer([]uint64{3, 143}[i%2], coin)
	}
	return &wire.ValuesRecord{Version: wire.ValuesVersion, Host: host, Epoch: epoch, Seq: seq, Module: "loadlat",
		Stats: wire.ValueStats{Interrupts: uint64(n + 1), Completed: uint64(n), GaveUp: map[string]uint64{"pal": 1}, Values: uint64(n)},
		Lists: []wire.ValueList{{Image: imgKey(1), Offset: 0x40, Kind: 1, List: l}}}
}

// dumpValues is a database's value tables as the queries see them.
func dumpValues(t testing.TB, db *storage.DB, hosts ...string) string {
	t.Helper()
	var b strings.Builder
	lists, err := db.ValueLists(t.Context(), storage.ValueQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lists {
		fmt.Fprintf(&b, "list %v %#x %d %x\n", l.Image, l.Offset, l.Kind, l.List.AppendBinary(nil))
	}
	mods, s, err := db.ValueTotals(t.Context(), storage.ValueQuery{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "totals %v %+v\n", mods, s)
	for _, h := range hosts {
		seq, err := db.ValuesApplied(h)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "applied %s %d\n", h, seq)
	}
	return b.String()
}

// TestFSMIngestValues: a value record is applied once — a redelivery in a
// new entry is a Duplicate and changes nothing, a record after a missing
// one is a Gap — and a snapshot restored into another replica holds the
// value tables; commands with a bad run or record are refused.
func TestFSMIngestValues(t *testing.T) {
	f := openTestFSM(t)
	idx := uint64(0)
	apply := func(c Command, want storage.Outcome) {
		t.Helper()
		idx++
		if o, ok := mustApply(t, f, idx, c).(storage.Outcome); !ok || o != want {
			t.Fatalf("entry %d: %v, want %v", idx, o, want)
		}
	}
	r1, r2, r3 := valuesRec("h", 1, 1, 40), valuesRec("h", 1, 2, 30), valuesRec("h", 2, 3, 20)
	apply(&IngestValues{First: 1, Record: r1}, storage.Applied)
	before := dumpValues(t, f.DB(), "h")
	apply(&IngestValues{First: 1, Record: r1}, storage.Duplicate)
	if after := dumpValues(t, f.DB(), "h"); after != before {
		t.Fatalf("a redelivery changed the values:\n%s\nvs\n%s", after, before)
	}
	apply(&IngestValues{First: 3, Record: r3}, storage.Gap)
	if after := dumpValues(t, f.DB(), "h"); after != before {
		t.Fatalf("a gap changed the values")
	}
	apply(&IngestValues{First: 2, Record: r2}, storage.Applied)
	apply(&IngestValues{First: 3, Record: r3}, storage.Applied)
	want := dumpValues(t, f.DB(), "h")
	if !strings.Contains(want, "applied h 3") || !strings.Contains(want, "Interrupts:93") {
		t.Fatalf("values after three records:\n%s", want)
	}

	snap, err := f.Snapshot()
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
	if got := dumpValues(t, dst.DB(), "h"); got != want {
		t.Fatalf("restored values differ:\n%s\nwant\n%s", got, want)
	}

	bad := *r1
	bad.Version = 2
	for _, c := range []Command{&IngestValues{First: 0, Record: r1}, &IngestValues{First: 2, Record: r1}, &IngestValues{First: 1},
		&IngestValues{First: 1, Record: &bad}} {
		if _, err := EncodeCommand(c); !errors.Is(err, ErrBadCommand) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	// A log entry whose record is of another version: refused, nothing
	// applied.
	good, err := EncodeCommand(&IngestValues{First: 4, Record: valuesRec("h", 2, 4, 5)})
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(good, []byte("DCPV"))
	corrupt := bytes.Clone(good)
	corrupt[i+5] = 9 // the record's version
	if _, err := DecodeCommand(corrupt); !errors.Is(err, ErrBadCommand) || !errors.Is(err, wire.ErrVersion) {
		t.Errorf("a record of version 9 in a command: %v", err)
	}
}

// TestClusterValues: through a 3-replica group, the leader commits value
// records (Client.IngestValues: Applied, then Duplicate), any replica
// answers the values queries, paged, with the host filter, and the
// leader's ValuesApplied says where a restarted node resumes; a request
// with a record of another version is a bad request.
func TestClusterValues(t *testing.T) {
	c := newCluster(t, 3)
	nc := connect(t, c.url)
	cl := NewClient(nc)
	cl.PageRows = 1 // every list a page of its own
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, h := range []string{"a", "b"} {
		for seq := uint64(1); seq <= 2; seq++ {
			r := valuesRec(h, 1, seq, int(10*seq))
			r.Lists = append(r.Lists, wire.ValueList{Image: imgKey(2), Offset: seq, Kind: 1, List: r.Lists[0].List.Clone()})
			if o, err := cl.IngestValues(ctx, seq, r); err != nil || o != storage.Applied {
				t.Fatalf("%s/%d: %v, %v", h, seq, o, err)
			}
		}
	}
	if o, err := cl.IngestValues(ctx, 1, valuesRec("a", 1, 1, 10)); err != nil || o != storage.Duplicate {
		t.Fatalf("redelivery: %v, %v", o, err)
	}
	if o, err := cl.IngestValues(ctx, 4, valuesRec("a", 1, 4, 10)); err != nil || o != storage.Gap {
		t.Fatalf("gap: %v, %v", o, err)
	}
	if seq, err := cl.ValuesApplied(ctx, "a"); err != nil || seq != 2 {
		t.Fatalf("ValuesApplied(a): %d, %v", seq, err)
	}
	lists, err := cl.ValueLists(ctx, storage.Query{}, true)
	if err != nil || len(lists) != 3 {
		t.Fatalf("fleet lists: %d, %v", len(lists), err)
	}
	if lists[0].List.N != 2*(10+20) {
		t.Errorf("fleet list N %d, want %d", lists[0].List.N, 2*(10+20))
	}
	mods, s, err := cl.ValueTotals(ctx, storage.Query{Hosts: []string{"b"}}, true)
	if err != nil || s.Interrupts != 11+21 || len(mods) != 1 || mods[0] != "loadlat" || s.GaveUp["pal"] != 2 {
		t.Fatalf("totals of b: %v %+v %v", mods, s, err)
	}
	hostLists, err := cl.ValueLists(ctx, storage.Query{Hosts: []string{"b"}, Epochs: []uint64{1}}, false)
	if err != nil || len(hostLists) != 3 || hostLists[0].List.N != 30 {
		t.Fatalf("b's lists: %+v, %v", hostLists, err)
	}
	data, _ := encodeIngestValues(1, valuesRec("c", 1, 1, 3))
	i := bytes.Index(data, []byte("DCPV"))
	data[i+5] = 9
	msg, err := nc.Request(coordproto.SubjectIngestValues, data, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Header.Get(HeaderErrorCode) != codeBadRequest || !strings.Contains(msg.Header.Get(HeaderError), "version") {
		t.Errorf("record of version 9: reply %q %q", msg.Header.Get(HeaderErrorCode), msg.Header.Get(HeaderError))
	}
	if seq, _ := cl.ValuesApplied(ctx, "c"); seq != 0 {
		t.Errorf("the refused record was applied: c at %d", seq)
	}
}
