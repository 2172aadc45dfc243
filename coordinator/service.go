package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/nats-io/nats.go"

	"dcpi/storage"
	"dcpi/wire"
	"dcpi/wire/coordproto"
)

// service is a replica's NATS side: queries on every replica, commands and
// liveness on the leader. Every request runs with a context that its
// deadline (requestTimeout, or less if the client's Dcpi-Timeout says so)
// and the service's stopping both end; Raft applies and reads wait on it.
type service struct {
	r  *Replica
	nc *nats.Conn

	ctx  context.Context // ended by stopAll
	stop context.CancelCauseFunc

	mu       sync.Mutex
	subs     []*nats.Subscription // query subscriptions
	closed   bool
	inflight sync.WaitGroup
	sem      chan struct{} // bounds concurrent handlers
}

// Queue groups: one replica answers each request.
const (
	queueQuery  = "dcpi-coord-query"
	queueLeader = "dcpi-coord-leader"
)

// requestTimeout bounds a request's handling: its Raft apply or barrier
// and its reads. A client that will wait less says so in headerTimeout.
const requestTimeout = 10 * time.Second

// headerTimeout carries how long the client waits for the reply, in
// milliseconds, so that a replica gives up on a request when its client
// has (a request with a deadline of its own keeps its place in the Raft
// queue no longer than it is wanted).
const headerTimeout = "Dcpi-Timeout"

// errShuttingDown ends the contexts of requests when the service stops:
// nothing more is done for them, and the client asks another replica.
var errShuttingDown = fmt.Errorf("%w: shutting down", ErrNotLeader)

func newService(r *Replica) *service {
	ctx, stop := context.WithCancelCause(context.Background())
	return &service{r: r, nc: r.cfg.NATS, ctx: ctx, stop: stop, sem: make(chan struct{}, 256)}
}

// handler serves one request; ctx ends at the request's deadline or when
// the service (or, for the leader's handlers, the leadership) ends.
type handler func(ctx context.Context, m *nats.Msg) ([]byte, error)

// subscribe serves subject (in a queue group if queue != ""), each request
// in its own goroutine: NATS delivers a subscription's messages one at a
// time, and a proposal waits a Raft round trip, which would otherwise
// serialize every aggregator behind one commit. Requests run under parent.
func (s *service) subscribe(parent context.Context, subject, queue string, h handler) (*nats.Subscription, error) {
	latency := s.r.metrics.request.WithLabelValues(requestLabels(subject))
	badReply := s.r.metrics.badReply.WithLabelValues(requestLabels(subject))
	cb := func(m *nats.Msg) {
		if !coordproto.IsReplyInbox(m.Reply) {
			// The reply would be the coordinator's publish, with its
			// credentials, on a subject the requester chose (a cut, a
			// stream's deletion, another host's batches): refused
			// unserved and unanswered. So is a message with no reply:
			// no client of the service sends one, and the server's own
			// publishes arrive so (JetStream's acknowledgement and API
			// answers, sent to the reply subject a host named, such as
			// this epoch cut's).
			badReply.Inc()
			s.r.logf("coordinator: %s: refused a request on %s whose reply subject %q is no inbox", s.r.cfg.ID, m.Subject, m.Reply)
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			s.respond(m, nil, errShuttingDown)
			return
		}
		s.inflight.Add(1)
		s.mu.Unlock()
		s.sem <- struct{}{}
		go func() {
			defer func() { <-s.sem; s.inflight.Done() }()
			ctx, cancel, err := requestContext(parent, m)
			if err != nil {
				s.respond(m, nil, err)
				return
			}
			defer cancel()
			start := time.Now()
			body, err := h(ctx, m)
			s.respond(m, body, err)
			latency.Observe(time.Since(start).Seconds())
		}()
	}
	if queue == "" {
		return s.nc.Subscribe(subject, cb)
	}
	return s.nc.QueueSubscribe(subject, queue, cb)
}

