package transport

import (
	"dcpi/wire/delivery"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"dcpi/aggregator"
	"dcpi/wire"
)

// TestBatchSource: what the aggregator reads through BatchSource is what
// the Consumer decoded — a good batch with no error, a forged one with
// ErrForged and no batch — and settling through delivery.Batch's
// methods reaches the stream (Nak hands a message back; Ack and Term let
// go of it);
// images come from the object store.
func TestBatchSource(t *testing.T) {
	ts := startTestServer(t, 0)
	nc, js := connect(t, ts.URL())
	ensure(t, js)

	key, err := wire.NewImageKey(wire.KindBuildID, []byte("batch-source-test"))
	if err != nil {
		t.Fatal(err)
	}
	img := &wire.ImageRecord{Version: wire.Version, Key: key, Path: "/bin/prog", Size: 4096, TextStart: 0x1000, TextEnd: 0x2000}
	p := newTestPublisher(t, nc, "alpha0", 0)
	if err := p.PublishImage(img); err != nil {
		t.Fatal(err)
	}
	flush(t, p, 10*time.Second)

	good := &wire.Batch{Version: wire.Version, Host: "alpha0", Epoch: 1, Seq: 1,
		Entries: []wire.Entry{{Image: key, Offset: 0x40, Count: 3}}}
	good.Normalize()
	forged := &wire.Batch{Version: wire.Version, Host: "alpha1", Epoch: 1, Seq: 1}
	forged.Normalize()
	subject, _ := BatchSubject("alpha0", 0)
	for _, b := range []*wire.Batch{good, forged} {
		data, err := b.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.PublishMsg(testCtx(t, 5*time.Second), &nats.Msg{Subject: subject, Data: data}); err != nil {
			t.Fatal(err)
		}
	}

	c, err := NewConsumer(testCtx(t, 5*time.Second), js, ConsumerConfig{AckWait: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var src aggregator.Source = BatchSource{Consumer: c, JS: js}
	ctx := testCtx(t, 10*time.Second)
	var ds []delivery.Batch
	for len(ds) < 2 {
		more, err := src.Fetch(ctx, 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, more...)
	}
	if len(ds) != 2 {
		t.Fatalf("%d deliveries, want 2", len(ds))
	}
	if ds[0].Err() != nil || !reflect.DeepEqual(ds[0].Batch(), good) {
		t.Errorf("first delivery: batch %+v, err %v; want the good batch", ds[0].Batch(), ds[0].Err())
	}
	if !errors.Is(ds[1].Err(), ErrForged) || ds[1].Batch() != nil {
		t.Errorf("second delivery: batch %+v, err %v; want ErrForged and no batch", ds[1].Batch(), ds[1].Err())
	}
	if err := ds[1].Term(ds[1].Err().Error()); err != nil {
		t.Fatal(err)
	}
	// Nak hands the good batch back at once; then it is acked.
	if err := ds[0].Nak(0); err != nil {
		t.Fatal(err)
	}
	again, err := src.Fetch(ctx, 10, time.Second)
	if err != nil || len(again) != 1 || !reflect.DeepEqual(again[0].Batch(), good) {
		t.Fatalf("after nak: %d deliveries (%v), want the good batch again", len(again), err)
	}
	if err := again[0].Ack(ctx); err != nil {
		t.Fatal(err)
	}
	// Past AckWait nothing comes back: both were settled on the server.
	if more, err := src.Fetch(ctx, 10, time.Second); err != nil || len(more) != 0 {
		t.Errorf("after ack and term: %d deliveries (%v)", len(more), err)
	}
	if n := streamMsgs(t, js); n != 0 {
		t.Errorf("stream holds %d messages, want 0", n)
	}

	images := BatchSource{Consumer: c, JS: js}
	if rec, err := images.FetchImage(ctx, key); err != nil || !reflect.DeepEqual(rec, img) {
		t.Errorf("image: %+v, %v; want %+v", rec, err, img)
	}
	other, _ := wire.NewImageKey(wire.KindBuildID, []byte("never published"))
	if _, err := images.FetchImage(ctx, other); !errors.Is(err, ErrImageNotFound) {
		t.Errorf("absent image: %v, want ErrImageNotFound", err)
	}
}
