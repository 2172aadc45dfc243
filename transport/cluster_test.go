package transport

import (
	"cmp"
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dcpi/transport/natstest"
	"dcpi/wire"
)

// startTestServer runs a test server with the message size limit of the
// server dcpi embeds (maxPayload 0: DefaultMaxPayload).
func startTestServer(t testing.TB, maxPayload int32) *natstest.Server {
	t.Helper()
	return natstest.StartServer(t, natstest.Options{MaxPayload: cmp.Or(maxPayload, DefaultMaxPayload)})
}

// connect opens a client that retries fast, closed at the test's end.
func connect(t testing.TB, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := Connect(ConnConfig{URLs: []string{url}, Name: t.Name(), ReconnectWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func ensure(t testing.TB, js jetstream.JetStream) {
	t.Helper()
	if err := EnsureStream(testCtx(t, 10*time.Second), js, 1); err != nil {
		t.Fatal(err)
	}
}

func newTestPublisher(t testing.TB, nc *nats.Conn, host string, maxBytes int) *Publisher {
	t.Helper()
	p, err := NewPublisher(nc, PublisherConfig{Host: host, MaxBufferedBytes: maxBytes,
		AckTimeout: time.Second, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = p.Close(ctx)
	})
	return p
}

func flush(t testing.TB, p *Publisher, d time.Duration) {
	t.Helper()
	if err := p.Flush(testCtx(t, d)); err != nil {
		t.Fatalf("flush: %v (stats %+v)", err, p.Stats())
	}
}

// streamMsgs is the number of messages the batch stream holds.
func streamMsgs(t testing.TB, js jetstream.JetStream) uint64 {
	t.Helper()
	s, err := js.Stream(testCtx(t, 5*time.Second), StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(testCtx(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// drain fetches until n deliveries arrived, acking each good one, then
// checks that nothing more comes.
func drain(t testing.TB, c *Consumer, n int) []Delivery {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	var out []Delivery
	for len(out) < n {
		ds, err := c.Fetch(ctx, 100, 500*time.Millisecond)
		if err != nil {
			t.Fatalf("fetch after %d of %d: %v", len(out), n, err)
		}
		for i := range ds {
			if ds[i].Err != nil {
				t.Fatalf("delivery %d: %v", ds[i].StreamSeq, ds[i].Err)
			}
			if err := ds[i].Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, ds...)
	}
	if more, err := c.Fetch(ctx, 10, 200*time.Millisecond); err != nil || len(more) > 0 {
		t.Fatalf("after %d deliveries: %d more (%v)", n, len(more), err)
	}
	return out
}

// checkOrder checks that deliveries hold each (cpu) sequence 1..n exactly
// once and in order, and returns the batches by (cpu, seq).
func checkOrder(t testing.TB, ds []Delivery) map[[2]uint64]*wire.Batch {
	t.Helper()
	next := map[uint16]uint64{}
	got := map[[2]uint64]*wire.Batch{}
	for _, d := range ds {
		b := d.Batch
		if want := next[b.CPU] + 1; b.Seq != want {
			t.Fatalf("cpu %d: seq %d, want %d (stream seq %d)", b.CPU, b.Seq, want, d.StreamSeq)
		}
		next[b.CPU] = b.Seq
		got[[2]uint64{uint64(b.CPU), b.Seq}] = b
	}
	return got
}
