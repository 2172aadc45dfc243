package coordinator

import (
	"context"
	"dcpi/wire/coordproto"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	dto "github.com/prometheus/client_model/go"

	"dcpi/storage"
	"dcpi/transport/natstest"
	"dcpi/wire"
)

func TestCheckRequestHost(t *testing.T) {
	for _, c := range []struct {
		name, subject, body string
		other, bad          bool // want ErrOtherHost, want ErrBadRequest
	}{
		{"own", "dcpi.coord.ack.a", `{"Host":"a","Epoch":1}`, false, false},
		{"another host", "dcpi.coord.ack.a", `{"Host":"b","Epoch":1}`, true, true},
		// encoding/json matches field names without case, so does the check.
		{"another host, lower case key", "dcpi.coord.ack.a", `{"host":"b"}`, true, true},
		{"no host", "dcpi.coord.ack.a", `{"Epoch":1}`, false, true},
		{"empty host", "dcpi.coord.ack.a", `{"Host":""}`, false, true},
		{"host with a dot", "dcpi.coord.ack.a", `{"Host":"a.b"}`, false, true},
		{"not JSON", "dcpi.coord.ack.a", `{`, false, true},
		{"host not a string", "dcpi.coord.ack.a", `{"Host":7}`, false, true},
		{"another base", "dcpi.coord.heartbeat.a", `{"Host":"a"}`, false, true},
		{"no host token", "dcpi.coord.ack", `{"Host":"a"}`, false, true},
	} {
		_, err := checkRequestHost(coordproto.SubjectAck, c.subject, []byte(c.body))
		if errors.Is(err, ErrOtherHost) != c.other || errors.Is(err, ErrBadRequest) != c.bad {
			t.Errorf("%s: %s %s: %v; want other host %v, bad request %v", c.name, c.subject, c.body, err, c.other, c.bad)
		}
	}
}

// TestHostRequestSubjects: every request a host makes about itself has a
// subject ending in the host's name, its body carries that host, and a
// name no subject can carry is refused before anything is sent.
func TestHostRequestSubjects(t *testing.T) {
	subs, err := coordproto.HostRequestSubjects("alpha1")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"dcpi.coord.register.alpha1", "dcpi.coord.heartbeat.alpha1", "dcpi.coord.ack.alpha1", "dcpi.coord.processes.alpha1",
		"dcpi.coord.query.applied.alpha1", "dcpi.coord.lquery.applied.alpha1",
		"dcpi.coord.query.valuesapplied.alpha1", "dcpi.coord.lquery.valuesapplied.alpha1",
		"dcpi.coord.query.streamtail.alpha1", "dcpi.coord.query.valuestail.alpha1",
	}
	if !slices.Equal(subs, want) {
		t.Errorf("HostRequestSubjects = %q, want %q", subs, want)
	}
	for _, bad := range []string{"", "a.b", "a*", "a>", "a b"} {
		if _, err := coordproto.HostRequestSubjects(bad); !errors.Is(err, coordproto.ErrBadHost) {
			t.Errorf("HostRequestSubjects(%q): %v, want ErrBadHost", bad, err)
		}
		if _, err := hostSubject(coordproto.SubjectAck, bad); !errors.Is(err, ErrBadRequest) {
			t.Errorf("hostSubject(%q): %v, want ErrBadRequest", bad, err)
		}
	}
	// The bodies the checked subjects carry name the host as Host.
	for _, req := range []any{RegisterRequest{}, HeartbeatRequest{}, AckRequest{}, AppliedRequest{}, ValuesAppliedRequest{}, ProcessesRequest{}} {
		f, ok := reflect.TypeOf(req).FieldByName("Host")
		if !ok || f.Type.Kind() != reflect.String || f.Tag.Get("json") != "" {
			t.Errorf("%T has no plain string field Host", req)
		}
	}
	cl := NewClient(nil)
	ctx := context.Background()
	if _, err := cl.Heartbeat(ctx, "a.b"); !errors.Is(err, ErrBadRequest) {
		t.Errorf("heartbeat of host a.b: %v, want ErrBadRequest before sending", err)
	}
	if _, err := cl.Applied(ctx, "", 0); !errors.Is(err, ErrBadRequest) {
		t.Errorf("applied of host \"\": %v, want ErrBadRequest before sending", err)
	}
}

