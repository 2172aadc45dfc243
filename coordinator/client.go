package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"dcpi/storage"
	"dcpi/wire"
	"dcpi/wire/coordproto"
)

// Client talks to the coordinator over NATS request/reply. Requests to the
// leader are retried, with backoff, across leader changes (no responders,
// not-leader replies, timeouts) until the context ends, where retrying is
// safe: an ingest is deduplicated by sequence, a registration or an ack
// repeats harmlessly; a cut is not retried once it may have been proposed.
type Client struct {
	nc *nats.Conn
	// Timeout bounds one request attempt (default 5 s).
	Timeout time.Duration
	// MaxRequest bounds a proposal request's bytes; 0 means the
	// connection's max payload less 64 KiB for headers.
	MaxRequest int
	// PageRows bounds the rows of one profile page; 0 means the
	// replica's page size (50,000 rows or 512 KiB).
	PageRows int
}

// NewClient returns a client on nc.
func NewClient(nc *nats.Conn) *Client { return &Client{nc: nc, Timeout: 5 * time.Second} }

// retry says which failures request retries.
type retry int

const (
	retryNotProposed retry = iota // no responders, not-leader
	retryAll                      // also timeouts and unknown outcomes
)

func (c *Client) request(ctx context.Context, subject string, data []byte, mode retry) (*nats.Msg, error) {
	backoff := 10 * time.Millisecond
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	var last error
	for {
		actx, cancel := context.WithTimeout(ctx, timeout)
		msg, err := c.nc.RequestMsgWithContext(actx, requestMsg(actx, subject, data))
		cancel()
		if err == nil {
			if code := msg.Header.Get(HeaderErrorCode); code != "" || msg.Header.Get(HeaderError) != "" {
				err = replyError(msg)
				if !(code == codeNotLeader || (code == codeUnknown && mode == retryAll)) {
					return nil, fmt.Errorf("coordinator: %s: %w", subject, err)
				}
			} else {
				return msg, nil
			}
		} else if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			// The attempt timed out: a proposal may have committed.
			err = fmt.Errorf("%w: no reply in %v", ErrUnknownOutcome, timeout)
			if mode != retryAll {
				return nil, fmt.Errorf("coordinator: %s: %w", subject, err)
			}
		} else if !errors.Is(err, nats.ErrNoResponders) {
			if ctx.Err() != nil && last != nil {
				err = fmt.Errorf("%w (last failure: %w)", ctx.Err(), last)
			}
			return nil, fmt.Errorf("coordinator: %s: %w", subject, err)
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("coordinator: %s: %w (last failure: %w)", subject, ctx.Err(), last)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// requestMsg is a request that tells the replica how long its client will
// wait for the reply (headerTimeout), so the replica stops working on it
// when no one is waiting any more.
func requestMsg(ctx context.Context, subject string, data []byte) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = data
	if d, ok := ctx.Deadline(); ok {
		if ms := time.Until(d).Milliseconds(); ms > 0 {
			m.Header.Set(headerTimeout, strconv.FormatInt(ms, 10))
		}
	}
	return m
}

// replyError turns an error reply into an error wrapping the sentinel of
// its class.
func replyError(msg *nats.Msg) error {
	text := msg.Header.Get(HeaderError)
	sentinel := ErrInternal
	switch msg.Header.Get(HeaderErrorCode) {
	case codeNotLeader:
		sentinel = ErrNotLeader
	case codeUnknown:
		sentinel = ErrUnknownOutcome
	case codeBadRequest:
		sentinel = ErrBadRequest
	}
	return &remoteError{sentinel: sentinel, text: text}
}

// remoteError is an error a replica replied with.
type remoteError struct {
	sentinel error
	text     string
}

func (e *remoteError) Error() string { return "remote: " + e.text }
func (e *remoteError) Unwrap() error { return e.sentinel }

func (c *Client) requestJSON(ctx context.Context, subject string, req, reply any, mode retry) error {
	data := []byte("{}")
	if req != nil {
		var err error
		if data, err = json.Marshal(req); err != nil {
			return fmt.Errorf("coordinator: %s: %w", subject, err)
		}
	}
	msg, err := c.request(ctx, subject, data, mode)
	if err != nil {
		return err
	}
	if reply != nil {
		if err := json.Unmarshal(msg.Data, reply); err != nil {
			return fmt.Errorf("coordinator: %s: reply: %w", subject, err)
		}
	}
	return nil
}

// Propose commits deltas and images and returns each delta's outcome. It
// sends them in as many requests as NATS's payload limit needs, in order.
// A request retried after a timeout may already have committed: its
// deltas then come back Duplicate (their sequences are applied).
func (c *Client) Propose(ctx context.Context, deltas []storage.Delta, images []*wire.ImageRecord) ([]storage.Outcome, error) {
	max := c.MaxRequest
	if max <= 0 {
		max = int(c.nc.MaxPayload()) - 64<<10
	}
	chunks, err := encodeIngestChunks(deltas, images, max)
	if err != nil {
		return nil, fmt.Errorf("coordinator: propose: %w", err)
	}
	out := make([]storage.Outcome, 0, len(deltas))
	for _, ch := range chunks {
		msg, err := c.request(ctx, coordproto.SubjectPropose, ch.data, retryAll)
		if err != nil {
			return nil, err
		}
		if len(msg.Data) != ch.to-ch.from {
			return nil, fmt.Errorf("coordinator: propose: %w: %d outcomes for %d deltas", ErrInternal, len(msg.Data), ch.to-ch.from)
		}
		for _, o := range msg.Data {
			out = append(out, storage.Outcome(o))
		}
	}
	return out, nil
}

// Register registers a node (again, to update its labels, CPUs or
// periods: storage.Node.Periods, nil when unknown).
func (c *Client) Register(ctx context.Context, host string, labels map[string]string, cpus int, periods map[uint8]uint64) error {
	subject, err := hostSubject(coordproto.SubjectRegister, host)
	if err != nil {
		return err
	}
	return c.requestJSON(ctx, subject, RegisterRequest{Host: host, Labels: labels, CPUs: cpus, Periods: periods}, nil, retryAll)
}

// Heartbeat tells the leader host is alive and learns where epochs stand.
func (c *Client) Heartbeat(ctx context.Context, host string) (EpochStatus, error) {
	var st EpochStatus
	subject, err := hostSubject(coordproto.SubjectHeartbeat, host)
	if err != nil {
		return st, err
	}
	err = c.requestJSON(ctx, subject, HeartbeatRequest{Host: host}, &st, retryAll)
	return st, err
}

// AckEpoch acknowledges that host has published everything it sampled in
// epoch: lastSeq[i] is the last batch Seq of CPU i's stream (0: none), and
// an element past the node's CPUs is its daemon's AllCPUs stream. An ack of
// an epoch already sealed is recorded as late (Epochs shows it).
func (c *Client) AckEpoch(ctx context.Context, host string, epoch uint64, lastSeq []uint64) error {
	subject, err := hostSubject(coordproto.SubjectAck, host)
	if err != nil {
		return err
	}
	return c.requestJSON(ctx, subject, AckRequest{Host: host, Epoch: epoch, LastSeq: lastSeq}, nil, retryAll)
}

// CutEpoch closes the open epoch and returns the number of the one it
// opened. It is not retried once it may have been proposed (a second cut
// would close the new epoch): ErrUnknownOutcome says to look at Epochs.
func (c *Client) CutEpoch(ctx context.Context) (uint64, error) {
	var reply CutReply
	err := c.requestJSON(ctx, coordproto.SubjectCut, nil, &reply, retryNotProposed)
	return reply.Epoch, err
}

// AddVoter adds a replica to the Raft group.
func (c *Client) AddVoter(ctx context.Context, id, addr string) error {
	return c.requestJSON(ctx, coordproto.SubjectMembersAdd, MemberRequest{ID: id, Addr: addr}, nil, retryAll)
}

// RemoveServer removes a replica from the Raft group.
func (c *Client) RemoveServer(ctx context.Context, id string) error {
	return c.requestJSON(ctx, coordproto.SubjectMembersRemove, MemberRequest{ID: id}, nil, retryAll)
}

func querySubject(kind string, linearizable bool) string {
	if linearizable {
		return coordproto.SubjectLinearQuery + kind
	}
	return coordproto.SubjectQuery + kind
}

// Epochs lists epochs with their acks, from the leader (so what sealing
// waits for reflects its liveness table).
func (c *Client) Epochs(ctx context.Context) ([]EpochInfo, error) {
	var out []EpochInfo
	err := c.requestJSON(ctx, querySubject(coordproto.QueryEpochs, true), nil, &out, retryAll)
	return out, err
}

// Nodes lists registered nodes with their liveness, from the leader.
func (c *Client) Nodes(ctx context.Context) ([]NodeInfo, error) {
	var out []NodeInfo
	err := c.requestJSON(ctx, querySubject(coordproto.QueryNodes, true), nil, &out, retryAll)
	return out, err
}

// Images returns the records stored under keys (missing keys are left out),
// from any replica.
func (c *Client) Images(ctx context.Context, keys []wire.ImageKey) ([]*wire.ImageRecord, error) {
	var out []*wire.ImageRecord
	for len(keys) > 0 {
		var reply ImagesReply
		if err := c.requestJSON(ctx, querySubject(coordproto.QueryImages, false), ImagesRequest{Keys: keys}, &reply, retryAll); err != nil {
			return nil, err
		}
		for _, b := range reply.Records {
			r := new(wire.ImageRecord)
			if err := r.UnmarshalBinary(b); err != nil {
				return nil, fmt.Errorf("coordinator: images: %w", err)
			}
			out = append(out, r)
		}
		if reply.Next <= 0 || reply.Next > len(keys) {
			return nil, fmt.Errorf("coordinator: images: %w: next %d of %d", ErrInternal, reply.Next, len(keys))
		}
		keys = keys[reply.Next:]
	}
	return out, nil
}

// Applied returns a stream's applied Seq, from any replica.
func (c *Client) Applied(ctx context.Context, host string, cpu uint16) (uint64, error) {
	st, err := c.StreamState(ctx, host, cpu, false)
	return st.Seq, err
}

// AppliedStreams returns the applied Seq of each of host's streams cpus,
// in order, in one request to any replica. A replica that predates the
// request's CPUs answers without them; then it asks per CPU.
func (c *Client) AppliedStreams(ctx context.Context, host string, cpus []uint16) ([]uint64, error) {
	if len(cpus) == 0 {
		return nil, nil
	}
	if len(cpus) > MaxAppliedCPUs {
		return nil, fmt.Errorf("coordinator: applied: %w: %d CPUs, at most %d", ErrBadRequest, len(cpus), MaxAppliedCPUs)
	}
	subject, err := hostSubject(querySubject(coordproto.QueryApplied, false), host)
	if err != nil {
		return nil, err
	}
	var reply AppliedReply
	if err := c.requestJSON(ctx, subject, AppliedRequest{Host: host, CPU: cpus[0], CPUs: cpus}, &reply, retryAll); err != nil {
		return nil, err
	}
	out := make([]uint64, len(cpus))
	if reply.Streams == nil {
		out[0] = reply.Seq
		for i, cpu := range cpus[1:] {
			if out[i+1], err = c.Applied(ctx, host, cpu); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if len(reply.Streams) != len(cpus) {
		return nil, fmt.Errorf("coordinator: applied: %w: %d streams for %d CPUs", ErrInternal, len(reply.Streams), len(cpus))
	}
	for i, s := range reply.Streams {
		if s.CPU != cpus[i] {
			return nil, fmt.Errorf("coordinator: applied: %w: stream %d is CPU %d, asked %d", ErrInternal, i, s.CPU, cpus[i])
		}
		out[i] = s.Seq
	}
	return out, nil
}

// StreamState returns a stream's applied Seq and the sample accounting of
// the batch that applied it, from any replica, or from the leader after
// every commit with linearizable.
func (c *Client) StreamState(ctx context.Context, host string, cpu uint16, linearizable bool) (storage.StreamState, error) {
	var reply AppliedReply
	subject, err := hostSubject(querySubject(coordproto.QueryApplied, linearizable), host)
	if err != nil {
		return storage.StreamState{}, err
	}
	err = c.requestJSON(ctx, subject, AppliedRequest{Host: host, CPU: cpu}, &reply, retryAll)
	return storage.StreamState{Seq: reply.Seq, Delivered: reply.Delivered, Accounted: reply.Accounted}, err
}

// Totals is storage.Totals over the coordinator's database, from any
// replica, or with linearizable from the leader after it has applied
// every write committed before the call (a follower may still be
// applying what the leader answered a moment ago).
func (c *Client) Totals(ctx context.Context, q storage.Query, linearizable bool) (TotalsReply, error) {
	var reply TotalsReply
	err := c.requestJSON(ctx, querySubject(coordproto.QueryTotals, linearizable), q, &reply, retryAll)
	return reply, err
}

// Profile calls fn for every row of storage.Profile(q), fetching pages
// transparently. Every page after the first comes from the replica that
// served the first, so the rows come from one database; with linearizable,
// the first page comes from the leader after it has applied every write
// committed before the call.
func (c *Client) Profile(ctx context.Context, q storage.Query, linearizable bool, fn func(image wire.ImageKey, offset uint64, event uint8, host string, count uint64) error) error {
	req := ProfileRequest{Query: q, MaxRows: c.PageRows}
	subject := querySubject(coordproto.QueryProfile, linearizable)
	for {
		data, err := json.Marshal(req)
		if err != nil {
			return fmt.Errorf("coordinator: profile: %w", err)
		}
		msg, err := c.request(ctx, subject, data, retryAll)
		if err != nil {
			return err
		}
		p, err := decodePage(msg.Data)
		if err != nil {
			return fmt.Errorf("coordinator: profile: %w", err)
		}
		for _, r := range p.rows {
			if err := fn(r.Image, r.Offset, r.Event, r.Host, r.Count); err != nil {
				return err
			}
		}
		if p.last {
			return nil
		}
		if len(p.rows) == 0 {
			return fmt.Errorf("coordinator: profile: %w: empty page before the last", ErrInternal)
		}
		lr := p.rows[len(p.rows)-1]
		req.After = &storage.ProfileKey{Event: lr.Event, Image: lr.Image, Offset: lr.Offset, Host: lr.Host}
		subject = coordproto.SubjectReplica + p.replica + ".query." + coordproto.QueryProfile
	}
}