// subscribeRequest is subscribe for the request base: a host request
// (coordproto.HostRequests) is served on base + ".*", each request checked against
// its subject's host first (servePerHost); any other on base itself.
func (s *service) subscribeRequest(parent context.Context, base, queue string, h handler) (*nats.Subscription, error) {
	if !coordproto.IsHostRequest(base) {
		return s.subscribe(parent, base, queue, h)
	}
	return s.subscribe(parent, base+".*", queue, s.servePerHost(base, h))
}

// servePerHost serves a host request only if its body names its subject's
// host. A host's credentials may publish only its own request subjects
// (transport/auth), so a body naming another host is a host acting for
// another, such as acknowledging an epoch cut for a host that has not
// drained (which would let the epoch seal early): it is refused, changes
// nothing, and is counted and logged.
func (s *service) servePerHost(base string, h handler) handler {
	refused := s.r.metrics.refused.WithLabelValues(requestLabels(base))
	return func(ctx context.Context, m *nats.Msg) ([]byte, error) {
		named, err := checkRequestHost(base, m.Subject, m.Data)
		if errors.Is(err, ErrOtherHost) {
			refused.Inc()
			s.r.logf("coordinator: %s: refused a request on %s about host %q", s.r.cfg.ID, m.Subject, named)
		}
		if err != nil {
			return nil, err
		}
		return h(ctx, m)
	}
}

// requestContext is a request's context: parent's, ended at the request's
// deadline — requestTimeout, or the client's wait if shorter.
func requestContext(parent context.Context, m *nats.Msg) (context.Context, context.CancelFunc, error) {
	d := requestTimeout
	if v := m.Header.Get(headerTimeout); v != "" {
		ms, err := strconv.ParseUint(v, 10, 64)
		if err != nil || ms == 0 {
			return nil, nil, fmt.Errorf("%w: %s: header %s %q (want milliseconds > 0)", ErrBadRequest, m.Subject, headerTimeout, v)
		}
		if ms < uint64(d/time.Millisecond) {
			d = time.Duration(ms) * time.Millisecond
		}
	}
	ctx, cancel := context.WithTimeout(parent, d)
	return ctx, cancel, nil
}

// ctxErr says why ctx ended, for a reply: the service stopping or the
// leadership ending is ErrNotLeader (nothing was done; ask again), a
// deadline is an internal error. Only for work that changed nothing: a
// proposal whose wait ends is ErrUnknownOutcome (waitProposed).
func ctxErr(ctx context.Context) error {
	err := context.Cause(ctx)
	if errors.Is(err, ErrNotLeader) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrInternal, err)
}

// wait waits for a Raft future until ctx ends. Raft resolves every future
// (committed, failed, or at shutdown), so the waiting goroutine left behind
// when ctx ends first always finishes.
func wait(ctx context.Context, f raft.Future) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitProposed waits for a proposal (an entry, a configuration change)
// until ctx ends, when its fate is unknown: it may still commit. That is
// never ErrNotLeader, whatever ended ctx: a client must not take the
// proposal for one never made.
func waitProposed(ctx context.Context, f raft.Future) error {
	if err := wait(ctx, f); err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return fmt.Errorf("%w: %v", ErrUnknownOutcome, context.Cause(ctx))
		}
		return raftErr(err)
	}
	return nil
}

// waitCheck waits for a future that changes nothing (a leadership check,
// a barrier) until ctx ends.
func waitCheck(ctx context.Context, f raft.Future) error {
	if err := wait(ctx, f); err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return ctxErr(ctx)
		}
		return raftErr(err)
	}
	return nil
}

// timeoutOf is what is left of ctx's deadline, for Raft calls that take a
// timeout (how long to wait to enqueue), at most requestTimeout and never 0
// (which Raft takes for no limit).
func timeoutOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(min(time.Until(d), requestTimeout), time.Millisecond)
	}
	return requestTimeout
}