// TestClusterHostRequests: a request on host a's subject whose body names
// host b is refused and changes nothing — an ack for b does not let the
// epoch seal while b is live, a heartbeat for b does not keep b live, an
// applied question about b is not answered — and counted; a's own
// requests are served, and nothing answers the shared subjects of before.
func TestClusterHostRequests(t *testing.T) {
	c := newCluster(t, 1)
	nc := connect(t, c.url)
	cl := NewClient(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, h := range []string{"a", "b"} {
		if err := cl.Register(ctx, h, nil, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	forge := func(subject string, body any) error {
		t.Helper()
		data, _ := json.Marshal(body)
		msg, err := nc.Request(subject, data, 5*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", subject, err)
		}
		if msg.Header.Get(HeaderErrorCode) == "" {
			return nil
		}
		return replyError(msg)
	}
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), ErrOtherHost.Error()) {
			t.Errorf("%s: %v, want a refusal naming another host", what, err)
		}
	}

	// Both hosts live (genuine heartbeats) until b's stop.
	stopB := make(chan struct{})
	stopA := make(chan struct{})
	var wg sync.WaitGroup
	for h, stop := range map[string]chan struct{}{"a": stopA, "b": stopB} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
					cl.Heartbeat(ctx, h)
				}
			}
		}()
	}
	defer func() {
		select {
		case <-stopB:
		default:
			close(stopB)
		}
		close(stopA)
		wg.Wait()
	}()
	if n, err := cl.CutEpoch(ctx); err != nil || n != 2 {
		t.Fatalf("cut: %d %v", n, err)
	}
	if err := cl.AckEpoch(ctx, "a", 1, []uint64{0}); err != nil {
		t.Fatal(err)
	}
	refused("b's ack on a's subject", forge(coordproto.SubjectAck+".a", AckRequest{Host: "b", Epoch: 1, LastSeq: []uint64{0}}))
	epoch1 := func() EpochInfo {
		eps, err := cl.Epochs(ctx)
		if err != nil || len(eps) < 2 {
			t.Fatalf("epochs: %+v %v", eps, err)
		}
		return eps[0]
	}
	time.Sleep(300 * time.Millisecond)
	if e := epoch1(); e.State != storage.EpochClosing || len(e.Acks) != 1 || e.Acks[0].Host != "a" || !slices.Equal(e.Waiting, []string{"b: no ack"}) {
		t.Fatalf("epoch 1 after b's forged ack: %+v, want closing, waiting for b", e)
	}

	// b stops; heartbeats for b on a's subject do not keep it live, so
	// epoch 1 seals without it after the heartbeat timeout (1 s).
	close(stopB)
	beats := 0
	waitFor(t, "epoch 1 sealed", 15*time.Second, func() bool {
		refused("b's heartbeat on a's subject", forge(coordproto.SubjectHeartbeat+".a", HeartbeatRequest{Host: "b"}))
		beats++
		return epoch1().State == storage.EpochSealed
	})

	refused("b's applied on a's subject", forge(coordproto.SubjectQuery+coordproto.QueryApplied+".a", AppliedRequest{Host: "b"}))
	refused("b's values applied on a's subject", forge(coordproto.SubjectLinearQuery+coordproto.QueryValuesApplied+".a", ValuesAppliedRequest{Host: "b"}))
	refused("b's registration on a's subject", forge(coordproto.SubjectRegister+".a", RegisterRequest{Host: "b", CPUs: 4}))
	if _, err := cl.StreamState(ctx, "a", 0, true); err != nil {
		t.Errorf("a's own applied: %v", err)
	}
	if _, err := cl.ValuesApplied(ctx, "a"); err != nil {
		t.Errorf("a's own values applied: %v", err)
	}
	nodes, err := cl.Nodes(ctx)
	if err != nil || len(nodes) != 2 || nodes[1].Host != "b" || nodes[1].CPUs != 1 {
		t.Errorf("nodes after b's forged registration: %+v %v", nodes, err)
	}

	m := c.reps[0].metrics.refused
	for _, x := range []struct {
		kind, request string
		want          float64
	}{
		{"command", "ack", 1}, {"command", "heartbeat", float64(beats)}, {"command", "register", 1},
		{"query", "applied", 1}, {"lquery", "valuesapplied", 1}, {"query", "valuesapplied", 0},
	} {
		var got dto.Metric
		if err := m.WithLabelValues(x.kind, x.request).Write(&got); err != nil {
			t.Fatal(err)
		}
		if got.GetCounter().GetValue() != x.want {
			t.Errorf("refused %s %s = %v, want %v", x.kind, x.request, got.GetCounter().GetValue(), x.want)
		}
	}
	for _, shared := range []string{coordproto.SubjectHeartbeat, coordproto.SubjectAck, coordproto.SubjectQuery + coordproto.QueryApplied} {
		if _, err := nc.Request(shared, []byte(`{"Host":"a"}`), time.Second); !errors.Is(err, nats.ErrNoResponders) {
			t.Errorf("request on the shared %s: %v, want no responders", shared, err)
		}
	}
}

