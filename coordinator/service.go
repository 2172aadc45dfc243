package coordinator

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"dcpi/storage"
	"dcpi/wire"
)

// service is a replica's NATS side: queries on every replica, commands and
// liveness on the leader.
type service struct {
	r  *Replica
	nc *nats.Conn

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

const applyTimeout = 10 * time.Second

func newService(r *Replica) *service {
	return &service{r: r, nc: r.cfg.NATS, sem: make(chan struct{}, 256)}
}

type handler func(m *nats.Msg) ([]byte, error)

// subscribe serves subject (in a queue group if queue != ""), each request
// in its own goroutine: NATS delivers a subscription's messages one at a
// time, and a proposal waits a Raft round trip, which would otherwise
// serialize every aggregator behind one commit.
func (s *service) subscribe(subject, queue string, h handler) (*nats.Subscription, error) {
	cb := func(m *nats.Msg) {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			s.respond(m, nil, fmt.Errorf("%w: shutting down", ErrNotLeader))
			return
		}
		s.inflight.Add(1)
		s.mu.Unlock()
		s.sem <- struct{}{}
		go func() {
			defer func() { <-s.sem; s.inflight.Done() }()
			body, err := h(m)
			s.respond(m, body, err)
		}()
	}
	if queue == "" {
		return s.nc.Subscribe(subject, cb)
	}
	return s.nc.QueueSubscribe(subject, queue, cb)
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
	kinds := map[string]func(m *nats.Msg, live func(string) (bool, time.Time, bool)) ([]byte, error){
		QueryEpochs: s.queryEpochs, QueryNodes: s.queryNodes, QueryImages: s.queryImages,
		QueryApplied: s.queryApplied, QueryTotals: s.queryTotals, QueryProfile: s.queryProfile,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for kind, q := range kinds {
		h := func(m *nats.Msg) ([]byte, error) { return q(m, nil) }
		for _, sub := range []struct{ subject, queue string }{
			{SubjectQuery + kind, queueQuery},
			{subjectReplica + s.r.cfg.ID + ".query." + kind, ""},
		} {
			ns, err := s.subscribe(sub.subject, sub.queue, h)
			if err != nil {
				return fmt.Errorf("subscribe %s: %w", sub.subject, err)
			}
			s.subs = append(s.subs, ns)
		}
	}
	return s.nc.Flush()
}

// stopAll unsubscribes everything; requests already taken finish.
func (s *service) stopAll() {
	s.mu.Lock()
	s.closed = true
	subs := s.subs
	s.subs = nil
	s.mu.Unlock()
	for _, sub := range subs {
		sub.Unsubscribe()
	}
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
	done  chan struct{}
	wg    sync.WaitGroup

	mu    sync.Mutex
	beats map[string]time.Time
}

// lead starts the leader's service.
func (s *service) lead() (*leaderTerm, error) {
	l := &leaderTerm{s: s, since: time.Now(), done: make(chan struct{}), beats: map[string]time.Time{}}
	handlers := map[string]handler{
		SubjectPropose:       l.propose,
		SubjectRegister:      l.register,
		SubjectHeartbeat:     l.heartbeat,
		SubjectAck:           l.ack,
		SubjectCut:           l.cut,
		SubjectMembersAdd:    l.membersAdd,
		SubjectMembersRemove: l.membersRemove,
	}
	queries := map[string]func(m *nats.Msg, live func(string) (bool, time.Time, bool)) ([]byte, error){
		QueryEpochs: s.queryEpochs, QueryNodes: s.queryNodes, QueryImages: s.queryImages,
		QueryApplied: s.queryApplied, QueryTotals: s.queryTotals, QueryProfile: s.queryProfile,
	}
	for kind, q := range queries {
		handlers[SubjectLinearQuery+kind] = func(m *nats.Msg) ([]byte, error) {
			if err := l.linearize(); err != nil {
				return nil, err
			}
			return q(m, l.liveness)
		}
	}
	for subject, h := range handlers {
		sub, err := s.subscribe(subject, queueLeader, h)
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

func (l *leaderTerm) stop() {
	for _, sub := range l.subs {
		sub.Unsubscribe()
	}
	close(l.done)
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

// loop opens the first epoch, then evaluates the sealing rule every
// SealInterval and proposes the seals due.
func (l *leaderTerm) loop() {
	defer l.wg.Done()
	r := l.s.r
	if _, err := l.apply(&StartEpochs{At: time.Now()}); err != nil {
		r.logf("coordinator: %s: start epochs: %v", r.cfg.ID, err)
	}
	t := time.NewTicker(r.cfg.SealInterval)
	defer t.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-t.C:
		}
		due, err := r.fsm.DueSeals(l.live)
		if err != nil {
			r.logf("coordinator: %s: %v", r.cfg.ID, err)
			continue
		}
		for _, n := range due {
			if _, err := l.apply(&SealEpoch{Epoch: n, At: time.Now()}); err != nil {
				r.logf("coordinator: %s: seal epoch %d: %v", r.cfg.ID, n, err)
			} else {
				r.logf("coordinator: %s: sealed epoch %d", r.cfg.ID, n)
			}
		}
	}
}

// apply proposes a command and waits until it is committed and applied
// here; the FSM's result comes back, an error result as the error.
func (l *leaderTerm) apply(c Command) (any, error) {
	b, err := EncodeCommand(c)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return l.applyEncoded(b)
}

func (l *leaderTerm) applyEncoded(b []byte) (any, error) {
	f := l.s.r.raft.Apply(b, applyTimeout)
	if err := f.Error(); err != nil {
		return nil, raftErr(err)
	}
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
func (l *leaderTerm) linearize() error {
	r := l.s.r.raft
	if err := r.VerifyLeader().Error(); err != nil {
		return raftErr(err)
	}
	if err := r.Barrier(applyTimeout).Error(); err != nil {
		return raftErr(err)
	}
	return nil
}

func (l *leaderTerm) propose(m *nats.Msg) ([]byte, error) {
	c, err := DecodeCommand(m.Data)
	if err != nil {
		return nil, fmt.Errorf("%w: propose: %w", ErrBadRequest, err)
	}
	if _, ok := c.(*Ingest); !ok {
		return nil, fmt.Errorf("%w: propose: %T is not an ingest", ErrBadRequest, c)
	}
	res, err := l.applyEncoded(m.Data)
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

func (l *leaderTerm) register(m *nats.Msg) ([]byte, error) {
	var req RegisterRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	if _, err := l.apply(&RegisterNode{Host: req.Host, Labels: req.Labels, CPUs: req.CPUs, At: time.Now()}); err != nil {
		return nil, fmt.Errorf("register %q: %w", req.Host, err)
	}
	l.beat(req.Host)
	return nil, nil
}

func (l *leaderTerm) heartbeat(m *nats.Msg) ([]byte, error) {
	var req HeartbeatRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	if err := wire.CheckHost(req.Host); err != nil {
		return nil, fmt.Errorf("%w: heartbeat: %w", ErrBadRequest, err)
	}
	l.beat(req.Host)
	var st EpochStatus
	err := l.s.r.fsm.View(func(db *storage.DB) error {
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
		return nil, fmt.Errorf("%w: heartbeat: %w", ErrInternal, err)
	}
	return json.Marshal(st)
}

func (l *leaderTerm) ack(m *nats.Msg) ([]byte, error) {
	var req AckRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	l.beat(req.Host)
	res, err := l.apply(&AckEpoch{Host: req.Host, Epoch: req.Epoch, LastSeq: req.LastSeq, At: time.Now()})
	if err != nil {
		return nil, fmt.Errorf("ack of epoch %d by %q: %w", req.Epoch, req.Host, err)
	}
	a, _ := res.(AckResult)
	return json.Marshal(AckReply{Late: a.Late})
}

func (l *leaderTerm) cut(m *nats.Msg) ([]byte, error) {
	res, err := l.apply(&CutEpoch{At: time.Now()})
	if err != nil {
		return nil, fmt.Errorf("cut: %w", err)
	}
	n, _ := res.(uint64)
	return json.Marshal(CutReply{Epoch: n})
}

func (l *leaderTerm) membersAdd(m *nats.Msg) ([]byte, error) {
	var req MemberRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	if req.ID == "" || req.Addr == "" {
		return nil, fmt.Errorf("%w: add voter: ID and Addr are required", ErrBadRequest)
	}
	return nil, l.s.r.AddVoter(req.ID, req.Addr)
}

func (l *leaderTerm) membersRemove(m *nats.Msg) ([]byte, error) {
	var req MemberRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	if req.ID == "" {
		return nil, fmt.Errorf("%w: remove server: ID is required", ErrBadRequest)
	}
	return nil, l.s.r.RemoveServer(req.ID)
}

// Queries. live is the leader's liveness, nil on a follower.

func (s *service) view(what string, fn func(db *storage.DB) error) error {
	if err := s.r.fsm.View(fn); err != nil {
		if errors.Is(err, ErrBadRequest) {
			return err
		}
		return fmt.Errorf("%w: query %s: %w", ErrInternal, what, err)
	}
	return nil
}

func (s *service) queryEpochs(m *nats.Msg, live func(string) (bool, time.Time, bool)) ([]byte, error) {
	isLive := func(string) bool { return true }
	if live != nil {
		isLive = func(h string) bool { ok, _, _ := live(h); return ok }
	}
	var out []EpochInfo
	err := s.view(QueryEpochs, func(db *storage.DB) error {
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

func (s *service) queryNodes(m *nats.Msg, live func(string) (bool, time.Time, bool)) ([]byte, error) {
	var out []NodeInfo
	err := s.view(QueryNodes, func(db *storage.DB) error {
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

func (s *service) queryImages(m *nats.Msg, _ func(string) (bool, time.Time, bool)) ([]byte, error) {
	var req ImagesRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	out := ImagesReply{Next: len(req.Keys)}
	size := 0
	err := s.view(QueryImages, func(db *storage.DB) error {
		for i, k := range req.Keys {
			r, err := db.Image(k)
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

func (s *service) queryApplied(m *nats.Msg, _ func(string) (bool, time.Time, bool)) ([]byte, error) {
	var req AppliedRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	var st storage.StreamState
	err := s.view(QueryApplied, func(db *storage.DB) (err error) {
		st, err = db.Stream(req.Host, req.CPU)
		return err
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(AppliedReply{Seq: st.Seq, Delivered: st.Delivered, Accounted: st.Accounted})
}

func (s *service) queryTotals(m *nats.Msg, _ func(string) (bool, time.Time, bool)) ([]byte, error) {
	var q storage.Query
	if err := decodeJSON(m, &q); err != nil {
		return nil, err
	}
	var out TotalsReply
	err := s.view(QueryTotals, func(db *storage.DB) (err error) {
		out.Samples, out.Unknown, out.Drops, err = db.Totals(q)
		return err
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

var errPageFull = errors.New("page full")

func (s *service) queryProfile(m *nats.Msg, _ func(string) (bool, time.Time, bool)) ([]byte, error) {
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
	err := s.view(QueryProfile, func(db *storage.DB) error {
		err := db.ProfileAfter(req.Query, req.After, func(img wire.ImageKey, off uint64, ev uint8, host string, n uint64) error {
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