func (s *service) respond(m *nats.Msg, body []byte, err error) {
	if m.Reply == "" {
		return
	}
	reply := nats.NewMsg(m.Reply)
	if err != nil {
		reply.Header.Set(HeaderError, err.Error())
		reply.Header.Set(HeaderErrorCode, errorCode(err))
	} else {
		reply.Data = body
	}
	if err := m.RespondMsg(reply); err != nil {
		s.r.logf("coordinator: %s: reply on %s: %v", s.r.cfg.ID, m.Subject, err)
	}
}

func errorCode(err error) string {
	switch {
	case errors.Is(err, ErrNotLeader):
		return codeNotLeader
	case errors.Is(err, ErrUnknownOutcome):
		return codeUnknown
	case errors.Is(err, ErrBadRequest), errors.Is(err, ErrBadCommand):
		return codeBadRequest
	}
	return codeInternal
}

// startQueries subscribes the query subjects every replica serves.
func (s *service) startQueries() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for kind, q := range s.queries() {
		h := func(ctx context.Context, m *nats.Msg) ([]byte, error) { return q(ctx, m, nil) }
		for _, sub := range []struct{ subject, queue string }{
			{coordproto.SubjectQuery + kind, queueQuery},
			{coordproto.SubjectReplica + s.r.cfg.ID + ".query." + kind, ""},
		} {
			ns, err := s.subscribeRequest(s.ctx, sub.subject, sub.queue, h)
			if err != nil {
				return fmt.Errorf("subscribe %s: %w", sub.subject, err)
			}
			s.subs = append(s.subs, ns)
		}
	}
	return s.nc.Flush()
}

// query answers a query kind; live is the leader's liveness, nil on a
// follower.
type query func(ctx context.Context, m *nats.Msg, live func(string) (bool, time.Time, bool)) ([]byte, error)

func (s *service) queries() map[string]query {
	return map[string]query{
		coordproto.QueryEpochs: s.queryEpochs, coordproto.QueryNodes: s.queryNodes, coordproto.QueryImages: s.queryImages,
		coordproto.QueryApplied: s.queryApplied, coordproto.QueryTotals: s.queryTotals, coordproto.QueryProfile: s.queryProfile,
		coordproto.QueryStacks: s.queryStacks, coordproto.QueryPathImages: s.queryPathImages, coordproto.QueryPaths: s.queryPaths,
		coordproto.QueryProfileMe: s.queryProfileMe, coordproto.QueryValues: s.queryValues, coordproto.QueryValueTotals: s.queryValueTotals,
		coordproto.QueryValuesApplied: s.queryValuesApplied,
		coordproto.QueryMeHistory:     s.queryMeHistory,
		coordproto.QueryMeAddrs:       s.queryMeAddrs,
		coordproto.QueryStreamTail:    s.queryStreamTail,
		coordproto.QueryValuesTail:    s.queryValuesTail,
		coordproto.QueryProcesses:     s.queryProcesses,
	}
}

// stopAll unsubscribes everything and ends the requests already taken:
// what waits on Raft or reads gives up and replies.
func (s *service) stopAll() {
	s.mu.Lock()
	s.closed = true
	subs := s.subs
	s.subs = nil
	s.mu.Unlock()
	for _, sub := range subs {
		sub.Unsubscribe()
	}
	s.stop(errShuttingDown)
}

func (s *service) wait() { s.inflight.Wait() }

// leaderTerm is the leader's service for one term of leadership: its
// subscriptions, its liveness table (soft state: a new leader starts with
// every node live for one timeout, so a leader change neither seals early
// nor waits long) and its sealing loop.
type leaderTerm struct {
	s     *service
	since time.Time
	subs  []*nats.Subscription
	ctx   context.Context // ended by stop (or the service's stopping)
	end   context.CancelCauseFunc
	wg    sync.WaitGroup

	mu    sync.Mutex
	beats map[string]time.Time
	// answers are the heartbeat replies last read per host, each valid
	// while the FSM's MetaVersion is its version: a fleet's heartbeats
	// (2,000 a second at 1,000 hosts) would otherwise each read the
	// epochs and the node from Pebble.
	answers map[string]heartbeatAnswer
}

