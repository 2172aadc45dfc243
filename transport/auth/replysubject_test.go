package auth

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"dcpi/coordinator"
	"dcpi/transport"
	"dcpi/wire/coordproto"
)

// TestHostileReplySubjects: a reply subject is a publish the server's
// permissions do not check (it is the responder's, on the responder's
// credentials). With only its own key, a host asks the coordinator its
// own questions with reply subjects it may not publish on: the epoch cut,
// the batch stream's deletion, another host's batch subject, a wildcard.
// The coordinator answers none of them, and nothing changes: no epoch is
// cut, the stream stands, no message lands on the other host's subject;
// the same request with its own inbox is answered.
func TestHostileReplySubjects(t *testing.T) {
	srv := startSecure(t)
	js := ensureStreams(t, srv)
	startReplica(t, srv)
	admin := coordinator.NewClient(mustDial(t, srv.ClientURL(), srv.Store.RoleFile(Coordinator), nil))
	nc := hostConn(t, srv, "alpha1", &violations{})
	ctx := ctxT(t, 30*time.Second)
	c := coordinator.NewClient(nc)
	if err := c.Register(ctx, "alpha1", nil, 1, nil); err != nil {
		t.Fatal(err)
	}
	before, err := admin.Epochs(ctx)
	if err != nil {
		t.Fatal(err)
	}

	heartbeat := coordproto.SubjectHeartbeat + ".alpha1"
	body, _ := json.Marshal(coordinator.HeartbeatRequest{Host: "alpha1"})
	applied := coordproto.SubjectQuery + coordproto.QueryApplied + ".alpha1"
	appliedBody, _ := json.Marshal(coordinator.AppliedRequest{Host: "alpha1"})
	for _, r := range []struct{ subject, reply string }{
		{heartbeat, coordproto.SubjectCut},
		{heartbeat, "$JS.API.STREAM.DELETE." + transport.StreamName},
		{applied, "$JS.API.STREAM.DELETE." + transport.StreamName},
		{applied, "dcpi.batch.alpha2.0"},
		{heartbeat, "_INBOX.>"},
		{heartbeat, "_INBOX"},
	} {
		data := body
		if r.subject == applied {
			data = appliedBody
		}
		if err := nc.PublishRequest(r.subject, r.reply, data); err != nil {
			t.Fatal(err)
		}
	}
	// The same requests on the host's own inbox are answered; NATS
	// delivers a subscription's messages in order, so by then the
	// coordinator has seen the hostile ones.
	if st, err := c.Heartbeat(ctx, "alpha1"); err != nil || !st.Registered {
		t.Fatalf("heartbeat on its own inbox: %+v %v", st, err)
	}
	if _, err := c.Applied(ctx, "alpha1", 0); err != nil {
		t.Fatalf("applied on its own inbox: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // what a served reply would set off runs apart

	after, err := admin.Epochs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("epochs %d before, %d after: a reply cut an epoch", len(before), len(after))
	}
	st, err := js.Stream(ctx, transport.StreamName)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatal("a reply deleted the batch stream")
	}
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter("dcpi.batch.alpha2.>"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(info.State.Subjects); n != 0 {
		t.Errorf("messages on alpha2's batch subjects after alpha1's requests: %v", info.State.Subjects)
	}
}
