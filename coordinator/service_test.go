package coordinator

import (
	"context"
	"dcpi/wire/coordproto"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// stuckFuture is a Raft future that resolves only when told to.
type stuckFuture chan error

func (f stuckFuture) Error() error { return <-f }

// TestRequestContext: a request's deadline is requestTimeout, or the
// client's stated wait if shorter; a malformed wait is a bad request; the
// parent (the service, the leadership) ends it too.
func TestRequestContext(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   time.Duration // 0: refused
	}{
		{"", requestTimeout},
		{"250", 250 * time.Millisecond},
		{"3600000", requestTimeout},
		{"99999999999999999999", 0},
		{"0", 0},
		{"-5", 0},
		{"1.5", 0},
		{"soon", 0},
	} {
		m := nats.NewMsg("dcpi.coord.ack")
		if tc.header != "" {
			m.Header.Set(headerTimeout, tc.header)
		}
		start := time.Now()
		ctx, cancel, err := requestContext(context.Background(), m)
		if tc.want == 0 {
			if !errors.Is(err, ErrBadRequest) {
				t.Errorf("header %q: %v, want ErrBadRequest", tc.header, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("header %q: %v", tc.header, err)
		}
		d, ok := ctx.Deadline()
		if left := d.Sub(start); !ok || left > tc.want+100*time.Millisecond || left < tc.want {
			t.Errorf("header %q: deadline in %v, want %v", tc.header, left, tc.want)
		}
		cancel()
	}
	parent, stop := context.WithCancelCause(context.Background())
	ctx, cancel, err := requestContext(parent, nats.NewMsg("dcpi.coord.ack"))
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	stop(errShuttingDown)
	<-ctx.Done()
	if err := ctxErr(ctx); !errors.Is(err, ErrNotLeader) {
		t.Errorf("request of a stopped service: %v, want ErrNotLeader", err)
	}
}

// TestWaitClassesEndedContexts: a wait that ends with its context reports
// a proposal's fate unknown whatever ended it (never ErrNotLeader, which
// would let a client repeat a cut), and a check as not-leader when the
// service stops or internal at a deadline; a resolved future's error is
// classed as raftErr does.
func TestWaitClassesEndedContexts(t *testing.T) {
	deadline := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	stopped := func() context.Context {
		ctx, stop := context.WithCancelCause(context.Background())
		stop(errShuttingDown)
		return ctx
	}
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		check bool
		want  error
		not   error
	}{
		{"proposal past its deadline", deadline(), false, ErrUnknownOutcome, ErrNotLeader},
		{"proposal of a stopping service", stopped(), false, ErrUnknownOutcome, ErrNotLeader},
		{"check past its deadline", deadline(), true, ErrInternal, ErrNotLeader},
		{"check of a stopping service", stopped(), true, ErrNotLeader, ErrUnknownOutcome},
	} {
		f := make(stuckFuture)
		var err error
		if tc.check {
			err = waitCheck(tc.ctx, f)
		} else {
			err = waitProposed(tc.ctx, f)
		}
		if !errors.Is(err, tc.want) || errors.Is(err, tc.not) {
			t.Errorf("%s: %v, want %v and not %v", tc.name, err, tc.want, tc.not)
		}
		close(f) // lets the waiting goroutine finish
	}
	f := make(stuckFuture, 1)
	f <- nil
	if err := waitProposed(context.Background(), f); err != nil {
		t.Errorf("resolved future: %v", err)
	}
	f = make(stuckFuture, 1)
	f <- errors.New("disk on fire")
	if err := waitProposed(context.Background(), f); !errors.Is(err, ErrInternal) {
		t.Errorf("failed future: %v, want ErrInternal", err)
	}
}

// TestServiceTimeoutHeader: a replica refuses a malformed Dcpi-Timeout
// and serves a request that states one, as the Client sends on every
// request.
func TestServiceTimeoutHeader(t *testing.T) {
	c := newCluster(t, 1)
	nc := connect(t, c.url)
	c.leader()
	for _, tc := range []struct {
		subject, timeout, wantCode string
	}{
		{coordproto.SubjectCut, "soon", codeBadRequest},
		{coordproto.SubjectQuery + coordproto.QueryEpochs, "0", codeBadRequest},
		{coordproto.SubjectQuery + coordproto.QueryEpochs, "2000", ""},
		{coordproto.SubjectLinearQuery + coordproto.QueryEpochs, "2000", ""},
	} {
		m := nats.NewMsg(tc.subject)
		m.Data = []byte("{}")
		m.Header.Set(headerTimeout, tc.timeout)
		reply, err := requestServed(nc, m)
		if err != nil {
			t.Fatalf("%s: %v", tc.subject, err)
		}
		if code := reply.Header.Get(HeaderErrorCode); code != tc.wantCode {
			t.Errorf("%s with %s %q: code %q (%s), want %q", tc.subject, headerTimeout, tc.timeout, code, reply.Header.Get(HeaderError), tc.wantCode)
		}
	}
	// The malformed requests changed nothing: no cut happened.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	eps, err := NewClient(nc).Epochs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) > 1 {
		t.Errorf("%d epochs after refused cuts, want at most the first", len(eps))
	}
}

// requestServed sends m, retrying while nobody serves its subject yet: a
// new leader subscribes to the leader subjects (the cut among them) just
// after it is elected, so the first requests can find no responder.
func requestServed(nc *nats.Conn, m *nats.Msg) (*nats.Msg, error) {
	for tries := 0; ; tries++ {
		reply, err := nc.RequestMsg(m, 5*time.Second)
		if !errors.Is(err, nats.ErrNoResponders) || tries == 200 {
			return reply, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