// heartbeatAnswer is a host's heartbeat reply as of an FSM MetaVersion.
type heartbeatAnswer struct {
	version uint64
	status  EpochStatus
}

// maxHeartbeatAnswers bounds the answers kept; past it they are dropped
// and read again.
const maxHeartbeatAnswers = 1 << 16

// lead starts the leader's service.
func (s *service) lead() (*leaderTerm, error) {
	ctx, end := context.WithCancelCause(s.ctx)
	l := &leaderTerm{s: s, since: time.Now(), ctx: ctx, end: end, beats: map[string]time.Time{}, answers: map[string]heartbeatAnswer{}}
	handlers := map[string]handler{
		coordproto.SubjectPropose:       l.propose,
		coordproto.SubjectRegister:      l.register,
		coordproto.SubjectHeartbeat:     l.heartbeat,
		coordproto.SubjectAck:           l.ack,
		coordproto.SubjectCut:           l.cut,
		coordproto.SubjectMembersAdd:    l.membersAdd,
		coordproto.SubjectMembersRemove: l.membersRemove,
		coordproto.SubjectUploadPaths:   l.uploadPaths,
		coordproto.SubjectIngestValues:  l.ingestValues,
		coordproto.SubjectProcesses:     l.putProcesses,
	}
	for kind, q := range s.queries() {
		handlers[coordproto.SubjectLinearQuery+kind] = func(ctx context.Context, m *nats.Msg) ([]byte, error) {
			if err := l.linearize(ctx); err != nil {
				return nil, err
			}
			return q(ctx, m, l.liveness)
		}
	}
	for subject, h := range handlers {
		sub, err := s.subscribeRequest(l.ctx, subject, queueLeader, h)
		if err != nil {
			l.stop()
			return nil, fmt.Errorf("subscribe %s: %w", subject, err)
		}
		l.subs = append(l.subs, sub)
	}
	if err := s.nc.Flush(); err != nil {
		l.stop()
		return nil, err
	}
	l.wg.Add(1)
	go l.loop()
	return l, nil
}

// errTermEnded ends the contexts of a leadership's requests and loop.
var errTermEnded = fmt.Errorf("%w: leadership ended", ErrNotLeader)

// stop ends the term: no new requests, and those taken give up.
func (l *leaderTerm) stop() {
	for _, sub := range l.subs {
		sub.Unsubscribe()
	}
	l.end(errTermEnded)
	l.wg.Wait()
}

// liveness reports whether host is live: heard from within the heartbeat
// timeout, counting the start of this leadership as heard from.
func (l *leaderTerm) liveness(host string) (live bool, last time.Time, known bool) {
	l.mu.Lock()
	last = l.beats[host]
	l.mu.Unlock()
	seen := last
	if seen.Before(l.since) {
		seen = l.since
	}
	return time.Since(seen) < l.s.r.cfg.HeartbeatTimeout, last, true
}

func (l *leaderTerm) live(host string) bool {
	ok, _, _ := l.liveness(host)
	return ok
}

func (l *leaderTerm) beat(host string) {
	l.mu.Lock()
	l.beats[host] = time.Now()
	l.mu.Unlock()
}

// loop opens the first epoch, then every SealInterval proposes the
// scheduled cut if one is due, the seals the sealing rule says are, and
// the retention command the policy says is.
func (l *leaderTerm) loop() {
	defer l.wg.Done()
	r := l.s.r
	if err := l.applyNow(&StartEpochs{At: r.cfg.Now()}); err != nil && l.ctx.Err() == nil {
		r.logf("coordinator: %s: start epochs: %v", r.cfg.ID, err)
	}
	t := time.NewTicker(r.cfg.SealInterval)
	defer t.Stop()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-t.C:
		}
		l.cutOnSchedule()
		due, err := r.fsm.DueSeals(l.live)
		if err != nil {
			r.logf("coordinator: %s: %v", r.cfg.ID, err)
			continue
		}
		for _, n := range due {
			if err := l.applyNow(&SealEpoch{Epoch: n, At: r.cfg.Now()}); err != nil {
				r.logf("coordinator: %s: seal epoch %d: %v", r.cfg.ID, n, err)
			} else {
				r.logf("coordinator: %s: sealed epoch %d", r.cfg.ID, n)
			}
		}
		l.retain()
	}
}

