package auth

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dcpi/coordinator"
	"dcpi/internal/slogf"
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
	r, err := coordinator.Start(coordinator.Config{
		ID: "c1", RaftAddr: "127.0.0.1:0", DataDir: filepath.Join(t.TempDir(), "c1"),
		Bootstrap: []coordinator.Peer{{ID: "c1"}}, NATS: nc, Logger: slogf.Test(t),
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
	js1, _ := jetstream.New(nc1)
	js2, _ := jetstream.New(nc2)
	if last, err := transport.LastPublished(ctxT(t, 5*time.Second), js2, "alpha2", 1); err != nil || last[0] != 7 {
		t.Fatalf("alpha2 reading its newest batch: %v %v (server said %q)", last, err, v2.errs)
	}
	if last, err := transport.LastPublished(ctxT(t, 2*time.Second), js1, "alpha2", 1); err == nil {
		t.Errorf("alpha1's key read alpha2's newest batch: %v", last)
	}
	v1.wait(t, `Permissions Violation for Publish to "$JS.API.DIRECT.GET.`+transport.StreamName+`.dcpi.batch.alpha2.0"`)
	if err := nc1.PublishRequest("$JS.API.STREAM.MSG.GET."+transport.StreamName, nc1.NewRespInbox(),
		[]byte(`{"last_by_subj":"dcpi.batch.alpha2.0"}`)); err != nil {
		t.Fatal(err)
	}
	v1.wait(t, `Permissions Violation for Publish to "$JS.API.STREAM.MSG.GET.`+transport.StreamName+`"`)
	if last, err := transport.LastPublished(ctxT(t, 5*time.Second), js1, "alpha1", 1); err != nil || last[0] != 0 {
		t.Errorf("alpha1 reading its own (empty) subjects: %v %v", last, err)
	}
	// The values stream likewise.
	if rec, err := transport.LastValues(ctxT(t, 5*time.Second), js1, "alpha1"); err != nil || rec != nil {
		t.Errorf("alpha1 reading its own (empty) values subject: %v %v", rec, err)
	}
	if _, err := transport.LastValues(ctxT(t, 2*time.Second), js1, "alpha2"); err == nil || errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("alpha1's key reading alpha2's values subject: %v, want refused", err)
	}
}
