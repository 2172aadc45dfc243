package auth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"dcpi/coordinator"
	"dcpi/transport"
	"dcpi/wire/coordproto"
)

// TestAggregatorStaysAnAggregator: the aggregator's key, which commits
// every host's samples, may not do what the coordinator role does. Its
// epoch cut, membership change and request as a host are refused by the
// server; so are the batch stream's deletion, purge and update, and the
// deletion of a bucket. Nothing changed afterwards: the epochs, the
// stream and its messages. What it needs (its durable consumer, a
// proposal) still works.
func TestAggregatorStaysAnAggregator(t *testing.T) {
	srv := startSecure(t)
	js := ensureStreams(t, srv)
	startReplica(t, srv)
	admin := coordinator.NewClient(mustDial(t, srv.ClientURL(), srv.Store.RoleFile(Coordinator), nil))
	host := hostConn(t, srv, "alpha1", &violations{})
	ctx := ctxT(t, 30*time.Second)
	if _, err := jetstream.New(host); err != nil {
		t.Fatal(err)
	}
	if err := host.Publish("dcpi.batch.alpha1.0", []byte("a batch")); err != nil {
		t.Fatal(err)
	}
	if err := host.Flush(); err != nil {
		t.Fatal(err)
	}
	before, err := admin.Epochs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v := &violations{}
	anc := mustDial(t, srv.ClientURL(), srv.Store.RoleFile(Aggregator), v)
	agg := coordinator.NewClient(anc)
	short := func() context.Context { return ctxT(t, 500*time.Millisecond) }

	if _, err := agg.CutEpoch(short()); err == nil {
		t.Error("the aggregator's key cut an epoch")
	}
	v.wait(t, coordproto.SubjectCut)
	if err := agg.AddVoter(short(), "c9", "127.0.0.1:1"); err == nil {
		t.Error("the aggregator's key added a voter")
	}
	v.wait(t, coordproto.SubjectMembersAdd)
	if err := agg.RemoveServer(short(), "c1"); err == nil {
		t.Error("the aggregator's key removed a server")
	}
	v.wait(t, coordproto.SubjectMembersRemove)
	if _, err := agg.Heartbeat(short(), "alpha1"); err == nil {
		t.Error("the aggregator's key heartbeat for a host")
	}
	v.wait(t, coordproto.SubjectHeartbeat+".alpha1")
	for _, api := range []string{
		"$JS.API.STREAM.DELETE." + transport.StreamName,
		"$JS.API.STREAM.PURGE." + transport.StreamName,
		"$JS.API.STREAM.UPDATE." + transport.StreamName,
		"$JS.API.STREAM.DELETE.OBJ_" + transport.ImageBucket,
	} {
		if _, err := anc.Request(api, []byte("{}"), 500*time.Millisecond); err == nil {
			t.Errorf("%s answered the aggregator", api)
		}
		v.wait(t, api)
	}

	after, err := admin.Epochs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("epochs %d before, %d after the aggregator's requests", len(before), len(after))
	}
	st, err := js.Stream(ctx, transport.StreamName)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatal("the aggregator's key deleted the batch stream")
	}
	if err != nil {
		t.Fatal(err)
	}
	if n := st.CachedInfo().State.Msgs; n != 1 {
		t.Errorf("the batch stream holds %d messages, want the 1 published", n)
	}
	if _, err := js.ObjectStore(ctx, transport.ImageBucket); err != nil {
		t.Errorf("the image bucket: %v", err)
	}
	// What an aggregator does still works: its durable consumer fetches
	// the batch (malformed here, so it is counted, not decoded).
	ajs, err := jetstream.New(anc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := transport.NewConsumer(ctx, ajs, transport.ConsumerConfig{})
	if err != nil {
		t.Fatalf("the aggregator's consumer: %v", err)
	}
	ds, err := c.Fetch(ctx, 10, 2*time.Second)
	if err != nil || len(ds) != 1 {
		t.Fatalf("the aggregator fetched %d deliveries, %v; want 1", len(ds), err)
	}
}
