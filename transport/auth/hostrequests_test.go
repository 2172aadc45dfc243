package auth

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dcpi/coordinator"
	"dcpi/internal/slogf"
	"dcpi/storage"
	"dcpi/transport"
	"dcpi/wire"
	"dcpi/wire/coordproto"
	"dcpi/wire/wiretest"
)

// startReplica starts a one-replica coordinator on the coordinator role's
// key and waits until it leads.
func startReplica(t *testing.T, srv *Server) {
	t.Helper()
	nc := mustDial(t, srv.ClientURL(), srv.Store.RoleFile(Coordinator), nil)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	r, err := coordinator.Start(coordinator.Config{
		ID: "c1", RaftAddr: "127.0.0.1:0", DataDir: filepath.Join(t.TempDir(), "c1"),
		Bootstrap: []coordinator.Peer{{ID: "c1"}}, NATS: nc, Tails: tails{js}, Logger: slogf.Test(t),
		RaftTimeout: 300 * time.Millisecond, SealInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Shutdown() })
	deadline := time.Now().Add(15 * time.Second)
	for !r.IsLeader() {
		if time.Now().After(deadline) {
			t.Fatal("the replica did not become leader")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tails reads the streams' newest messages as package cluster's
// JetStreamTails does (which this package's tests cannot import).
type tails struct{ js jetstream.JetStream }

func (t tails) LastBatches(ctx context.Context, host string, cpus int) ([]storage.StreamState, error) {
	bs, err := transport.LastBatches(ctx, t.js, host, cpus)
	out := make([]storage.StreamState, len(bs))
	for i, b := range bs {
		if b != nil {
			out[i] = storage.StreamState{Seq: b.Seq, Delivered: b.Delivered, Accounted: b.Accounted}
		}
	}
	return out, err
}

func (t tails) LastValues(ctx context.Context, host string) (uint64, error) {
	r, err := transport.LastValues(ctx, t.js, host)
	if err != nil || r == nil {
		return 0, err
	}
	return r.Seq, nil
}

// hostConn connects as a new key of host.
func hostConn(t *testing.T, srv *Server, host string, v *violations) *nats.Conn {
	t.Helper()
	k, err := srv.Store.AddHost(host)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Store.WaitLoaded(k.PublicKey, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	return mustDial(t, srv.ClientURL(), k.File, v)
}

// TestHostRequestsConfined: with its own key a host registers, heartbeats,
// acknowledges an epoch and asks its applied sequences; the server
// refuses its requests on another host's subjects, the coordinator its
// requests on its own subjects about another host (the epoch keeps
// waiting for that host's ack); and it reads the newest message of its
// own subjects only, not another host's newest batch.
func TestHostRequestsConfined(t *testing.T) {
	srv := startSecure(t)
	js := ensureStreams(t, srv)
	if err := transport.EnsureValuesStream(ctxT(t, 10*time.Second), js, 1); err != nil {
		t.Fatal(err)
	}
	startReplica(t, srv)
	admin := coordinator.NewClient(mustDial(t, srv.ClientURL(), srv.Store.RoleFile(Coordinator), nil))

	var v1, v2 violations
	nc1 := hostConn(t, srv, "alpha1", &v1)
	nc2 := hostConn(t, srv, "alpha2", &v2)
	c1, c2 := coordinator.NewClient(nc1), coordinator.NewClient(nc2)

	// Each host's own requests are served.
	ctx := ctxT(t, 30*time.Second)
	for host, c := range map[string]*coordinator.Client{"alpha1": c1, "alpha2": c2} {
		if err := c.Register(ctx, host, nil, 1, nil); err != nil {
			t.Fatalf("%s registering itself: %v", host, err)
		}
		if st, err := c.Heartbeat(ctx, host); err != nil || !st.Registered {
			t.Fatalf("%s heartbeating: %+v %v", host, st, err)
		}
		if _, err := c.Applied(ctx, host, 0); err != nil {
			t.Fatalf("%s asking its applied seq: %v", host, err)
		}
		if _, err := c.ValuesApplied(ctx, host); err != nil {
			t.Fatalf("%s asking its values applied: %v", host, err)
		}
	}
	if n, err := admin.CutEpoch(ctx); err != nil || n != 2 {
		t.Fatalf("cut: %d %v", n, err)
	}

	// alpha1's key on alpha2's request subjects: refused by the server.
	others, err := coordproto.HostRequestSubjects("alpha2")
	if err != nil {
		t.Fatal(err)
	}
	for _, subject := range others {
		if err := nc1.PublishRequest(subject, nc1.NewRespInbox(), []byte(`{"Host":"alpha2"}`)); err != nil {
			t.Fatal(err)
		}
		v1.wait(t, `Permissions Violation for Publish to "`+subject+`"`)
	}
	short := coordinator.NewClient(nc1)
	short.Timeout = 300 * time.Millisecond
	if err := short.AckEpoch(ctxT(t, time.Second), "alpha2", 1, []uint64{0}); err == nil {
		t.Error("alpha1's key acknowledged epoch 1 for alpha2")
	}

	// alpha1's own subjects with a body naming alpha2: refused by the
	// coordinator.
	forged := func(base string, body any) {
		t.Helper()
		data, _ := json.Marshal(body)
		m, err := nc1.Request(base+".alpha1", data, 5*time.Second)
		if err != nil {
			t.Fatalf("%s.alpha1: %v", base, err)
		}
		if m.Header.Get(coordinator.HeaderErrorCode) == "" || !strings.Contains(m.Header.Get(coordinator.HeaderError), coordinator.ErrOtherHost.Error()) {
			t.Errorf("%s.alpha1 about alpha2: reply %q %q, want a refusal naming another host", base, m.Header.Get(coordinator.HeaderErrorCode), m.Header.Get(coordinator.HeaderError))
		}
	}
	forged(coordproto.SubjectAck, coordinator.AckRequest{Host: "alpha2", Epoch: 1, LastSeq: []uint64{0}})
	forged(coordproto.SubjectHeartbeat, coordinator.HeartbeatRequest{Host: "alpha2"})
	forged(coordproto.SubjectRegister, coordinator.RegisterRequest{Host: "alpha2", CPUs: 3})
	forged(coordproto.SubjectQuery+coordproto.QueryApplied, coordinator.AppliedRequest{Host: "alpha2"})
	forged(coordproto.SubjectLinearQuery+coordproto.QueryValuesApplied, coordinator.ValuesAppliedRequest{Host: "alpha2"})
	if err := c1.AckEpoch(ctx, "alpha1", 1, []uint64{0}); err != nil {
		t.Fatalf("alpha1 acknowledging epoch 1: %v", err)
	}
	eps, err := admin.Epochs(ctx)
	if err != nil || len(eps) < 1 {
		t.Fatalf("epochs: %v %v", eps, err)
	}
	if e := eps[0]; len(e.Acks) != 1 || e.Acks[0].Host != "alpha1" {
		t.Errorf("epoch 1 acknowledged by %+v, want alpha1 alone", e.Acks)
	}
	nodes, err := admin.Nodes(ctx)
	if err != nil || len(nodes) != 2 || nodes[1].CPUs != 1 {
		t.Errorf("nodes after alpha2's forged registration: %+v %v", nodes, err)
	}

	// alpha2's newest batch: alpha2 reads it, alpha1 cannot.
	r := rand.New(rand.NewPCG(5, 6))
	p, err := transport.NewPublisher(nc2, transport.PublisherConfig{Host: "alpha2", AckTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.PublishBatch(wiretest.RandBatch(r, wiretest.Options{Host: "alpha2", CPU: 0, Seq: 7, Epoch: 2, MaxEntries: 10,
		Images: []wire.ImageKey{wiretest.RandKey(r)}, Offsets: 1 << 12})); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	// A host reads its streams' newest messages through the coordinator,
	// never from the streams themselves (transport.noDirectGets).
	if tail, err := c2.StreamTail(ctx, "alpha2", 1); err != nil || tail[0].Seq != 7 {
		t.Fatalf("alpha2 asking for its newest batch: %+v %v (server said %q)", tail, err, v2.errs)
	}
	if tail, err := c1.StreamTail(ctxT(t, 2*time.Second), "alpha2", 1); err == nil {
		t.Errorf("alpha1's key asked for alpha2's newest batch: %+v", tail)
	}
	v1.wait(t, `Permissions Violation for Publish to "`+coordproto.SubjectQuery+coordproto.QueryStreamTail+`.alpha2"`)
	forged(coordproto.SubjectQuery+coordproto.QueryStreamTail, coordinator.TailRequest{Host: "alpha2", CPUs: 1})
	forged(coordproto.SubjectQuery+coordproto.QueryValuesTail, coordinator.ValuesTailRequest{Host: "alpha2"})
	if tail, err := c1.StreamTail(ctx, "alpha1", 1); err != nil || tail[0].Seq != 0 {
		t.Errorf("alpha1 asking for its own (empty) stream's tail: %+v %v", tail, err)
	}
	if seq, err := c1.ValuesTail(ctx, "alpha1"); err != nil || seq != 0 {
		t.Errorf("alpha1 asking for its own (empty) value stream's tail: %d %v", seq, err)
	}
	js1, _ := jetstream.New(nc1)
	for _, host := range []string{"alpha1", "alpha2"} {
		if last, err := transport.LastPublished(ctxT(t, 2*time.Second), js1, host, 1); err == nil {
			t.Errorf("alpha1's key read %s's batch stream itself: %v", host, last)
		}
		if _, err := transport.LastValues(ctxT(t, 2*time.Second), js1, host); err == nil {
			t.Errorf("alpha1's key read %s's value stream itself", host)
		}
	}
	for _, api := range []string{
		"$JS.API.DIRECT.GET." + transport.StreamName + ".dcpi.batch.alpha1.0",
		"$JS.API.STREAM.MSG.GET." + transport.StreamName,
		"$JS.API.DIRECT.GET.OBJ_" + transport.ImageBucket,
	} {
		if err := nc1.PublishRequest(api, nc1.NewRespInbox(), []byte(`{"last_by_subj":"dcpi.batch.alpha2.0"}`)); err != nil {
			t.Fatal(err)
		}
		v1.wait(t, `Permissions Violation for Publish to "`+api+`"`)
	}
}