// retain proposes the merge or expiry RetentionDue says is due, if any:
// one per look, so a backlog (a policy turned on over a long history)
// is worked off a window at a time between the other duties. Like
// cutOnSchedule it keeps nothing between calls.
func (l *leaderTerm) retain() {
	r := l.s.r
	if !r.cfg.Retention.On() {
		return
	}
	c, due, err := r.fsm.DueRetention(r.cfg.Retention, r.cfg.Now())
	if err != nil || !due {
		if err != nil {
			r.logf("coordinator: %s: %v", r.cfg.ID, err)
		}
		return
	}
	ctx, cancel := context.WithTimeout(l.ctx, requestTimeout)
	defer cancel()
	res, err := l.apply(ctx, c)
	if err != nil {
		if l.ctx.Err() == nil {
			r.logf("coordinator: %s: retention %+v: %v", r.cfg.ID, c, err)
		}
		return
	}
	switch out := res.(type) {
	case MergeResult:
		if out.Parts > 1 {
			r.logf("coordinator: %s: merged epochs %d..%d into %d (%s..%s)", r.cfg.ID, out.Epoch.Number, out.Epoch.MergedThrough,
				out.Epoch.Number, out.Epoch.Start.Format(time.RFC3339), out.Epoch.End.Format(time.RFC3339))
		}
	case ExpireResult:
		if out.Epochs > 0 {
			r.logf("coordinator: %s: expired %d epochs through %d (%d samples)", r.cfg.ID, out.Epochs, c.(*ExpireEpochs).Through, out.Expired.Samples)
		}
	}
}

// cutOnSchedule proposes the scheduled cut ScheduledCutDue says is due,
// if any. It keeps nothing between calls: a failed or unknown proposal is
// simply due again at the next look, and the FSM applies only the first
// of the ones that commit.
func (l *leaderTerm) cutOnSchedule() {
	r := l.s.r
	c, due, err := r.fsm.DueScheduledCut(r.cfg.EpochEvery, r.cfg.Now())
	if err != nil {
		r.logf("coordinator: %s: %v", r.cfg.ID, err)
		return
	}
	if !due {
		return
	}
	ctx, cancel := context.WithTimeout(l.ctx, requestTimeout)
	defer cancel()
	res, err := l.apply(ctx, c)
	if err != nil {
		if l.ctx.Err() == nil {
			r.logf("coordinator: %s: scheduled cut of epoch %d: %v", r.cfg.ID, c.Epoch, err)
		}
		return
	}
	if out, _ := res.(ScheduledCutResult); out.Opened != 0 {
		r.logf("coordinator: %s: cut epoch %d on schedule (every %v), opened %d", r.cfg.ID, c.Epoch, r.cfg.EpochEvery, out.Opened)
	}
}

// applyNow applies a command of the leader's own (the loop's), bounded by
// requestTimeout and the term.
func (l *leaderTerm) applyNow(c Command) error {
	ctx, cancel := context.WithTimeout(l.ctx, requestTimeout)
	defer cancel()
	_, err := l.apply(ctx, c)
	return err
}

// apply proposes a command and waits until it is committed and applied
// here; the FSM's result comes back, an error result as the error.
func (l *leaderTerm) apply(ctx context.Context, c Command) (any, error) {
	b, err := EncodeCommand(c)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return l.applyEncoded(ctx, b)
}