// TestClusterAppliedStreams: one applied request answers for every CPU a
// node asks about, each as the per-stream query does (a stream never
// ingested is 0), in the request's order; the body is confined to the
// subject's host like every host request, and a request over
// MaxAppliedCPUs is refused.
func TestClusterAppliedStreams(t *testing.T) {
	c := newCluster(t, 1)
	nc := connect(t, c.url)
	cl := NewClient(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newStreams(testRand(t))
	out, err := cl.Propose(ctx, s.deltas(20, 10, 1, "a", "b"), nil)
	if err != nil {
		t.Fatal(err)
	}
	allOutcomes(t, out, storage.Applied)
	for _, h := range []string{"a", "b"} {
		cpus := []uint16{1, 7, 0, wire.AllCPUs}
		got, err := cl.AppliedStreams(ctx, h, cpus)
		if err != nil {
			t.Fatal(err)
		}
		for i, cpu := range cpus {
			want, err := cl.Applied(ctx, h, cpu)
			if err != nil {
				t.Fatal(err)
			}
			if got[i] != want || want != s.next[fmt.Sprintf("%s/%d", h, cpu)] {
				t.Errorf("%s CPU %d: AppliedStreams %d, Applied %d, ingested through %d", h, cpu, got[i], want, s.next[fmt.Sprintf("%s/%d", h, cpu)])
			}
		}
	}
	data, _ := json.Marshal(AppliedRequest{Host: "b", CPUs: []uint16{0, 1}})
	msg, err := nc.Request(coordproto.SubjectQuery+coordproto.QueryApplied+".a", data, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := replyError(msg); msg.Header.Get(HeaderErrorCode) == "" || !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), ErrOtherHost.Error()) {
		t.Errorf("b's streams asked on a's subject: %q, want a refusal naming another host", msg.Data)
	}
	data, _ = json.Marshal(AppliedRequest{Host: "a", CPUs: make([]uint16, MaxAppliedCPUs+1)})
	msg, err = nc.Request(coordproto.SubjectQuery+coordproto.QueryApplied+".a", data, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := replyError(msg); msg.Header.Get(HeaderErrorCode) == "" || !errors.Is(err, ErrBadRequest) {
		t.Errorf("%d CPUs: %q, want a bad request", MaxAppliedCPUs+1, msg.Data)
	}
}

// TestAppliedStreamsOlderServer: a replica from before the request's CPUs
// answers for CPU alone; the client then asks per CPU and still returns
// every stream's Seq.
func TestAppliedStreamsOlderServer(t *testing.T) {
	nc := connect(t, natstest.StartServer(t, natstest.Options{}).URL())
	sub, err := nc.Subscribe(coordproto.SubjectQuery+coordproto.QueryApplied+".a", func(m *nats.Msg) {
		var req struct { // what an older replica decodes
			Host string
			CPU  uint16
		}
		_ = json.Unmarshal(m.Data, &req)
		reply, _ := json.Marshal(struct{ Seq, Delivered, Accounted uint64 }{Seq: 10 * uint64(req.CPU)})
		_ = m.Respond(reply)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := NewClient(nc).AppliedStreams(ctx, "a", []uint16{3, 1, 2})
	if err != nil || !slices.Equal(got, []uint64{30, 10, 20}) {
		t.Errorf("AppliedStreams from an older replica: %v %v, want [30 10 20]", got, err)
	}
}

// TestHeartbeatAnswersFollowChanges: the leader keeps each host's
// heartbeat answer until nodes, epochs or acknowledgements change; every
// such change shows in the next answer (a kept answer that outlived one
// fails here), and answers between changes agree.
func TestHeartbeatAnswersFollowChanges(t *testing.T) {
	c := newCluster(t, 1)
	cl := NewClient(connect(t, c.url))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	beat := func(h string) EpochStatus {
		t.Helper()
		st, err := cl.Heartbeat(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := beat("x"); st.Registered {
		t.Fatalf("before registering: %+v", st)
	}
	if err := cl.Register(ctx, "x", nil, 1, nil); err != nil {
		t.Fatal(err)
	}
	if st := beat("x"); !st.Registered || st.Epoch != 1 || len(st.Pending) != 0 {
		t.Fatalf("after registering: %+v", st)
	}
	if a, b := beat("x"), beat("x"); !reflect.DeepEqual(a, b) {
		t.Fatalf("answers with nothing changed differ: %+v, %+v", a, b)
	}
	if n, err := cl.CutEpoch(ctx); err != nil || n != 2 {
		t.Fatalf("cut: %d %v", n, err)
	}
	if st := beat("x"); st.Epoch != 2 || !slices.Equal(st.Pending, []uint64{1}) {
		t.Fatalf("after the cut: %+v, want epoch 2, pending [1]", st)
	}
	if err := cl.AckEpoch(ctx, "x", 1, []uint64{0}); err != nil {
		t.Fatal(err)
	}
	if st := beat("x"); len(st.Pending) != 0 {
		t.Fatalf("after the ack: %+v, want nothing pending", st)
	}
}
