package transport

import (
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dcpi/coordinator"
	"dcpi/internal/slogf"
	"dcpi/storage"
	"dcpi/wire"
	"dcpi/wire/wiretest"
)

func TestPathSubject(t *testing.T) {
	if s, err := PathSubject("alpha1"); err != nil || s != "dcpi.paths.alpha1" {
		t.Fatalf("PathSubject = %q, %v", s, err)
	}
	for _, h := range []string{"", "a.b", "a*", "a>"} {
		if _, err := PathSubject(h); !errors.Is(err, ErrHost) {
			t.Errorf("PathSubject(%q): %v", h, err)
		}
	}
	u := wiretest.RandPathUpload(rand.New(rand.NewPCG(1, 1)), "a", wiretest.Key(0), wire.SourceOracle, wiretest.PathOptions{})
	data, _ := u.MarshalBinary()
	if _, err := decodePathUpload("dcpi.paths.b", data); !errors.Is(err, ErrForged) {
		t.Errorf("upload of a on b's subject: %v", err)
	}
	if _, err := decodePathUpload("dcpi.batch.a", data); !errors.Is(err, ErrSubject) {
		t.Errorf("upload on a batch subject: %v", err)
	}
	if _, err := decodePathUpload("dcpi.paths.a", data[:len(data)-1]); err == nil {
		t.Error("truncated upload decoded")
	}
	if got, err := decodePathUpload("dcpi.paths.a", data); err != nil || got.ID != u.ID {
		t.Errorf("decode: %v", err)
	}
}

// TestPathUploadsEndToEnd: two hosts publish path uploads on the stream; one
// is published again with its message ID (the stream's duplicate window
// drops it) and again under another message ID (as a resend after the
// window would be stored), and a consumer applies them through a
// one-replica coordinator. The merged counts are
// the sum of each upload exactly once, fleet-wide and per host; oracle
// ground truth stays apart.
func TestPathUploadsEndToEnd(t *testing.T) {
	srv := startTestServer(t, 0)
	nc, js := connect(t, srv.URL())
	ctx := testCtx(t, 60*time.Second)
	if err := EnsurePathStream(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	cnc, _ := connect(t, srv.URL())
	r, err := coordinator.Start(coordinator.Config{ID: "c1", RaftAddr: "127.0.0.1:0", DataDir: filepath.Join(t.TempDir(), "c1"),
		Bootstrap: []coordinator.Peer{{ID: "c1"}}, NATS: cnc, RaftTimeout: 300 * time.Millisecond, Logger: slogf.Test(t)})
	if err != nil {
		t.Fatal(err)
	}
	client := coordinator.NewClient(nc)
	var mu sync.Mutex
	outcomes := map[storage.PathStatus]int{}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- ConsumePathUploads(cctx, js, PathConsumerConfig{RetryDelay: 50 * time.Millisecond, Logger: slogf.Test(t)},
			func(ctx context.Context, u *wire.PathUpload) error {
				out, err := client.UploadPaths(ctx, u)
				if err == nil {
					mu.Lock()
					outcomes[out.Status]++
					mu.Unlock()
				}
				return err
			})
	}()
	t.Cleanup(func() { cancel(); <-done; r.Shutdown() })

	rnd := rand.New(rand.NewPCG(7, 8))
	image := wiretest.Key(3)
	o := wiretest.PathOptions{Procs: 4, Paths: 8, Tree: 10}
	a := wiretest.RandPathUpload(rnd, "a", image, wire.SourceInstrumented, o)
	b := wiretest.RandPathUpload(rnd, "b", image, wire.SourceInstrumented, o)
	orc := wiretest.RandPathUpload(rnd, "a", image, wire.SourceOracle, o)
	for _, u := range []*wire.PathUpload{a, b, orc, a} { // a twice: dropped by the stream's window
		if err := PublishPathUpload(ctx, js, u); err != nil {
			t.Fatal(err)
		}
	}
	// a again under another message ID: the stream stores it, and the
	// coordinator must drop it by its upload ID.
	data, _ := a.MarshalBinary()
	m := natsMsg("dcpi.paths.a", data, "a/retry-after-window")
	if _, err := js.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	// A forged upload (b's on a's subject) is terminated, never applied.
	forged, _ := b.MarshalBinary()
	if _, err := js.PublishMsg(ctx, natsMsg("dcpi.paths.a", forged, "forged")); err != nil {
		t.Fatal(err)
	}

	wantFleet, err := storage.MergePathProfiles(&a.Profile, &b.Profile)
	if err != nil {
		t.Fatal(err)
	}
	for {
		mu.Lock()
		n := outcomes[storage.PathApplied] + outcomes[storage.PathDuplicate]
		mu.Unlock()
		if n == 4 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("outcomes %v", outcomes)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if outcomes[storage.PathApplied] != 3 || outcomes[storage.PathDuplicate] != 1 {
		t.Fatalf("outcomes %v, want 3 applied and 1 duplicate", outcomes)
	}
	check := func(src wire.PathSource, hosts []string, want *wire.PathProfile) {
		t.Helper()
		got, err := client.PathProfile(ctx, src, image, hosts)
		if err != nil {
			t.Fatal(err)
		}
		gb, _ := got.MarshalBinary()
		wb, _ := want.MarshalBinary()
		if !reflect.DeepEqual(gb, wb) {
			t.Fatalf("%v %v: merged profile is not the sum of the uploads once", src, hosts)
		}
	}
	check(wire.SourceInstrumented, nil, wantFleet)
	check(wire.SourceInstrumented, []string{"a"}, &a.Profile)
	check(wire.SourceInstrumented, []string{"b"}, &b.Profile)
	check(wire.SourceOracle, nil, &orc.Profile)
	if _, err := client.PathProfile(ctx, wire.SourceOracle, image, []string{"b"}); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("oracle of b: %v", err)
	}
	ims, err := client.PathImages(ctx)
	if err != nil || len(ims) != 2 || !reflect.DeepEqual(ims[0].Hosts, []string{"a", "b"}) {
		t.Fatalf("PathImages = %+v, %v", ims, err)
	}
	// Everything was acknowledged: the work queue is empty.
	s, err := js.Stream(ctx, PathStreamName)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d uploads left in the stream", info.State.Msgs)
		}
	}
}

func natsMsg(subject string, data []byte, id string) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = data
	m.Header.Set(jetstream.MsgIDHeader, id)
	return m
}