// applyEncoded proposes an encoded command. If ctx ends first, nothing was
// proposed (ctxErr) or the entry's fate is unknown: it may still commit.
func (l *leaderTerm) applyEncoded(ctx context.Context, b []byte) (any, error) {
	if ctx.Err() != nil {
		return nil, ctxErr(ctx)
	}
	start := time.Now()
	f := l.s.r.raft.Apply(b, timeoutOf(ctx))
	if err := waitProposed(ctx, f); err != nil {
		return nil, err
	}
	l.s.r.metrics.commit.Observe(time.Since(start).Seconds())
	res := f.Response()
	if err, ok := res.(error); ok {
		if errors.Is(err, ErrBadCommand) {
			return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
		}
		return nil, fmt.Errorf("%w: %w", ErrInternal, err)
	}
	return res, nil
}

// linearize makes a read on this replica see every write committed before
// it: confirm leadership with a quorum, then wait for the FSM to apply the
// log up to now.
func (l *leaderTerm) linearize(ctx context.Context) error {
	r := l.s.r.raft
	if err := waitCheck(ctx, r.VerifyLeader()); err != nil {
		return err
	}
	return waitCheck(ctx, r.Barrier(timeoutOf(ctx)))
}

func (l *leaderTerm) propose(ctx context.Context, m *nats.Msg) ([]byte, error) {
	c, err := DecodeCommand(m.Data)
	if err != nil {
		return nil, fmt.Errorf("%w: propose: %w", ErrBadRequest, err)
	}
	if _, ok := c.(*Ingest); !ok {
		return nil, fmt.Errorf("%w: propose: %T is not an ingest", ErrBadRequest, c)
	}
	res, err := l.applyEncoded(ctx, m.Data)
	if err != nil {
		return nil, fmt.Errorf("propose: %w", err)
	}
	out, _ := res.([]storage.Outcome)
	b := make([]byte, len(out))
	for i, o := range out {
		b[i] = byte(o)
	}
	return b, nil
}

func decodeJSON(m *nats.Msg, v any) error {
	if err := json.Unmarshal(m.Data, v); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadRequest, m.Subject, err)
	}
	return nil
}

func (l *leaderTerm) register(ctx context.Context, m *nats.Msg) ([]byte, error) {
	var req RegisterRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	if _, err := l.apply(ctx, &RegisterNode{Host: req.Host, Labels: req.Labels, CPUs: req.CPUs, Periods: req.Periods, At: l.s.r.cfg.Now()}); err != nil {
		return nil, fmt.Errorf("register %q: %w", req.Host, err)
	}
	l.beat(req.Host)
	return nil, nil
}

