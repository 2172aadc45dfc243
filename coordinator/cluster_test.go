package coordinator

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"dcpi/internal/slogf"
	"dcpi/storage"
	"dcpi/transport/natstest"
	"dcpi/wire"
	"dcpi/wire/coordproto"
)

// connect opens a client that keeps reconnecting, closed at the test's end.
func connect(t testing.TB, url string) *nats.Conn {
	t.Helper()
	return natstest.Connect(t, url, nats.MaxReconnects(-1))
}

// freeAddrs reserves loopback ports chosen by the OS (closed again, so the
// replicas can bind them; bootstrap needs every address up front).
func freeAddrs(t testing.TB, n int) []string {
	var out []string
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

type cluster struct {
	t     testing.TB
	url   string
	ids   []string
	addrs []string
	dirs  []string
	reps  []*Replica // nil: stopped
	boot  []Peer
	tune  func(*Config) // if set, adjusts every replica's Config
}

func newCluster(t testing.TB, n int) *cluster {
	return newTunedCluster(t, n, nil)
}

// newTunedCluster is newCluster with tune applied to every replica's
// Config (the benchmark runs Raft with its production settings).
func newTunedCluster(t testing.TB, n int, tune func(*Config)) *cluster {
	c := &cluster{t: t, url: natstest.StartServer(t, natstest.Options{}).URL(), addrs: freeAddrs(t, n), tune: tune}
	root := t.TempDir()
	for i := range n {
		c.ids = append(c.ids, fmt.Sprintf("r%d", i+1))
		c.dirs = append(c.dirs, filepath.Join(root, c.ids[i]))
		c.boot = append(c.boot, Peer{ID: c.ids[i], Addr: c.addrs[i]})
	}
	c.reps = make([]*Replica, n)
	for i := range n {
		c.start(i)
	}
	t.Cleanup(func() {
		for i := range c.reps {
			c.stop(i)
		}
	})
	return c
}

func (c *cluster) config(i int) Config {
	cfg := Config{
		ID: c.ids[i], RaftAddr: c.addrs[i], DataDir: c.dirs[i], Bootstrap: c.boot,
		NATS: connect(c.t, c.url), HeartbeatTimeout: time.Second, Logger: slogf.Quiet(c.t),
		RaftTimeout: 300 * time.Millisecond, SealInterval: 50 * time.Millisecond, TrailingLogs: 20, WALSegmentBytes: 32 << 10,
	}
	if c.tune != nil {
		c.tune(&cfg)
	}
	return cfg
}

func (c *cluster) start(i int) {
	c.t.Helper()
	r, err := Start(c.config(i))
	if err != nil {
		c.t.Fatal(err)
	}
	c.reps[i] = r
}

func (c *cluster) stop(i int) {
	if c.reps[i] != nil {
		if err := c.reps[i].Shutdown(); err != nil {
			c.t.Errorf("shutdown %s: %v", c.ids[i], err)
		}
		c.reps[i] = nil
	}
}

func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *cluster) leader() int {
	c.t.Helper()
	li := -1
	waitFor(c.t, "a leader", 15*time.Second, func() bool {
		for i, r := range c.reps {
			if r != nil && r.IsLeader() {
				li = i
				return true
			}
		}
		return false
	})
	return li
}

// converged waits until every running replica has applied the same log
// entries and holds what the others hold.
func (c *cluster) converged() string {
	c.t.Helper()
	var want string
	waitFor(c.t, "replicas to converge", 20*time.Second, func() bool {
		li := c.leader()
		if c.reps[li].Raft().Barrier(5*time.Second).Error() != nil {
			return false
		}
		idx := c.reps[li].FSM().AppliedIndex()
		want = ""
		for _, r := range c.reps {
			if r == nil {
				continue
			}
			if r.FSM().AppliedIndex() != idx {
				return false
			}
			var got string
			r.FSM().View(func(db *storage.DB) error { got = dumpDB(c.t, db); return nil })
			if want == "" {
				want = got
			} else if got != want {
				return false
			}
		}
		return true
	})
	return want
}

// streams feeds deltas of several hosts' streams, in order.
type streams struct {
	r    *rand.Rand
	next map[string]uint64 // host/cpu → next seq
	sent []storage.Delta
}

func newStreams(r *rand.Rand) *streams { return &streams{r: r, next: map[string]uint64{}} }

