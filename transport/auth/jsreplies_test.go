package auth

import (
	"encoding/base64"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"dcpi/coordinator"
	"dcpi/transport"
	"dcpi/wire"
	"dcpi/wire/coordproto"
	"dcpi/wire/wiretest"
)

// TestHostileJetStreamReplies: JetStream answers on the reply subject its
// requester names, with the server's rights. With only its own key, a
// host stores a batch that claims to be alpha2's on its own subject and
// uploads the same bytes as a program file, then makes every request the
// server answers that its key allows (its publishes' acknowledgements,
// the image buckets' lookups and message gets) and the direct gets it
// is no longer allowed, each with reply subjects it may not publish on:
// alpha2's batch subject, the batch stream's deletion and purge, the
// epoch cut. Nothing changes: the streams and buckets stand, no epoch is
// cut, and nothing on alpha2's subject decodes as a batch (a direct get
// would have put the forged one there). What can land there is
// JetStream's JSON (an acknowledgement, a lookup's answer), which no
// aggregator takes for a batch.
func TestHostileJetStreamReplies(t *testing.T) {
	srv := startSecure(t)
	js := ensureStreams(t, srv)
	startReplica(t, srv)
	admin := coordinator.NewClient(mustDial(t, srv.ClientURL(), srv.Store.RoleFile(Coordinator), nil))
	if err := transport.EnsureValuesStream(ctxT(t, 10*time.Second), js, 1); err != nil {
		t.Fatal(err)
	}
	v := &violations{}
	nc := hostConn(t, srv, "alpha1", v)
	ctx := ctxT(t, 30*time.Second)
	before, err := admin.Epochs(ctx)
	if err != nil {
		t.Fatal(err)
	}

	r := rand.New(rand.NewPCG(7, 8))
	forged, err := wiretest.RandBatch(r, wiretest.Options{Host: "alpha2", CPU: 0, Seq: 1, Epoch: 1, MaxEntries: 50,
		Images: []wire.ImageKey{wiretest.RandKey(r)}, Offsets: 1 << 12}).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	own, _ := transport.BatchSubject("alpha1", 0)
	values, _ := transport.ValuesSubject("alpha1")
	if err := nc.Publish(own, forged); err != nil {
		t.Fatal(err)
	}
	hjs, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	key := wiretest.RandKey(r)
	if _, err := transport.PutImageFile(ctx, hjs, key, forged); err != nil {
		t.Fatalf("uploading a program file: %v (server said %q)", err, v.errs)
	}
	fileMeta := "$O." + transport.ImageFileBucket + ".M." + base64.URLEncoding.EncodeToString([]byte(key.String()))

	victim, _ := transport.BatchSubject("alpha2", 0)
	replies := []string{victim, "$JS.API.STREAM.DELETE." + transport.StreamName,
		"$JS.API.STREAM.PURGE." + transport.StreamName, coordproto.SubjectCut}
	requests := []struct{ subject, body string }{
		{own, "x"}, // its acknowledgement
		{values, "x"},
		{"$O." + transport.ImageBucket + ".C.hostile", "x"},
		{"$JS.API.INFO", ""},
		{"$JS.API.STREAM.INFO.OBJ_" + transport.ImageFileBucket, ""},
		{"$JS.API.STREAM.MSG.GET.OBJ_" + transport.ImageFileBucket, `{"last_by_subj":"` + fileMeta + `"}`},
		{"$JS.API.STREAM.MSG.GET.OBJ_" + transport.ImageFileBucket, `{"seq":1}`},
	}
	denied := []string{
		"$JS.API.DIRECT.GET." + transport.StreamName + "." + own,
		"$JS.API.DIRECT.GET.OBJ_" + transport.ImageFileBucket + "." + fileMeta,
	}
	for _, reply := range replies {
		// The direct gets first, while the forged batch is alpha1's newest.
		for _, api := range denied {
			if err := nc.PublishRequest(api, reply, nil); err != nil {
				t.Fatal(err)
			}
		}
		for _, q := range requests {
			if err := nc.PublishRequest(q.subject, reply, []byte(q.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The host's own inbox still gets answers; by then the server has
	// answered (or refused) every request above.
	if _, err := nc.Request("$JS.API.INFO", nil, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // what an answer would set off runs apart

	after, err := admin.Epochs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("epochs %d before, %d after: a reply cut an epoch", len(before), len(after))
	}
	for _, name := range []string{transport.StreamName, transport.ValuesStreamName, "OBJ_" + transport.ImageBucket, "OBJ_" + transport.ImageFileBucket} {
		if _, err := js.Stream(ctx, name); err != nil {
			t.Errorf("stream %s after the replies: %v", name, err)
		}
	}
	st, err := js.Stream(ctx, transport.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(own))
	if err != nil {
		t.Fatal(err)
	}
	if n := info.State.Subjects[own]; n < 2 {
		t.Errorf("alpha1's subject holds %d messages, want its forged batch and acknowledged ones: the stream was purged", n)
	}
	for seq := uint64(1); seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) || (err == nil && m.Subject != victim) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var b wire.Batch
		if b.UnmarshalBinary(m.Data) == nil {
			t.Errorf("a batch of host %q landed on %s (stream seq %d): a reply carried alpha1's bytes there", b.Host, victim, seq)
		}
	}
	for _, api := range denied {
		v.wait(t, `Permissions Violation for Publish to "`+api+`"`)
	}
}
