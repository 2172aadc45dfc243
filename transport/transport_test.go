package transport

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// TestRoundTrip publishes images and batches from two hosts, consumes them
// and compares; an image published twice, and by a second host, is
// uploaded once.
func TestRoundTrip(t *testing.T) {
	r := testRand(t)
	ts := startTestServer(t, 0)
	nc, js := connect(t, ts.URL())
	ensure(t, js)
	ensure(t, js) // idempotent

	keys := []wire.ImageKey{wiretest.RandKey(r), wiretest.RandKey(r)}
	imgs := []*wire.ImageRecord{genImage(r, keys[0], 50), genImage(r, keys[1], 3)}
	pa := newTestPublisher(t, nc, "alpha0", 0)
	pb := newTestPublisher(t, nc, "alpha1", 0)
	want := map[string][]*wire.Batch{}
	for _, img := range imgs {
		if err := pa.PublishImage(img); err != nil {
			t.Fatal(err)
		}
	}
	if err := pa.PublishImage(imgs[0]); err != nil { // again: not queued again
		t.Fatal(err)
	}
	for cpu := range uint16(2) {
		for seq := uint64(1); seq <= 5; seq++ {
			b := streamBatch(r, "alpha0", 7, cpu, seq, 200, keys)
			want["alpha0"] = append(want["alpha0"], b)
			if err := pa.PublishBatch(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	flush(t, pa, 10*time.Second)
	if err := pb.PublishImage(imgs[0]); err != nil {
		t.Fatal(err)
	}
	b := streamBatch(r, "alpha1", 7, wire.AllCPUs, 1, 10, keys)
	want["alpha1"] = append(want["alpha1"], b)
	if err := pb.PublishBatch(b); err != nil {
		t.Fatal(err)
	}
	flush(t, pb, 10*time.Second)

	sa, sb := pa.Stats(), pb.Stats()
	if sa.ImagesAccepted != 2 || sa.ImagesUploaded != 2 || sb.ImagesUploaded != 0 || sb.ImagesPresent != 1 {
		t.Errorf("images: alpha0 %+v, alpha1 %+v; want 2 uploaded by alpha0, 1 found present by alpha1", sa, sb)
	}
	if sa.BatchesPublished != 10 || sa.QueuedBytes != 0 || sa.QueuedBatches != 0 {
		t.Errorf("alpha0 stats %+v", sa)
	}
	// Each small image is one chunk and one meta message: a second
	// upload would add two.
	objStream, err := js.Stream(testCtx(t, 5*time.Second), "OBJ_"+ImageBucket)
	if err != nil {
		t.Fatal(err)
	}
	info, err := objStream.Info(testCtx(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 4 {
		t.Errorf("object store holds %d messages, want 4 (2 images × chunk + meta)", info.State.Msgs)
	}

	c, err := NewConsumer(testCtx(t, 5*time.Second), js, ConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ds := drain(t, c, 11)
	got := map[string][]*wire.Batch{}
	for _, d := range ds {
		if d.Host != d.Batch.Host || d.CPU != d.Batch.CPU || d.Subject != batchSubject(d.Host, d.CPU) ||
			d.NumDelivered != 1 || d.StreamSeq == 0 ||
			d.MsgID != msgID(d.Batch.Host, d.Batch.Epoch, d.Batch.CPU, d.Batch.Seq) {
			t.Errorf("delivery metadata %+v", d)
		}
		got[d.Host] = append(got[d.Host], d.Batch)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("batches differ:\n got %+v\nwant %+v", got, want)
	}
	if n := streamMsgs(t, js); n != 0 {
		t.Errorf("stream holds %d messages after every ack, want 0 (work queue)", n)
	}

	for _, img := range imgs {
		rec, err := FetchImage(testCtx(t, 5*time.Second), js, img.Key)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(rec, img) {
			t.Errorf("image %s: got %+v, want %+v", img.Key, rec, img)
		}
	}
	if _, err := FetchImage(testCtx(t, 5*time.Second), js, wiretest.RandKey(r)); !errors.Is(err, ErrImageNotFound) {
		t.Errorf("absent image: %v, want ErrImageNotFound", err)
	}
}

// TestDuplicateMsgID: the stream drops a message whose Nats-Msg-Id it has
// seen, whether resent raw or by a publisher that restarted.
func TestDuplicateMsgID(t *testing.T) {
	r := testRand(t)
	ts := startTestServer(t, 0)
	nc, js := connect(t, ts.URL())
	ensure(t, js)
	b := streamBatch(r, "alpha0", 1, 0, 1, 20, []wire.ImageKey{wiretest.RandKey(r)})
	data, err := b.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	subject, _ := BatchSubject("alpha0", 0)
	id := msgID("alpha0", 1, 0, 1)
	for i, wantDup := range []bool{false, true} {
		ack, err := js.PublishMsg(testCtx(t, 5*time.Second), &nats.Msg{Subject: subject, Data: data}, jetstream.WithMsgID(id))
		if err != nil {
			t.Fatal(err)
		}
		if ack.Duplicate != wantDup {
			t.Errorf("publish %d: duplicate %v, want %v", i, ack.Duplicate, wantDup)
		}
	}
	p := newTestPublisher(t, nc, "alpha0", 0)
	if err := p.PublishBatch(b); err != nil {
		t.Fatal(err)
	}
	flush(t, p, 5*time.Second)
	if s := p.Stats(); s.DuplicateAcks != 1 || s.BatchesPublished != 1 {
		t.Errorf("publisher stats %+v, want one duplicate ack", s)
	}
	if n := streamMsgs(t, js); n != 1 {
		t.Errorf("stream holds %d messages, want 1", n)
	}
}

// TestServerDown: while the server is down PublishBatch keeps returning
// nil at once; after a restart on the same Dir and port every batch
// arrives, in order, exactly once.
func TestServerDown(t *testing.T) {
	r := testRand(t)
	ts := startTestServer(t, 0)
	nc, js := connect(t, ts.URL())
	ensure(t, js)
	keys := []wire.ImageKey{wiretest.RandKey(r)}
	p := newTestPublisher(t, nc, "alpha0", 0)
	var want []*wire.Batch
	publish := func(seq uint64) time.Duration {
		b := streamBatch(r, "alpha0", 1, uint16(seq%3), seq/3+1, 100, keys)
		want = append(want, b)
		start := time.Now()
		if err := p.PublishBatch(b); err != nil {
			t.Fatalf("batch %d: %v", seq, err)
		}
		return time.Since(start)
	}
	for seq := range uint64(15) {
		publish(seq)
	}
	flush(t, p, 10*time.Second)

	ts.Stop()
	var slowest time.Duration
	for seq := uint64(15); seq < 60; seq++ {
		slowest = max(slowest, publish(seq))
		if seq == 30 {
			if err := p.PublishImage(genImage(r, keys[0], 5)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if slowest > 200*time.Millisecond {
		t.Errorf("PublishBatch took %v with the server down", slowest)
	}
	// The attempt in flight at the shutdown may wait out its AckTimeout
	// before it fails.
	for deadline := time.Now().Add(5 * time.Second); p.Stats().Retries < 2 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if s := p.Stats(); s.Retries < 2 || s.QueuedBatches != 45 || s.LastError == "" {
		t.Errorf("while down: stats %+v, want retries and 45 queued batches", s)
	}

	ts.Restart()
	flush(t, p, 30*time.Second)
	s := p.Stats()
	if s.BatchesPublished != 60 || s.Tombstones != 0 || s.ImagesUploaded != 1 || s.SamplesPublished != s.SamplesAccepted {
		t.Errorf("after restart: stats %+v", s)
	}
	if n := streamMsgs(t, js); n != 60 {
		t.Errorf("stream holds %d messages, want 60", n)
	}
	c, err := NewConsumer(testCtx(t, 5*time.Second), js, ConsumerConfig{Hosts: []string{"alpha0"}})
	if err != nil {
		t.Fatal(err)
	}
	got := checkOrder(t, drain(t, c, 60))
	for _, b := range want {
		if g := got[[2]uint64{uint64(b.CPU), b.Seq}]; !reflect.DeepEqual(g, b) {
			t.Errorf("cpu %d seq %d: got %+v, want %+v", b.CPU, b.Seq, g, b)
		}
	}
	if _, err := FetchImage(testCtx(t, 5*time.Second), js, keys[0]); err != nil {
		t.Errorf("image published while down: %v", err)
	}
}

// TestOverflow: a node that starts before the server, with a queue bound far
// smaller than what it produces, replaces old batches by tombstones; once
// the server is up every sequence arrives, and samples delivered plus
// "transport.buffer_full" equal samples published, exactly.
func TestOverflow(t *testing.T) {
	r := testRand(t)
	ts := startTestServer(t, 0)
	_, js0 := connect(t, ts.URL())
	ensure(t, js0)
	ts.Stop()

	nc, js := connect(t, ts.URL()) // the server is down: Connect retries
	// Room for about 180 of the 200 batches: the oldest become
	// tombstones, most stay whole.
	const maxBytes = 96 << 10
	p := newTestPublisher(t, nc, "alpha0", maxBytes)
	keys := []wire.ImageKey{wiretest.RandKey(r), wiretest.RandKey(r)}
	var produced, producedDrops uint64
	const n = 200
	for i := range n {
		cpu := uint16(i % 4)
		b := streamBatch(r, "alpha0", 2, cpu, uint64(i/4)+1, 120, keys)
		produced += b.Total()
		producedDrops += b.Drops[wire.DropOverflowFull]
		if err := p.PublishBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	s := p.Stats()
	if s.Tombstones == 0 || s.Drops[wire.DropBufferFull] == 0 || s.QueuedSamples == 0 {
		t.Fatalf("want some tombstones and some whole batches: %+v", s)
	}
	if s.QueuedBytes > maxBytes {
		t.Errorf("%d bytes queued, bound %d", s.QueuedBytes, maxBytes)
	}
	if s.SamplesAccepted != produced || s.SamplesAccepted != s.SamplesPublished+s.QueuedSamples+s.Drops[wire.DropBufferFull] {
		t.Fatalf("stats do not conserve: %+v (produced %d)", s, produced)
	}
	t.Logf("server down: %d batches queued in %d bytes, %d tombstones, %d of %d samples dropped",
		s.QueuedBatches, s.QueuedBytes, s.Tombstones, s.Drops[wire.DropBufferFull], produced)

	ts.Restart()
	flush(t, p, 30*time.Second)
	c, err := NewConsumer(testCtx(t, 5*time.Second), js, ConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ds := drain(t, c, n)
	checkOrder(t, ds)
	var delivered, bufferFull, tombs, overflow uint64
	for _, d := range ds {
		delivered += d.Batch.Total()
		bufferFull += d.Batch.Drops[wire.DropBufferFull]
		overflow += d.Batch.Drops[wire.DropOverflowFull]
		if d.Batch.Drops[wire.DropBufferFull] > 0 {
			tombs++
			if d.Batch.Entries != nil || d.Batch.Unknown != nil {
				t.Errorf("seq %d carries samples and %s", d.Batch.Seq, wire.DropBufferFull)
			}
		}
	}
	if delivered+bufferFull != produced {
		t.Errorf("delivered %d + %s %d = %d, produced %d", delivered, wire.DropBufferFull, bufferFull, delivered+bufferFull, produced)
	}
	if bufferFull != s.Drops[wire.DropBufferFull] || overflow != producedDrops {
		t.Errorf("drops delivered: %s %d (publisher counted %d), driver.overflow_full %d (produced %d)",
			wire.DropBufferFull, bufferFull, s.Drops[wire.DropBufferFull], overflow, producedDrops)
	}
	// A batch of no samples makes a tombstone without the counter.
	if tombs > s.Tombstones || tombs == 0 {
		t.Errorf("%d tombstones delivered, publisher made %d", tombs, s.Tombstones)
	}
}

// TestTooLarge: a batch larger than the server's maximum message is
// replaced by a tombstone counting "transport.too_large" instead of
// blocking the queue forever.
func TestTooLarge(t *testing.T) {
	r := testRand(t)
	ts := startTestServer(t, 16<<10)
	nc, js := connect(t, ts.URL())
	// The object store needs 128 KiB chunks, so create the stream alone.
	if _, err := js.CreateOrUpdateStream(testCtx(t, 5*time.Second), jetstream.StreamConfig{Name: StreamName,
		Subjects: []string{streamSubject}, Retention: jetstream.WorkQueuePolicy, Duplicates: DuplicateWindow}); err != nil {
		t.Fatal(err)
	}
	keys := []wire.ImageKey{wiretest.RandKey(r)}
	p := newTestPublisher(t, nc, "alpha0", 0)
	big := streamBatch(r, "alpha0", 1, 0, 1, 0, keys)
	for i := range 5000 {
		big.Entries = append(big.Entries, wire.Entry{Image: keys[0], Offset: uint64(i) * 4, Count: 3})
	}
	small := streamBatch(r, "alpha0", 1, 0, 2, 10, keys)
	for _, b := range []*wire.Batch{big, small} {
		if err := p.PublishBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, p, 10*time.Second)
	if s := p.Stats(); s.Drops[wire.DropTooLarge] != big.Total() || s.Tombstones != 1 || s.BatchesPublished != 2 {
		t.Errorf("stats %+v, want %s = %d", s, wire.DropTooLarge, big.Total())
	}
	c, err := NewConsumer(testCtx(t, 5*time.Second), js, ConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ds := drain(t, c, 2)
	checkOrder(t, ds)
	if tb := ds[0].Batch; tb.Entries != nil || tb.Drops[wire.DropTooLarge] != big.Total() {
		t.Errorf("tombstone %+v", tb)
	}
	if !reflect.DeepEqual(ds[1].Batch, small) {
		t.Errorf("second batch %+v, want %+v", ds[1].Batch, small)
	}
}

// TestBadDeliveries: payloads that are not batches, or batches of another
// host or CPU, come out of Fetch with Err set; Term keeps them from coming
// back.
func TestBadDeliveries(t *testing.T) {
	r := testRand(t)
	ts := startTestServer(t, 0)
	_, js := connect(t, ts.URL())
	ensure(t, js)
	keys := []wire.ImageKey{wiretest.RandKey(r)}
	good := streamBatch(r, "alpha0", 1, 0, 1, 10, keys)
	forged := streamBatch(r, "alpha1", 1, 0, 1, 10, keys)
	goodData, _ := good.MarshalBinary()
	forgedData, _ := forged.MarshalBinary()
	forgedCPU, _ := streamBatch(r, "alpha0", 1, 1, 1, 10, keys).MarshalBinary()
	imgData, _ := genImage(r, keys[0], 2).MarshalBinary()
	payloads := []struct {
		data []byte
		want error
	}{
		{goodData, nil},
		{forgedData, ErrForged},
		{forgedCPU, ErrForged}, // CPU 1's batch on CPU 0's subject
		{[]byte("not a batch"), wire.ErrMalformed},
		{nil, wire.ErrMalformed},
		{goodData[:len(goodData)/2], wire.ErrMalformed},
		{imgData, wire.ErrMalformed},
	}
	subject, _ := BatchSubject("alpha0", 0)
	for _, pl := range payloads {
		if _, err := js.PublishMsg(testCtx(t, 5*time.Second), &nats.Msg{Subject: subject, Data: pl.data}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := NewConsumer(testCtx(t, 5*time.Second), js, ConsumerConfig{AckWait: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 10*time.Second)
	seen := map[uint64]bool{}
	for len(seen) < len(payloads) {
		ds, err := c.Fetch(ctx, 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			// Published in order on an empty stream: stream seq i+1 is
			// payload i.
			i := int(d.StreamSeq) - 1
			if i < 0 || i >= len(payloads) || seen[d.StreamSeq] {
				t.Fatalf("unexpected delivery: stream seq %d, delivered %d times", d.StreamSeq, d.NumDelivered)
			}
			seen[d.StreamSeq] = true
			want := payloads[i].want
			switch {
			case want == nil && (d.Err != nil || !reflect.DeepEqual(d.Batch, good)):
				t.Errorf("payload %d: %v, want the good batch", i, d.Err)
			case want != nil && (!errors.Is(d.Err, want) || d.Batch != nil):
				t.Errorf("payload %d: err %v, batch %v; want %v", i, d.Err, d.Batch, want)
			}
			if d.Err != nil {
				t.Logf("payload %d: %v", i, d.Err)
				if err := d.Term(d.Err.Error()); err != nil {
					t.Fatal(err)
				}
			} else if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Past AckWait, nothing comes back, and the work queue has let go of
	// the Termed messages too (LastPublished relies on it).
	if more, err := c.Fetch(ctx, 10, time.Second); err != nil || len(more) != 0 {
		t.Errorf("after Term: %d deliveries (%v)", len(more), err)
	}
	if n := streamMsgs(t, js); n != 0 {
		t.Errorf("after Term: stream holds %d messages, want 0", n)
	}
}

// TestStartServerRestart: the server dcpi embeds takes messages of up to
// DefaultMaxPayload, and restarted on the same Dir and port it still holds
// what its stream held. (The other tests run natstest's server.)
func TestStartServerRestart(t *testing.T) {
	r := testRand(t)
	dir := t.TempDir()
	srv, err := StartServer(ServerConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Shutdown() }()
	port := srv.Port()
	nc, js := connect(t, srv.ClientURL())
	if nc.MaxPayload() != DefaultMaxPayload {
		t.Errorf("max payload %d, want %d", nc.MaxPayload(), DefaultMaxPayload)
	}
	ensure(t, js)
	p := newTestPublisher(t, nc, "alpha0", 0)
	for seq := uint64(1); seq <= 3; seq++ {
		if err := p.PublishBatch(streamBatch(r, "alpha0", 1, 0, seq, 20, wiretest.Keys(2))); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, p, 10*time.Second)
	srv.Shutdown()
	if srv, err = StartServer(ServerConfig{Dir: dir, Port: port}); err != nil {
		t.Fatalf("restart on port %d: %v", port, err)
	}
	_, js = connect(t, srv.ClientURL())
	if n := streamMsgs(t, js); n != 3 {
		t.Errorf("after the restart the stream holds %d messages, want 3", n)
	}
}

// TestConfigErrors: bad configuration gets a clear error, not a panic or a
// hang.
func TestConfigErrors(t *testing.T) {
	ts := startTestServer(t, 0)
	if _, err := StartServer(ServerConfig{Dir: t.TempDir(), Port: ts.Port()}); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("second server on port %d: %v, want a listen error", ts.Port(), err)
	}
	if _, err := StartServer(ServerConfig{}); err == nil {
		t.Error("server without Dir started")
	}
	if _, err := Connect(ConnConfig{}); err == nil {
		t.Error("connect without URLs")
	}
	if _, err := Connect(ConnConfig{URLs: []string{ts.URL()}, CertFile: "c.pem"}); err == nil {
		t.Error("connect with a certificate and no key")
	}
	nc, js := connect(t, ts.URL())
	for _, host := range []string{"", "a.b", "a*", "a>", "a b", "a\tb"} {
		if _, err := NewPublisher(nc, PublisherConfig{Host: host}); !errors.Is(err, ErrHost) {
			t.Errorf("publisher for host %q: %v, want ErrHost", host, err)
		}
	}
	if _, err := NewConsumer(testCtx(t, 5*time.Second), js, ConsumerConfig{Hosts: []string{"a.b"}}); !errors.Is(err, ErrHost) {
		t.Errorf("consumer for host a.b: %v, want ErrHost", err)
	}
	if err := EnsureStream(testCtx(t, 5*time.Second), js, 9); err == nil {
		t.Error("9 replicas accepted")
	}
	p := newTestPublisher(t, nc, "alpha0", 0)
	r := testRand(t)
	if err := p.PublishBatch(streamBatch(r, "alpha1", 1, 0, 1, 1, []wire.ImageKey{wiretest.RandKey(r)})); err == nil {
		t.Error("publisher of alpha0 took a batch of alpha1")
	}
	if err := p.PublishBatch(&wire.Batch{Version: wire.Version, Host: "alpha0"}); !errors.Is(err, wire.ErrInvalid) {
		t.Errorf("invalid batch: %v, want wire.ErrInvalid", err)
	}
	if err := p.Close(testCtx(t, time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := p.PublishBatch(streamBatch(r, "alpha0", 1, 0, 1, 1, []wire.ImageKey{wiretest.RandKey(r)})); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}

// TestStreamLater: a node may start before anyone created the stream; its
// batches wait in the queue and go once EnsureStream has run.
func TestStreamLater(t *testing.T) {
	r := testRand(t)
	ts := startTestServer(t, 0)
	nc, js := connect(t, ts.URL())
	p := newTestPublisher(t, nc, "alpha0", 0)
	keys := []wire.ImageKey{wiretest.RandKey(r)}
	if err := p.PublishImage(genImage(r, keys[0], 1)); err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 3; seq++ {
		if err := p.PublishBatch(streamBatch(r, "alpha0", 1, 0, seq, 10, keys)); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); p.Stats().Retries == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	s := p.Stats()
	if s.Retries == 0 || s.QueuedBatches != 3 {
		t.Fatalf("without a stream: %+v", s)
	}
	t.Logf("without a stream: %s", s.LastError)
	ensure(t, js)
	flush(t, p, 10*time.Second)
	if n := streamMsgs(t, js); n != 3 {
		t.Errorf("stream holds %d messages, want 3", n)
	}
}

// TestCloseAbandons: Close with the server unreachable gives up when its
// context ends and says what it abandoned.
func TestCloseAbandons(t *testing.T) {
	r := testRand(t)
	ts := startTestServer(t, 0)
	ts.Stop()
	nc, _ := connect(t, ts.URL())
	p, err := NewPublisher(nc, PublisherConfig{Host: "alpha0"})
	if err != nil {
		t.Fatal(err)
	}
	b := streamBatch(r, "alpha0", 1, 0, 1, 10, []wire.ImageKey{wiretest.RandKey(r)})
	b.Entries, b.Unknown = []wire.Entry{{Image: wiretest.RandKey(r), Count: 5}}, nil
	if err := p.PublishBatch(b); err != nil {
		t.Fatal(err)
	}
	err = p.Close(testCtx(t, 200*time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "abandoned 1 batches (5 samples)") {
		t.Fatalf("close: %v", err)
	}
	t.Log(err)
	if again := p.Close(testCtx(t, time.Second)); again == nil || again.Error() != err.Error() {
		t.Errorf("second close: %v", again)
	}
	if err := p.Flush(testCtx(t, time.Second)); !errors.Is(err, ErrClosed) {
		t.Errorf("flush after close: %v", err)
	}
}