func (s *streams) deltas(n, entries int, epoch uint64, hosts ...string) []storage.Delta {
	var out []storage.Delta
	for range n {
		h := hosts[s.r.IntN(len(hosts))]
		cpu := uint16(s.r.IntN(2))
		k := fmt.Sprintf("%s/%d", h, cpu)
		first := s.next[k] + 1
		last := first + uint64(s.r.IntN(3))
		s.next[k] = last
		out = append(out, randDelta(s.r, h, cpu, first, last, epoch, entries))
	}
	s.sent = append(s.sent, out...)
	return out
}

func allOutcomes(t testing.TB, got []storage.Outcome, want storage.Outcome) {
	t.Helper()
	for i, o := range got {
		if o != want {
			t.Fatalf("outcome %d = %v, want %v (all: %v)", i, o, want, got)
		}
	}
}

func TestClusterIngestFailover(t *testing.T) {
	c := newCluster(t, 3)
	cl := NewClient(connect(t, c.url))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newStreams(testRand(t))
	hosts := []string{"alpha1", "alpha2", "alpha3"}

	out, err := cl.Propose(ctx, s.deltas(30, 40, 1, hosts...), []*wire.ImageRecord{imageRec(1), imageRec(2)})
	if err != nil {
		t.Fatal(err)
	}
	allOutcomes(t, out, storage.Applied)
	before := c.converged()

	// Redelivery changes nothing anywhere.
	out, err = cl.Propose(ctx, s.sent, nil)
	if err != nil {
		t.Fatal(err)
	}
	allOutcomes(t, out, storage.Duplicate)
	if got := c.converged(); got != before {
		t.Fatalf("redelivery changed the replicas")
	}

	// Kill the leader: a new one is elected and proposals continue
	// through the same client.
	old := c.leader()
	c.stop(old)
	out, err = cl.Propose(ctx, s.deltas(20, 40, 1, hosts...), nil)
	if err != nil {
		t.Fatal(err)
	}
	allOutcomes(t, out, storage.Applied)
	if nl := c.leader(); nl == old {
		t.Fatalf("stopped replica is the leader")
	}
	out, err = cl.Propose(ctx, s.deltas(20, 40, 2, hosts...), nil)
	if err != nil {
		t.Fatal(err)
	}
	allOutcomes(t, out, storage.Applied)

	// The old leader restarts on its data directory and catches up.
	c.start(old)
	c.converged()

	// Queries through the service: paged profiles, any replica and
	// linearizable, equal the database's.
	db := c.reps[c.leader()].DB()
	for _, q := range []storage.Query{{}, {Hosts: []string{"alpha1", "alpha3"}}, {Epochs: []uint64{2}, Events: []uint8{1}}} {
		var direct strings.Builder
		db.Profile(t.Context(), q, func(img wire.ImageKey, off uint64, ev uint8, host string, n uint64) error {
			fmt.Fprintln(&direct, img, off, ev, host, n)
			return nil
		})
		for _, lin := range []bool{false, true} {
			for _, page := range []int{0, 333} {
				cl.PageRows = page
				var got strings.Builder
				err := cl.Profile(ctx, q, lin, func(img wire.ImageKey, off uint64, ev uint8, host string, n uint64) error {
					fmt.Fprintln(&got, img, off, ev, host, n)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if got.String() != direct.String() || got.Len() == 0 {
					t.Fatalf("client profile %+v (linearizable %v, page %d) differs from the database's", q, lin, page)
				}
			}
		}
	}
	tot, err := cl.Totals(ctx, storage.Query{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if s, u, d, _ := db.Totals(storage.Query{}); tot.Samples != s || tot.Unknown != u || tot.Drops[wire.DropOverflowFull] != d[wire.DropOverflowFull] {
		t.Errorf("client totals %+v; database %d %d %v", tot, s, u, d)
	}
	imgs, err := cl.Images(ctx, []wire.ImageKey{imgKey(2), imgKey(5), imgKey(1)})
	if err != nil || len(imgs) != 2 || imgs[0].Key != imgKey(2) || imgs[1].Key != imgKey(1) {
		t.Errorf("images: %v %v", imgs, err)
	}
	if seq, err := cl.Applied(ctx, "alpha1", 0); err != nil || seq != s.next["alpha1/0"] {
		t.Errorf("applied alpha1/0 = %d %v, want %d", seq, err, s.next["alpha1/0"])
	}
}

// TestClusterEpochs: a cut, acks, sealing once acked batches are applied;
// a dead node does not block sealing and its late ack is recorded.
func TestClusterEpochs(t *testing.T) {
	c := newCluster(t, 3)
	cl := NewClient(connect(t, c.url))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newStreams(testRand(t))

	aPeriods := map[uint8]uint64{0: 63488, 1: 16384}
	for _, h := range []string{"a", "b"} {
		var periods map[uint8]uint64 // b: a node of an earlier build
		if h == "a" {
			periods = aPeriods
		}
		if err := cl.Register(ctx, h, map[string]string{"rack": "r1"}, 2, periods); err != nil {
			t.Fatal(err)
		}
	}
	st, err := cl.Heartbeat(ctx, "a")
	if err != nil || st.Epoch != 1 || st.State != storage.EpochOpen || !st.Registered || st.Reads != wire.Version {
		t.Fatalf("heartbeat: %+v %v (want the batch format this build reads, %d)", st, err, wire.Version)
	}
	if _, err := cl.Propose(ctx, s.deltas(6, 10, 1, "a"), nil); err != nil {
		t.Fatal(err)
	}
	n, err := cl.CutEpoch(ctx)
	if err != nil || n != 2 {
		t.Fatalf("cut: %d %v", n, err)
	}
	st, _ = cl.Heartbeat(ctx, "a")
	if st.Epoch != 2 || len(st.Pending) != 1 || st.Pending[0] != 1 {
		t.Fatalf("heartbeat after cut: %+v", st)
	}
	// a acks more than is applied yet: sealing waits for the batches.
	a0, a1 := s.next["a/0"], s.next["a/1"]
	if err := cl.AckEpoch(ctx, "a", 1, []uint64{a0 + 2, a1}); err != nil {
		t.Fatal(err)
	}
	// b keeps heartbeating without acking: sealing waits for it.
	stopB := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stopB:
				return
			case <-time.After(200 * time.Millisecond):
				cl.Heartbeat(ctx, "b")
			}
		}
	}()
	epoch1 := func() EpochInfo {
		eps, err := cl.Epochs(ctx)
		if err != nil || len(eps) < 2 {
			t.Fatalf("epochs: %+v %v", eps, err)
		}
		return eps[0]
	}
	time.Sleep(300 * time.Millisecond)
	if e := epoch1(); e.State != storage.EpochClosing || len(e.Waiting) != 2 {
		t.Fatalf("epoch 1 before the batches: %+v", e)
	}
	// The acked batches land; only b is waited for.
	d := randDelta(s.r, "a", 0, a0+1, a0+2, 1, 5)
	if out, err := cl.Propose(ctx, []storage.Delta{d}, nil); err != nil || out[0] != storage.Applied {
		t.Fatalf("propose: %v %v", out, err)
	}
	time.Sleep(300 * time.Millisecond)
	if e := epoch1(); e.State != storage.EpochClosing || len(e.Waiting) != 1 || e.Waiting[0] != "b: no ack" {
		t.Fatalf("epoch 1 waiting for b: %+v", e)
	}
	// b dies: after the heartbeat timeout, epoch 1 seals without it.
	close(stopB)
	wg.Wait()
	waitFor(t, "epoch 1 sealed", 10*time.Second, func() bool { return epoch1().State == storage.EpochSealed })
	nodes, err := cl.Nodes(ctx)
	if err != nil || len(nodes) != 2 || !nodes[0].LivenessKnown || nodes[1].Live {
		t.Errorf("nodes: %+v %v", nodes, err)
	}
	if len(nodes) == 2 && (!reflect.DeepEqual(nodes[0].Periods, aPeriods) || nodes[1].Periods != nil) {
		t.Errorf("periods through the registration request: a %v, b %v; want %v and none", nodes[0].Periods, nodes[1].Periods, aPeriods)
	}
	// b comes back: its batches still land in epoch 1 and its ack is late.
	if out, err := cl.Propose(ctx, s.deltas(2, 5, 1, "b"), nil); err != nil {
		t.Fatal(out, err)
	}
	if err := cl.AckEpoch(ctx, "b", 1, []uint64{s.next["b/0"], s.next["b/1"]}); err != nil {
		t.Fatal(err)
	}
	e := epoch1()
	if len(e.Acks) != 2 || e.Acks[0].Late || !e.Acks[1].Late {
		t.Errorf("acks: %+v", e.Acks)
	}
	// An ack of an open epoch and an unregistered host are refused.
	if err := cl.AckEpoch(ctx, "a", 2, nil); !errors.Is(err, ErrBadRequest) {
		t.Errorf("ack of the open epoch: %v", err)
	}
	if err := cl.AckEpoch(ctx, "zz", 1, nil); !errors.Is(err, ErrBadRequest) {
		t.Errorf("ack by an unregistered host: %v", err)
	}
	c.converged()
}

// TestClusterSnapshotJoin: a replica added after the leader snapshotted
// and truncated its log catches up from the snapshot.
func TestClusterSnapshotJoin(t *testing.T) {
	c := newCluster(t, 3)
	cl := NewClient(connect(t, c.url))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newStreams(testRand(t))
	for range 60 {
		if _, err := cl.Propose(ctx, s.deltas(2, 60, 1, "h1", "h2"), []*wire.ImageRecord{imageRec(3)}); err != nil {
			t.Fatal(err)
		}
	}
	li := c.leader()
	if err := c.reps[li].Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := cl.Propose(ctx, s.deltas(2, 30, 2, "h1", "h2"), nil); err != nil {
			t.Fatal(err)
		}
	}
	// A fourth replica joins through the client.
	c.ids = append(c.ids, "r4")
	c.addrs = append(c.addrs, freeAddrs(t, 1)...)
	c.dirs = append(c.dirs, filepath.Join(t.TempDir(), "r4"))
	c.reps = append(c.reps, nil)
	cfg := c.config(3)
	cfg.Bootstrap = nil
	r4, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.reps[3] = r4
	if err := cl.AddVoter(ctx, "r4", r4.Addr()); err != nil {
		t.Fatal(err)
	}
	c.converged()
	if gen := r4.FSM().generation(); gen < 2 {
		t.Errorf("r4 did not restore a snapshot (generation %d)", gen)
	}
	// Removing it works too.
	if err := cl.RemoveServer(ctx, "r4"); err != nil {
		t.Fatal(err)
	}
}