func (l *leaderTerm) heartbeat(ctx context.Context, m *nats.Msg) ([]byte, error) {
	var req HeartbeatRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	if err := wire.CheckHost(req.Host); err != nil {
		return nil, fmt.Errorf("%w: heartbeat: %w", ErrBadRequest, err)
	}
	l.beat(req.Host)
	version := l.s.r.fsm.MetaVersion() // before the read: a change during it is a newer version
	l.mu.Lock()
	a, ok := l.answers[req.Host]
	l.mu.Unlock()
	if ok && a.version == version {
		return json.Marshal(a.status)
	}
	st := EpochStatus{Reads: wire.Version}
	err := l.s.view(ctx, "heartbeat", func(db *storage.DB) error {
		eps, err := db.Epochs()
		if err != nil {
			return err
		}
		if len(eps) > 0 {
			cur := eps[len(eps)-1]
			st.Epoch, st.State, st.Start = cur.Number, cur.State, cur.Start
		}
		for _, e := range eps {
			if e.State != storage.EpochClosing {
				continue
			}
			if _, err := db.EpochAck(e.Number, req.Host); errors.Is(err, storage.ErrNotFound) {
				st.Pending = append(st.Pending, e.Number)
			} else if err != nil {
				return err
			}
		}
		_, err = db.Node(req.Host)
		st.Registered = err == nil
		if errors.Is(err, storage.ErrNotFound) {
			err = nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	if len(l.answers) >= maxHeartbeatAnswers {
		clear(l.answers)
	}
	l.answers[req.Host] = heartbeatAnswer{version: version, status: st}
	l.mu.Unlock()
	return json.Marshal(st)
}

func (l *leaderTerm) ack(ctx context.Context, m *nats.Msg) ([]byte, error) {
	var req AckRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	l.beat(req.Host)
	res, err := l.apply(ctx, &AckEpoch{Host: req.Host, Epoch: req.Epoch, LastSeq: req.LastSeq, At: l.s.r.cfg.Now()})
	if err != nil {
		return nil, fmt.Errorf("ack of epoch %d by %q: %w", req.Epoch, req.Host, err)
	}
	a, _ := res.(AckResult)
	return json.Marshal(AckReply(a))
}

func (l *leaderTerm) cut(ctx context.Context, m *nats.Msg) ([]byte, error) {
	res, err := l.apply(ctx, &CutEpoch{At: l.s.r.cfg.Now()})
	if err != nil {
		return nil, fmt.Errorf("cut: %w", err)
	}
	n, _ := res.(uint64)
	return json.Marshal(CutReply{Epoch: n})
}

func (l *leaderTerm) membersAdd(ctx context.Context, m *nats.Msg) ([]byte, error) {
	var req MemberRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	if req.ID == "" || req.Addr == "" {
		return nil, fmt.Errorf("%w: add voter: ID and Addr are required", ErrBadRequest)
	}
	return nil, l.s.r.AddVoter(ctx, req.ID, req.Addr)
}

func (l *leaderTerm) membersRemove(ctx context.Context, m *nats.Msg) ([]byte, error) {
	var req MemberRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	if req.ID == "" {
		return nil, fmt.Errorf("%w: remove server: ID is required", ErrBadRequest)
	}
	return nil, l.s.r.RemoveServer(ctx, req.ID)
}

// Queries. live is the leader's liveness, nil on a follower.

// view reads the database for a request, unless ctx has ended; a read
// that scans (a profile page) checks ctx as it goes.
func (s *service) view(ctx context.Context, what string, fn func(db *storage.DB) error) error {
	if ctx.Err() != nil {
		return ctxErr(ctx)
	}
	// A replica whose database a read found damaged serves no more
	// queries from it (its /readyz says why): what is left of a damaged
	// table could answer with smaller counts. Another replica answers.
	if err := s.r.fsm.View(func(db *storage.DB) error { return db.Damaged() }); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInternal, what, err)
	}
	// One that stopped applying (StoreFailed) holds an ever older state.
	if err := s.r.fsm.StoreFailed(); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInternal, what, err)
	}
	if err := s.r.fsm.View(fn); err != nil {
		if errors.Is(err, ErrBadRequest) {
			return err
		}
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return ctxErr(ctx)
		}
		return fmt.Errorf("%w: %s: %w", ErrInternal, what, err)
	}
	return nil
}

