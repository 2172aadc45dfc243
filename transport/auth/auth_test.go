package auth

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"dcpi/coordinator"
	"dcpi/internal/slogf"
	"dcpi/transport"
	"dcpi/wire"
	"dcpi/wire/coordproto"
	"dcpi/wire/wiretest"
)

// startSecure starts a secured embedded server in a fresh directory with a
// registry of the test's own.
func startSecure(t *testing.T) *Server {
	t.Helper()
	t.Setenv("DCPI_AUTH_REGISTRY", filepath.Join(t.TempDir(), "registry"))
	srv, err := StartServer(transport.ServerConfig{Dir: t.TempDir(), Host: "127.0.0.1", Logger: slogf.Test(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

// violations records the server's asynchronous errors on a connection.
type violations struct {
	mu   sync.Mutex
	errs []string
}

func (v *violations) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	v.mu.Lock()
	v.errs = append(v.errs, err.Error())
	v.mu.Unlock()
}

func (v *violations) wait(t *testing.T, substr string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		v.mu.Lock()
		for _, e := range v.errs {
			if strings.Contains(e, substr) {
				v.mu.Unlock()
				return
			}
		}
		v.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no server error containing %q (got %q)", substr, v.errs)
}

// dial connects with a seed file, failing at once on refusal (no retry).
func dial(t *testing.T, url, seedFile string, v *violations) (*nats.Conn, error) {
	t.Helper()
	opts := []nats.Option{nats.Timeout(3 * time.Second), nats.MaxReconnects(0)}
	if v != nil {
		opts = append(opts, nats.ErrorHandler(v.handler))
	}
	if seedFile != "" {
		data, err := os.ReadFile(seedFile)
		if err != nil {
			return nil, err
		}
		kp, err := transport.ParseUserSeed(data)
		if err != nil {
			return nil, err
		}
		pub, _ := kp.PublicKey()
		opts = append(opts, nats.Nkey(pub, kp.Sign), nats.CustomInboxPrefix(transport.InboxPrefix(pub)))
	}
	return nats.Connect(url, opts...)
}

func mustDial(t *testing.T, url, seedFile string, v *violations) *nats.Conn {
	t.Helper()
	nc, err := dial(t, url, seedFile, v)
	if err != nil {
		t.Fatalf("connect with %s: %v", seedFile, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// ensureStreams creates the streams with the coordinator's key, as a
// coordinator does at start.
func ensureStreams(t *testing.T, srv *Server) jetstream.JetStream {
	t.Helper()
	nc := mustDial(t, srv.ClientURL(), srv.Store.RoleFile(Coordinator), nil)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := transport.EnsureStream(ctxT(t, 20*time.Second), js, 1); err != nil {
		t.Fatal(err)
	}
	return js
}

// TestUnauthenticatedRefused: a client without credentials can neither
// publish a batch nor ask a query; the server refuses the connection.
func TestUnauthenticatedRefused(t *testing.T) {
	srv := startSecure(t)
	_, err := dial(t, srv.ClientURL(), "", nil)
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
		t.Fatalf("connect without credentials: %v, want an authorization violation", err)
	}
	// The roles' own connection (retrying in the background) never
	// connects, so neither a publish nor a query gets through.
	nc, err := transport.Connect(transport.ConnConfig{URLs: []string{srv.ClientURL()}, Name: "anon"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.Publish("dcpi.batch.alpha0.0", []byte("x")); err == nil {
		if err := nc.FlushTimeout(time.Second); err == nil {
			t.Error("an unauthenticated publish was flushed to the server")
		}
	}
	if _, err := coordinator.NewClient(nc).Epochs(ctxT(t, 2*time.Second)); err == nil {
		t.Error("an unauthenticated query was answered")
	}
}

// TestHostConfined: a host's key publishes its own batches and images and
// resumes (LastPublished), but the server refuses its publish on another
// host's subject (the stream stores nothing there) and its queries.
func TestHostConfined(t *testing.T) {
	srv := startSecure(t)
	js := ensureStreams(t, srv)
	k1, err := srv.Store.AddHost("alpha1")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Store.WaitLoaded(k1.PublicKey, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	var v violations
	nc := mustDial(t, srv.ClientURL(), k1.File, &v)
	r := rand.New(rand.NewPCG(1, 2))
	keys := []wire.ImageKey{wiretest.RandKey(r)}
	p, err := transport.NewPublisher(nc, transport.PublisherConfig{Host: "alpha1", AckTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	img := &wire.ImageRecord{Version: wire.Version, Key: keys[0], Path: "/bin/x", Size: 1 << 16, TextStart: 0x120000000, TextEnd: 0x120010000}
	if err := p.PublishImage(img); err != nil {
		t.Fatal(err)
	}
	b := wiretest.RandBatch(r, wiretest.Options{Host: "alpha1", CPU: 0, Seq: 1, Epoch: 1, MaxEntries: 20, Images: keys, Offsets: 1 << 12})
	if err := p.PublishBatch(b); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("own subjects: %v (server said %q)", err, v.errs)
	}
	if st := p.Stats(); st.ImagesUploaded != 1 || st.BatchesPublished != 1 {
		t.Fatalf("own subjects: stats %+v", st)
	}
	hjs, _ := jetstream.New(nc)
	// A user program's file, as the agent uploads it (the first upload
	// creates the bucket).
	if up, err := transport.PutImageFile(ctxT(t, 10*time.Second), hjs, keys[0], []byte("ELF")); err != nil || !up {
		t.Fatalf("the host uploading a program file: %v %v (server said %q)", up, err, v.errs)
	}
	// Its stream's newest batch is the coordinator's to read for it
	// (TestHostRequestsConfined), not the host's.
	if last, err := transport.LastPublished(ctxT(t, 2*time.Second), hjs, "alpha1", 1); err == nil {
		t.Fatalf("LastPublished with the host's key: %v", last)
	}
	v.wait(t, `Permissions Violation for Publish to "$JS.API.STREAM.INFO.`+transport.StreamName+`"`)

	// Another host's subject: refused by the server, stored nowhere.
	other, _ := transport.BatchSubject("alpha2", 0)
	if err := nc.Publish(other, []byte("forged")); err != nil {
		t.Fatal(err)
	}
	v.wait(t, `Permissions Violation for Publish to "`+other+`"`)
	s, err := js.Stream(ctxT(t, 5*time.Second), transport.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctxT(t, 5*time.Second), jetstream.WithSubjectFilter("dcpi.batch.alpha2.>"))
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 || len(info.State.Subjects) != 0 {
		t.Errorf("stream holds %d messages, %v on alpha2's subjects; want alpha1's 1 and none of alpha2's", info.State.Msgs, info.State.Subjects)
	}
	// A host may not query profiles, nor consume the stream.
	if err := nc.PublishRequest(coordproto.SubjectQuery+coordproto.QueryProfile, nc.NewRespInbox(), nil); err != nil {
		t.Fatal(err)
	}
	v.wait(t, `Permissions Violation for Publish to "`+coordproto.SubjectQuery+coordproto.QueryProfile+`"`)
	if _, err := hjs.Consumer(ctxT(t, 2*time.Second), transport.StreamName, transport.DefaultDurable); err == nil {
		t.Error("a host's key looked up the aggregators' consumer")
	}
	// Nor read another user's replies.
	if _, err := nc.SubscribeSync("_INBOX.>"); err != nil {
		t.Fatal(err)
	}
	v.wait(t, `Permissions Violation for Subscription to "_INBOX.>"`)

	// The query role queries, and may not publish batches.
	var qv violations
	qc := mustDial(t, srv.ClientURL(), srv.Store.RoleFile(Query), &qv)
	if err := qc.Publish(other, []byte("x")); err != nil {
		t.Fatal(err)
	}
	qv.wait(t, "Permissions Violation for Publish")
}

// TestForgedCredentials: a seed the server never issued, an edited seed
// file, a file others may read and a missing file are each refused with
// an error that says so.
func TestForgedCredentials(t *testing.T) {
	srv := startSecure(t)
	dir := t.TempDir()

	kp, _ := nkeys.CreateUser()
	seed, _ := kp.Seed()
	stranger := filepath.Join(dir, "stranger.nk")
	os.WriteFile(stranger, append(seed, '\n'), 0o600)
	_, err := transport.Connect(transport.ConnConfig{URLs: []string{srv.ClientURL()}, CredsFile: stranger})
	if err != nil {
		t.Fatalf("a well-formed seed is the server's to refuse, not ours: %v", err)
	}
	if _, err := dial(t, srv.ClientURL(), stranger, nil); err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
		t.Errorf("a key the server never issued: %v, want an authorization violation", err)
	}

	k, err := srv.Store.AddHost("alpha1")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(k.File)
	i := strings.Index(string(data), "\nSU") + 10
	edited := []byte(string(data))
	edited[i] ^= 1 // one flipped bit in the seed: its checksum fails
	forged := filepath.Join(dir, "edited.nk")
	os.WriteFile(forged, edited, 0o600)
	_, err = transport.Connect(transport.ConnConfig{URLs: []string{srv.ClientURL()}, CredsFile: forged})
	if !errors.Is(err, transport.ErrCredentials) || !strings.Contains(err.Error(), forged) {
		t.Errorf("an edited seed: %v, want ErrCredentials naming the file", err)
	}

	open := filepath.Join(dir, "open.nk")
	os.WriteFile(open, data, 0o644)
	_, err = transport.Connect(transport.ConnConfig{URLs: []string{srv.ClientURL()}, CredsFile: open})
	if !errors.Is(err, transport.ErrFileMode) || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a seed file of mode 0644: %v, want ErrFileMode with the fix", err)
	}
	_, err = transport.Connect(transport.ConnConfig{URLs: []string{srv.ClientURL()}, CredsFile: filepath.Join(dir, "missing.nk")})
	if !errors.Is(err, transport.ErrCredentials) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("a missing file: %v", err)
	}
}

// TestFileModes: every file the store writes is 0600, its directories 0700;
// a credentials directory others may enter is refused.
func TestFileModes(t *testing.T) {
	srv := startSecure(t)
	if _, err := srv.Store.AddHost("alpha1"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Store.ServerTLS(nil); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := filepath.WalkDir(srv.Store.Dir(), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, _ := d.Info()
		want := os.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s: mode %04o, want %04o", path, info.Mode().Perm(), want)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Errorf("walked %d entries, want the roles' keys, a host's, TLS files and loaded", n)
	}
	d := t.TempDir()
	os.MkdirAll(filepath.Join(d, DirName), 0o755)
	os.Chmod(filepath.Join(d, DirName), 0o755)
	if _, err := Open(d); !errors.Is(err, transport.ErrFileMode) {
		t.Errorf("Open of a 0755 credentials directory: %v, want ErrFileMode", err)
	}
}

// TestRotateHost issues a host a second key, restarts its publisher on
// it, revokes the first (whose connection the server then drops), and
// checks that every sample published under either key is in the stream,
// exactly, and that the revoked key no longer connects.
func TestRotateHost(t *testing.T) {
	srv := startSecure(t)
	js := ensureStreams(t, srv)
	r := rand.New(rand.NewPCG(3, 4))
	keys := []wire.ImageKey{wiretest.RandKey(r)}
	var want uint64
	seq := uint64(0)
	publish := func(file string, n int) *nats.Conn {
		nc, err := transport.Connect(transport.ConnConfig{URLs: []string{srv.ClientURL()}, CredsFile: file, Name: "alpha1"})
		if err != nil {
			t.Fatal(err)
		}
		p, err := transport.NewPublisher(nc, transport.PublisherConfig{Host: "alpha1", AckTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			seq++
			b := wiretest.RandBatch(r, wiretest.Options{Host: "alpha1", CPU: 0, Seq: seq, Epoch: 1, MaxEntries: 30, Images: keys, Offsets: 1 << 12})
			want += b.Total()
			if err := p.PublishBatch(b); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Close(ctxT(t, 20*time.Second)); err != nil {
			t.Fatal(err)
		}
		return nc
	}
	k1, _ := srv.Store.AddHost("alpha1")
	if err := srv.Store.WaitLoaded(k1.PublicKey, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	old := publish(k1.File, 20)
	k2, _ := srv.Store.AddHost("alpha1")
	if err := srv.Store.WaitLoaded(k2.PublicKey, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if f, _ := srv.Store.HostFile("alpha1"); f != k2.File {
		t.Fatalf("newest key file %s, want %s", f, k2.File)
	}
	publish(k2.File, 20)
	if n, err := srv.Store.RevokeHost("alpha1", k1.PublicKey); err != nil || n != 1 {
		t.Fatalf("revoke: %d %v", n, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for old.IsConnected() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if old.IsConnected() {
		t.Error("the revoked key's connection is still up")
	}
	old.Close()
	if _, err := dial(t, srv.ClientURL(), k1.File, nil); err == nil {
		t.Error("the revoked key still connects")
	}
	publish(k2.File, 5)

	// Count what the stream holds, with the aggregator's key.
	anc := mustDial(t, srv.ClientURL(), srv.Store.RoleFile(Aggregator), nil)
	ajs, _ := jetstream.New(anc)
	c, err := transport.NewConsumer(ctxT(t, 10*time.Second), ajs, transport.ConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var got uint64
	batches := 0
	for batches < int(seq) {
		ds, err := c.Fetch(ctxT(t, 10*time.Second), 100, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			break
		}
		for i := range ds {
			if ds[i].Err != nil {
				t.Fatal(ds[i].Err)
			}
			got += ds[i].Batch.Total()
			batches++
			if err := ds[i].Ack(ctxT(t, 5*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got != want || batches != int(seq) {
		t.Errorf("stream held %d samples in %d batches, published %d in %d", got, batches, want, seq)
	}
	_ = js
}

// TestTLSBeyondLoopback: a server listening beyond loopback requires TLS
// with its CA's certificate; a client that verifies the CA connects, one
// that does not know it is refused.
func TestTLSBeyondLoopback(t *testing.T) {
	t.Setenv("DCPI_AUTH_REGISTRY", filepath.Join(t.TempDir(), "registry"))
	srv, err := StartServer(transport.ServerConfig{Dir: t.TempDir(), Host: "0.0.0.0", Port: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	if !srv.TLS || !srv.Store.HasCA() {
		t.Fatal("no TLS on 0.0.0.0")
	}
	url := strings.Replace(srv.ClientURL(), "0.0.0.0", "127.0.0.1", 1)
	c, err := Resolve([]string{url}, "", "", Query, "")
	if err != nil || c.CA != srv.Store.CAFile() || c.File != srv.Store.RoleFile(Query) {
		t.Fatalf("Resolve: %+v %v", c, err)
	}
	nc, err := transport.Connect(transport.ConnConfig{URLs: []string{url}, CredsFile: c.File, CAFile: c.CA})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	deadline := time.Now().Add(5 * time.Second)
	for !nc.IsConnected() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !nc.IsConnected() || !nc.TLSRequired() {
		t.Fatalf("connected %v, TLS %v", nc.IsConnected(), nc.TLSRequired())
	}
	data, _ := os.ReadFile(c.File)
	kp, _ := transport.ParseUserSeed(data)
	pub, _ := kp.PublicKey()
	if _, err := nats.Connect(url, nats.Nkey(pub, kp.Sign), nats.Timeout(2*time.Second), nats.MaxReconnects(0)); err == nil {
		t.Error("connected without knowing the CA")
	}
}

// TestLocalDiscovery: a role of this user given the loopback URL finds its
// credentials; a node's host without a key gets one, which the running
// server accepts at once, confined to that host; a URL no server of this
// user registered finds none, and one requiring credentials says so.
func TestLocalDiscovery(t *testing.T) {
	srv := startSecure(t)
	js := ensureStreams(t, srv)
	if err := transport.EnsurePathStream(ctxT(t, 10*time.Second), js, 1); err != nil {
		t.Fatal(err)
	}
	urls := []string{srv.ClientURL()}
	c, err := ResolveWait(ctxT(t, 20*time.Second), urls, "", "", Host, "alpha3", true, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if dir := filepath.Dir(c.File); dir != filepath.Join(srv.Store.Dir(), "hosts", "alpha3") || c.CA != "" {
		t.Fatalf("alpha3's credentials %+v, want a new key under hosts/alpha3 and no CA on loopback", c)
	}
	var v violations
	nc := mustDial(t, srv.ClientURL(), c.File, &v)
	hjs, _ := jetstream.New(nc)
	own, _ := transport.PathSubject("alpha3")
	if _, err := hjs.Publish(ctxT(t, 5*time.Second), own, []byte("x")); err != nil {
		t.Errorf("alpha3 publishing its own path subject: %v", err)
	}
	other, _ := transport.PathSubject("alpha4")
	nc.Publish(other, []byte("x"))
	v.wait(t, `Permissions Violation for Publish to "`+other+`"`)

	if c, err := Resolve([]string{"nats://127.0.0.1:1"}, "", "", Query, ""); err != nil || c.File != "" {
		t.Errorf("an unregistered port: %+v %v, want no credentials", c, err)
	}
	if c, err := Resolve([]string{"nats://10.1.2.3:" + strings.Split(srv.ClientURL(), ":")[2]}, "", "", Query, ""); err != nil || c.File != "" {
		t.Errorf("a remote URL: %+v %v, want no credentials", c, err)
	}
	if c, _ := Resolve(urls, "/given.nk", "/ca.pem", Query, ""); c.File != "/given.nk" || c.CA != "/ca.pem" {
		t.Errorf("explicit credentials were not used: %+v", c)
	}
	port, _ := strconv.Atoi(strings.Split(srv.ClientURL(), ":")[2])
	srv.Shutdown()
	if _, ok := Lookup(urls); ok {
		t.Error("a stopped server is still registered")
	}
	srv2, err := StartServer(transport.ServerConfig{Dir: filepath.Dir(srv.Store.Dir()), Host: "127.0.0.1", Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Shutdown()
	t.Setenv("DCPI_AUTH_REGISTRY", filepath.Join(t.TempDir(), "empty"))
	_, err = ResolveWait(ctxT(t, 20*time.Second), urls, "", "", Query, "", false, t.Logf)
	if !errors.Is(err, ErrNoCredentials) || !strings.Contains(err.Error(), "requires credentials") {
		t.Errorf("a secured server whose credentials cannot be found: %v", err)
	}
}

// TestQueryReadsImages: the query role reads image records and image
// files from the buckets (what the analysis tools and dcpi web fetch over
// NATS) and may not write them.
func TestQueryReadsImages(t *testing.T) {
	srv := startSecure(t)
	js := ensureStreams(t, srv)
	r := rand.New(rand.NewPCG(5, 6))
	key := wiretest.RandKey(r)
	file := make([]byte, 300<<10) // more than one chunk
	for i := range file {
		file[i] = byte(i * 7)
	}
	if _, err := transport.PutImageFile(ctxT(t, 10*time.Second), js, key, file); err != nil {
		t.Fatal(err)
	}
	k, _ := srv.Store.AddHost("alpha1")
	if err := srv.Store.WaitLoaded(k.PublicKey, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	hnc := mustDial(t, srv.ClientURL(), k.File, nil)
	p, _ := transport.NewPublisher(hnc, transport.PublisherConfig{Host: "alpha1", AckTimeout: 2 * time.Second})
	rec := &wire.ImageRecord{Version: wire.Version, Key: key, Path: "/bin/x", Size: 1 << 16, TextStart: 0x120000000, TextEnd: 0x120010000}
	p.PublishImage(rec)
	if err := p.Close(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}

	var v violations
	qnc := mustDial(t, srv.ClientURL(), srv.Store.RoleFile(Query), &v)
	qjs, _ := jetstream.New(qnc)
	got, err := transport.FetchImageFile(ctxT(t, 10*time.Second), qjs, key)
	if err != nil || len(got) != len(file) || got[len(got)-1] != file[len(file)-1] {
		t.Fatalf("query role fetching an image file: %d bytes, %v (server said %q)", len(got), err, v.errs)
	}
	gotRec, err := transport.FetchImage(ctxT(t, 10*time.Second), qjs, key)
	if err != nil || gotRec.Path != rec.Path {
		t.Fatalf("query role fetching an image record: %+v, %v (server said %q)", gotRec, err, v.errs)
	}
	if _, err := transport.PutImageFile(ctxT(t, 3*time.Second), qjs, wiretest.RandKey(r), []byte("x")); err == nil {
		t.Error("the query role wrote an image file")
	}
}

// TestQueryPagesFromReplica: the query role reaches the replica that
// served a paged query's first page (its later pages are asked of it by
// name) and gets its reply; a host may not.
func TestQueryPagesFromReplica(t *testing.T) {
	srv := startSecure(t)
	cnc := mustDial(t, srv.ClientURL(), srv.Store.RoleFile(Coordinator), nil)
	subject := "dcpi.coord.replica.c1.query." + coordproto.QueryMeAddrs
	sub, err := cnc.Subscribe(subject, func(m *nats.Msg) { m.Respond([]byte("page 2")) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := cnc.Flush(); err != nil {
		t.Fatal(err)
	}
	var qv violations
	qc := mustDial(t, srv.ClientURL(), srv.Store.RoleFile(Query), &qv)
	if m, err := qc.Request(subject, nil, 5*time.Second); err != nil || string(m.Data) != "page 2" {
		t.Fatalf("the query role asking replica c1: %v (server said %q)", err, qv.errs)
	}
	k, _ := srv.Store.AddHost("alpha1")
	if err := srv.Store.WaitLoaded(k.PublicKey, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	var hv violations
	hc := mustDial(t, srv.ClientURL(), k.File, &hv)
	if err := hc.PublishRequest(subject, hc.NewRespInbox(), nil); err != nil {
		t.Fatal(err)
	}
	hv.wait(t, `Permissions Violation for Publish to "`+subject+`"`)
}