// TestClusterRejects: malformed requests get a clear error and change
// nothing.
func TestClusterRejects(t *testing.T) {
	c := newCluster(t, 3)
	nc := connect(t, c.url)
	cl := NewClient(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cl.Propose(ctx, newStreams(testRand(t)).deltas(3, 10, 1, "h"), nil); err != nil {
		t.Fatal(err)
	}
	before := c.converged()
	reg, _ := EncodeCommand(&RegisterNode{Host: "h", CPUs: 1, At: time.Now()})
	for _, tc := range []struct {
		subject string
		data    []byte
		want    string
	}{
		{coordproto.SubjectPropose, []byte("garbage"), "bad command"},
		{coordproto.SubjectPropose, nil, "bad command"},
		{coordproto.SubjectPropose, reg, "not an ingest"},
		{coordproto.SubjectRegister + ".x", []byte("{"), "bad request"},
		{coordproto.SubjectRegister + ".x", []byte(`{"Host":"","CPUs":1}`), "empty host"},
		{coordproto.SubjectRegister + ".x", []byte(`{"Host":"x","CPUs":0}`), "0 CPUs"},
		{coordproto.SubjectAck + ".h", []byte(`{"Host":"h","Epoch":0}`), "epoch 0"},
		{coordproto.SubjectHeartbeat + ".h", []byte(`{"Host":""}`), "empty host"},
		// A body about another host than the subject's.
		{coordproto.SubjectRegister + ".x", []byte(`{"Host":"h","CPUs":1}`), ErrOtherHost.Error()},
		{coordproto.SubjectAck + ".x", []byte(`{"Host":"h","Epoch":1}`), ErrOtherHost.Error()},
		{coordproto.SubjectQuery + coordproto.QueryTotals, []byte(`[1]`), "bad request"},
		{coordproto.SubjectMembersAdd, []byte(`{}`), "required"},
	} {
		msg, err := nc.Request(tc.subject, tc.data, 5*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", tc.subject, err)
		}
		if msg.Header.Get(HeaderErrorCode) != codeBadRequest || !strings.Contains(msg.Header.Get(HeaderError), tc.want) {
			t.Errorf("%s %q: reply %q %q, want bad-request mentioning %q", tc.subject, tc.data, msg.Header.Get(HeaderErrorCode), msg.Header.Get(HeaderError), tc.want)
		}
	}
	if after := c.converged(); after != before {
		t.Errorf("rejected requests changed the replicas")
	}
}
