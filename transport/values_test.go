package transport

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"dcpi/aggregator"
	"dcpi/coordinator"
	"dcpi/internal/hotlist"
	"dcpi/internal/slogf"
	"dcpi/storage"
	"dcpi/wire"
	"dcpi/wire/wiretest"
)

func valuesRecord(host string, epoch, seq uint64, n int) *wire.ValuesRecord {
	var l hotlist.List
	coin := hotlist.NewCoin(seq)
	for i := range n {
		l.Offer([]uint64{3, 9, 143}[i%3], coin)
	}
	return &wire.ValuesRecord{Version: wire.ValuesVersion, Host: host, Epoch: epoch, Seq: seq, Module: "loadlat",
		Stats: wire.ValueStats{Interrupts: uint64(n + 2), NoContext: 1, Completed: uint64(n), GaveUp: map[string]uint64{"fault": 1}, Values: uint64(n)},
		Lists: []wire.ValueList{{Image: wiretest.Key(1), Offset: 0x40 + 4*(seq%3), Kind: 1, List: l}}}
}

func TestValuesSubject(t *testing.T) {
	if s, err := ValuesSubject("alpha1"); err != nil || s != "dcpi.values.alpha1" {
		t.Fatalf("ValuesSubject = %q, %v", s, err)
	}
	if _, err := ValuesSubject("a.b"); !errors.Is(err, ErrHost) {
		t.Errorf("ValuesSubject(a.b): %v", err)
	}
	data, _ := valuesRecord("a", 1, 1, 5).MarshalBinary()
	if _, err := decodeValues("dcpi.values.b", data); !errors.Is(err, ErrForgedValues) {
		t.Errorf("record of a on b's subject: %v", err)
	}
	if _, err := decodeValues("dcpi.paths.a", data); !errors.Is(err, ErrSubject) {
		t.Errorf("record on a path subject: %v", err)
	}
	old := bytes.Clone(data)
	old[bytes.Index(old, []byte("DCPV"))+5] = 2
	if _, err := decodeValues("dcpi.values.a", old); !errors.Is(err, wire.ErrVersion) {
		t.Errorf("record of another version: %v", err)
	}
	if r, err := decodeValues("dcpi.values.a", data); err != nil || r.Seq != 1 {
		t.Errorf("decode: %v", err)
	}
}

// TestValuesEndToEnd: a host's Publisher sends value records in order on
// DCPI_VALUES; LastValues reads the newest; two aggregators' values
// forwarders share the consumer, merge runs and commit them through a
// one-replica coordinator; a record of another version, a forged one and
// a garbled one on the host's subject are terminated and counted, never
// stored; a record resent under another message ID (past the stream's
// duplicate window) is a Duplicate. The stored accounting is every
// record's exactly once, and the stream is left empty.
func TestValuesEndToEnd(t *testing.T) {
	srv := startTestServer(t, 0)
	nc, js := connect(t, srv.URL())
	ctx := testCtx(t, 60*time.Second)
	if err := EnsureValuesStream(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	if r, err := LastValues(ctx, js, "a"); err != nil || r != nil {
		t.Fatalf("LastValues of an empty stream: %v, %v", r, err)
	}
	pub, err := NewPublisher(nc, PublisherConfig{Host: "a"})
	if err != nil {
		t.Fatal(err)
	}
	var want wire.ValueStats
	for seq := uint64(1); seq <= 6; seq++ {
		r := valuesRecord("a", 1+seq/4, seq, int(20*seq))
		want.Add(r.Stats)
		if err := pub.PublishValues(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.PublishValues(valuesRecord("b", 1, 1, 3)); err == nil {
		t.Error("the publisher of a sent b's record")
	}
	if err := pub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := pub.Stats(); st.ValuesAccepted != 6 || st.ValuesPublished != 6 || st.QueuedValues != 0 {
		t.Fatalf("publisher stats %+v", st)
	}
	if r, err := LastValues(ctx, js, "a"); err != nil || r == nil || r.Seq != 6 {
		t.Fatalf("LastValues: %+v, %v", r, err)
	}
	// Bad input on a's subject, and a resend of record 2 under a new ID.
	data, _ := valuesRecord("a", 1, 7, 5).MarshalBinary()
	old := bytes.Clone(data)
	old[bytes.Index(old, []byte("DCPV"))+5] = 2
	forged, _ := valuesRecord("b", 1, 1, 5).MarshalBinary()
	resend, _ := valuesRecord("a", 1, 2, 40).MarshalBinary()
	for _, d := range [][]byte{old, forged, []byte("garbage"), resend} {
		if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: "dcpi.values.a", Data: d}); err != nil {
			t.Fatal(err)
		}
	}

	cnc, _ := connect(t, srv.URL())
	rep, err := coordinator.Start(coordinator.Config{ID: "c1", RaftAddr: "127.0.0.1:0", DataDir: filepath.Join(t.TempDir(), "c1"),
		Bootstrap: []coordinator.Peer{{ID: "c1"}}, NATS: cnc, RaftTimeout: 300 * time.Millisecond, Logger: slogf.Test(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Shutdown()
	client := coordinator.NewClient(nc)
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var fws []*aggregator.ValuesForwarder
	for range 2 {
		src, err := NewValuesSource(ctx, js, 0)
		if err != nil {
			t.Fatal(err)
		}
		f := aggregator.NewValuesForwarder(aggregator.Config{FetchMax: 3, FetchWait: 100 * time.Millisecond, GapDelay: 50 * time.Millisecond, Logger: slogf.Test(t)}, src, client)
		fws = append(fws, f)
		wg.Add(1)
		go func() { defer wg.Done(); f.Run(cctx) }()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		seq, err := client.ValuesApplied(ctx, "a")
		s, _ := js.Stream(ctx, ValuesStreamName)
		info, ierr := s.Info(ctx)
		if err == nil && ierr == nil && seq == 6 && info.State.Msgs == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("applied %d (%v), stream %+v (%v)", seq, err, info, ierr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	_, got, err := client.ValueTotals(ctx, storage.Query{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if got.Interrupts != want.Interrupts || got.Completed != want.Completed || got.GaveUp["fault"] != want.GaveUp["fault"] {
		t.Fatalf("stored %+v, published %+v", got, want)
	}
	var rejected, acked uint64
	for _, f := range fws {
		s := f.Stats()
		rejected += s.Rejected
		acked += s.Acked
	}
	if rejected != 3 || acked != 7 {
		t.Fatalf("forwarders rejected %d (want 3) and acknowledged %d (want 7: six records and the resend)", rejected, acked)
	}
}