func (s *service) queryEpochs(ctx context.Context, m *nats.Msg, live func(string) (bool, time.Time, bool)) ([]byte, error) {
	isLive := func(string) bool { return true }
	if live != nil {
		isLive = func(h string) bool { ok, _, _ := live(h); return ok }
	}
	var out []EpochInfo
	err := s.view(ctx, "query "+coordproto.QueryEpochs, func(db *storage.DB) error {
		eps, err := db.Epochs()
		if err != nil {
			return err
		}
		_, waiting, err := sealView(db, isLive)
		if err != nil {
			return err
		}
		for _, e := range eps {
			acks, err := db.EpochAcks(e.Number)
			if err != nil {
				return err
			}
			out = append(out, EpochInfo{Epoch: e, Acks: acks, Waiting: waiting[e.Number]})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

func (s *service) queryNodes(ctx context.Context, m *nats.Msg, live func(string) (bool, time.Time, bool)) ([]byte, error) {
	var out []NodeInfo
	err := s.view(ctx, "query "+coordproto.QueryNodes, func(db *storage.DB) error {
		nodes, err := db.Nodes()
		for _, n := range nodes {
			ni := NodeInfo{Node: n}
			if live != nil {
				ni.Live, ni.LastHeartbeat, ni.LivenessKnown = live(n.Host)
			}
			out = append(out, ni)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

func (s *service) queryImages(ctx context.Context, m *nats.Msg, _ func(string) (bool, time.Time, bool)) ([]byte, error) {
	var req ImagesRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	out := ImagesReply{Next: len(req.Keys)}
	size := 0
	err := s.view(ctx, "query "+coordproto.QueryImages, func(db *storage.DB) error {
		for i, k := range req.Keys {
			r, err := db.Image(ctx, k)
			if errors.Is(err, storage.ErrNotFound) {
				continue
			} else if err != nil {
				return err
			}
			b, err := r.MarshalBinary()
			if err != nil {
				return err
			}
			// base64 in JSON: 4/3 of the bytes.
			if size+len(b)*4/3 > pageBytes && len(out.Records) > 0 {
				out.Next = i
				return nil
			}
			size += len(b) * 4 / 3
			out.Records = append(out.Records, b)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

func (s *service) queryApplied(ctx context.Context, m *nats.Msg, _ func(string) (bool, time.Time, bool)) ([]byte, error) {
	var req AppliedRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	if len(req.CPUs) > MaxAppliedCPUs {
		return nil, fmt.Errorf("%w: query %s: %d CPUs, at most %d", ErrBadRequest, coordproto.QueryApplied, len(req.CPUs), MaxAppliedCPUs)
	}
	var reply AppliedReply
	err := s.view(ctx, "query "+coordproto.QueryApplied, func(db *storage.DB) error {
		st, err := db.Stream(req.Host, req.CPU)
		if err != nil {
			return err
		}
		reply.Seq, reply.Delivered, reply.Accounted = st.Seq, st.Delivered, st.Accounted
		if len(req.CPUs) > 0 {
			reply.Streams = make([]StreamApplied, len(req.CPUs))
		}
		for i, cpu := range req.CPUs {
			seq := reply.Seq // the client names its first CPU as CPU too
			if cpu != req.CPU {
				st, err := db.Stream(req.Host, cpu)
				if err != nil {
					return err
				}
				seq = st.Seq
			}
			reply.Streams[i] = StreamApplied{CPU: cpu, Seq: seq}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(reply)
}

func (s *service) queryTotals(ctx context.Context, m *nats.Msg, _ func(string) (bool, time.Time, bool)) ([]byte, error) {
	var q storage.Query
	if err := decodeJSON(m, &q); err != nil {
		return nil, err
	}
	var out TotalsReply
	err := s.view(ctx, "query "+coordproto.QueryTotals, func(db *storage.DB) (err error) {
		if out.Samples, out.Unknown, out.Drops, err = db.Totals(q); err != nil {
			return err
		}
		if out.StackSamples, out.StackDrops, err = db.StackTotals(q); err != nil {
			return err
		}
		if out.MeSamples, out.MeUnknown, out.MeDrops, err = db.MeTotals(q); err != nil {
			return err
		}
		out.Expired, err = db.ExpiredTotals(q)
		return err
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

var errPageFull = errors.New("page full")

func (s *service) queryProfile(ctx context.Context, m *nats.Msg, _ func(string) (bool, time.Time, bool)) ([]byte, error) {
	var req ProfileRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	max := req.MaxRows
	if max <= 0 || max > pageRows {
		max = pageRows
	}
	var p pageEncoder
	last := true
	err := s.view(ctx, "query "+coordproto.QueryProfile, func(db *storage.DB) error {
		err := db.ProfileAfter(ctx, req.Query, req.After, func(img wire.ImageKey, off uint64, ev uint8, host string, n uint64) error {
			if p.n%1024 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			p.add(ProfileRow{Image: img, Offset: off, Event: ev, Host: host, Count: n})
			if p.n >= max || p.size() >= pageBytes {
				return errPageFull
			}
			return nil
		})
		if errors.Is(err, errPageFull) {
			last, err = false, nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return p.finish(s.r.cfg.ID, last), nil
}
