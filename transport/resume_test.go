package transport

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// TestLastPublished follows the batches of two CPUs of alpha0 (and one of
// alpha1, which must not count) through the stream: nothing, published,
// partly consumed, all consumed. At every step it also checks the resume
// rule against a model of the profile database: max(LastPublished,
// applied)+1 is, per CPU, the first sequence number never published.
func TestLastPublished(t *testing.T) {
	r := testRand(t)
	ts := startTestServer(t, 0)
	nc, js := connect(t, ts.URL())
	const cpus = 3 // CPU 2 never publishes
	lastPublished := func(step string, want ...uint64) []uint64 {
		t.Helper()
		got, err := LastPublished(testCtx(t, 5*time.Second), js, "alpha0", cpus)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: last published %v, want %v", step, got, want)
		}
		return got
	}
	lastPublished("no stream", 0, 0, 0)
	ensure(t, js)
	lastPublished("empty stream", 0, 0, 0)
	if got, err := LastPublished(testCtx(t, 5*time.Second), js, "alpha0", 0); err != nil || len(got) != 0 {
		t.Errorf("0 CPUs: %v, %v", got, err)
	}

	keys := []wire.ImageKey{wiretest.RandKey(r)}
	pa := newTestPublisher(t, nc, "alpha0", 0)
	pb := newTestPublisher(t, nc, "alpha1", 0)
	published := []uint64{5, 3, 0} // per CPU of alpha0
	for cpu, n := range published {
		for seq := uint64(1); seq <= n; seq++ {
			if err := pa.PublishBatch(streamBatch(r, "alpha0", 1, uint16(cpu), seq, 20, keys)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for seq := uint64(1); seq <= 9; seq++ {
		if err := pb.PublishBatch(streamBatch(r, "alpha1", 1, 2, seq, 20, keys)); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, pa, 10*time.Second)
	flush(t, pb, 10*time.Second)

	applied := make([]uint64, cpus) // the model of storage's applied seqs
	resume := func(step string, want ...uint64) {
		t.Helper()
		last := lastPublished(step, want...)
		for cpu := range cpus {
			if next := max(last[cpu], applied[cpu]) + 1; next != published[cpu]+1 {
				t.Errorf("%s: cpu %d resumes at %d (last published %d, applied %d), want %d",
					step, cpu, next, last[cpu], applied[cpu], published[cpu]+1)
			}
		}
	}
	resume("published", 5, 3, 0)

	// Consume alpha0's batches: apply and ack CPU 0 up to seq 3 and all of
	// CPU 1; leave CPU 0's seq 4 and 5 unacknowledged.
	c, err := NewConsumer(testCtx(t, 5*time.Second), js, ConsumerConfig{Hosts: []string{"alpha0"}, AckWait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 10*time.Second)
	var held []Delivery
	for n := 0; n < 8; {
		ds, err := c.Fetch(ctx, 8, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			n++
			if d.Err != nil || d.Host != "alpha0" {
				t.Fatalf("delivery %s: %v", d.Subject, d.Err)
			}
			if d.CPU == 0 && d.Batch.Seq > 3 {
				held = append(held, d)
				continue
			}
			applied[d.CPU] = d.Batch.Seq // the commit comes before the ack
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	resume("partly consumed", 5, 0, 0)
	for _, d := range held {
		applied[d.CPU] = d.Batch.Seq
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	resume("consumed", 0, 0, 0)
	if got, err := LastPublishedCPU(testCtx(t, 5*time.Second), js, "alpha1", 2); err != nil || got != 9 {
		t.Errorf("alpha1 cpu 2: %d, %v; want 9 (not consumed: the consumer filters alpha0)", got, err)
	}

	// The daemon's stream is asked for alone.
	if err := pa.PublishBatch(streamBatch(r, "alpha0", 1, wire.AllCPUs, 1, 0, keys)); err != nil {
		t.Fatal(err)
	}
	flush(t, pa, 10*time.Second)
	if got, err := LastPublishedCPU(testCtx(t, 5*time.Second), js, "alpha0", wire.AllCPUs); err != nil || got != 1 {
		t.Errorf("alpha0 daemon stream: %d, %v; want 1", got, err)
	}
	lastPublished("daemon batch", 0, 0, 0)

	if _, err := LastPublished(testCtx(t, 5*time.Second), js, "a.b", 1); !errors.Is(err, ErrHost) {
		t.Errorf("host a.b: %v, want ErrHost", err)
	}
	if _, err := LastPublished(testCtx(t, 5*time.Second), js, "alpha0", -1); err == nil {
		t.Error("-1 CPUs accepted")
	}
}

// TestLastPublishedBad: a message on a host's subject that is not its
// batch (garbage, or another CPU's batch) makes LastPublished fail with an
// error naming it, rather than report a number it cannot know.
func TestLastPublishedBad(t *testing.T) {
	r := testRand(t)
	ts := startTestServer(t, 0)
	_, js := connect(t, ts.URL())
	ensure(t, js)
	keys := []wire.ImageKey{wiretest.RandKey(r)}
	good, _ := streamBatch(r, "alpha0", 1, 0, 4, 10, keys).MarshalBinary()
	forgedCPU, _ := streamBatch(r, "alpha0", 1, 1, 7, 10, keys).MarshalBinary()
	for i, tc := range []struct {
		data []byte
		want error
	}{
		{good, nil},
		{[]byte("not a batch"), wire.ErrMalformed},
		{forgedCPU, ErrForged},
	} {
		subject := batchSubject("alpha0", 0)
		ack, err := js.PublishMsg(testCtx(t, 5*time.Second), &nats.Msg{Subject: subject, Data: tc.data})
		if err != nil {
			t.Fatal(err)
		}
		last, err := LastPublished(testCtx(t, 5*time.Second), js, "alpha0", 2)
		switch {
		case tc.want == nil && (err != nil || !slices.Equal(last, []uint64{4, 0})):
			t.Errorf("message %d: %v, %v; want [4 0]", i, last, err)
		case tc.want != nil && (!errors.Is(err, tc.want) || last != nil ||
			!strings.Contains(err.Error(), subject) || !strings.Contains(err.Error(), fmt.Sprintf("stream seq %d", ack.Sequence))):
			t.Errorf("message %d: %v, %v; want %v naming %s and stream seq %d", i, last, err, tc.want, subject, ack.Sequence)
		case err != nil:
			t.Log(err)
		}
	}
}

// TestEnsureStreamLegacy: a stream of the per-host subjects of before is
// updated in place when it holds none of their batches, and refused with
// ErrLegacyStream, unchanged, while it does. Once updated, a publisher of
// the old subject finds no stream, and the old durable consumer takes the
// new filters.
func TestEnsureStreamLegacy(t *testing.T) {
	r := testRand(t)
	ts := startTestServer(t, 0)
	_, js := connect(t, ts.URL())
	ctx := testCtx(t, 20*time.Second)
	legacy := streamConfig(1)
	legacy.Subjects = []string{legacySubject}
	s, err := js.CreateStream(ctx, legacy)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: DefaultDurable,
		AckPolicy: jetstream.AckExplicitPolicy, FilterSubjects: []string{"dcpi.batch.alpha0"}}); err != nil {
		t.Fatal(err)
	}
	keys := []wire.ImageKey{wiretest.RandKey(r)}
	data, _ := streamBatch(r, "alpha0", 1, 0, 1, 10, keys).MarshalBinary()
	if _, err := js.Publish(ctx, "dcpi.batch.alpha0", data); err != nil {
		t.Fatal(err)
	}

	err = EnsureStream(ctx, js, 1)
	if !errors.Is(err, ErrLegacyStream) || !strings.Contains(err.Error(), "1 messages") {
		t.Fatalf("with a batch on the old subject: %v, want ErrLegacyStream", err)
	}
	t.Log(err)
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(info.Config.Subjects, []string{legacySubject}) || info.State.Msgs != 1 {
		t.Fatalf("refused, yet the stream changed: subjects %v, %d messages", info.Config.Subjects, info.State.Msgs)
	}

	// An old-subject batch that slipped in as the subjects changed (an
	// old node publishing during the update) is still refused.
	racy := legacy
	racy.Subjects = []string{streamSubject}
	if _, err := js.UpdateStream(ctx, racy); err != nil {
		t.Fatal(err)
	}
	if err := EnsureStream(ctx, js, 1); !errors.Is(err, ErrLegacyStream) {
		t.Fatalf("new subjects, a batch on the old: %v, want ErrLegacyStream", err)
	}
	if _, err := js.UpdateStream(ctx, legacy); err != nil {
		t.Fatal(err)
	}

	// Drain it as the previous version would, then update.
	old, err := s.Consumer(ctx, DefaultDurable)
	if err != nil {
		t.Fatal(err)
	}
	m, err := old.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	ensure(t, js)
	ensure(t, js) // idempotent
	if info, err = s.Info(ctx); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(info.Config.Subjects, []string{streamSubject}) {
		t.Fatalf("after the update: subjects %v", info.Config.Subjects)
	}
	if _, err := js.Publish(ctx, "dcpi.batch.alpha0", data, jetstream.WithRetryAttempts(0)); err == nil {
		t.Error("a publish on the old subject was stored")
	} else {
		t.Logf("old subject: %v", err)
	}

	c, err := NewConsumer(ctx, js, ConsumerConfig{Hosts: []string{"alpha0"}})
	if err != nil {
		t.Fatal(err)
	}
	if ci, err := old.Info(ctx); err != nil || !reflect.DeepEqual(ci.Config.FilterSubjects, []string{"dcpi.batch.alpha0.>"}) {
		t.Errorf("consumer after NewConsumer: %+v, %v", ci, err)
	}
	b := streamBatch(r, "alpha0", 1, 3, 2, 10, keys)
	if _, err := js.Publish(ctx, batchSubject("alpha0", 3), mustMarshal(t, b)); err != nil {
		t.Fatal(err)
	}
	if ds := drain(t, c, 1); !reflect.DeepEqual(ds[0].Batch, b) || ds[0].CPU != 3 {
		t.Errorf("got %+v", ds[0])
	}
}

func mustMarshal(t testing.TB, b *wire.Batch) []byte {
	t.Helper()
	data, err := b.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return data
}
