package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"dcpi/storage"
	"dcpi/wire/coordproto"
)

// StreamTails reads what the work-queue streams still hold of a host: per
// CPU the sequence number and sample accounting of its newest batch (Seq
// 0: none), and the Seq of its newest value record (0: none). A resuming
// agent needs them, and a host's credentials may not read the streams:
// JetStream answers a read on whatever reply subject the reader names,
// with the server's rights, so a host allowed to read its own newest
// batch could have the server republish it as another host's. The
// coordinator, whose credentials read every stream, reads for it and
// answers on the host's inbox. Package cluster implements it over
// JetStream.
type StreamTails interface {
	LastBatches(ctx context.Context, host string, cpus int) ([]storage.StreamState, error)
	LastValues(ctx context.Context, host string) (uint64, error)
}

// TailRequest asks for the newest batch of each of a host's CPUs 0..CPUs-1.
type TailRequest struct {
	Host string
	CPUs int
}

// TailReply answers it, one state per CPU in order (Seq 0: none).
type TailReply struct {
	Streams []storage.StreamState
}

// ValuesTailRequest asks for the Seq of a host's newest value record.
type ValuesTailRequest struct{ Host string }

// ValuesTailReply answers it (0: none).
type ValuesTailReply struct{ Seq uint64 }

func (s *service) queryStreamTail(ctx context.Context, m *nats.Msg, _ func(string) (bool, time.Time, bool)) ([]byte, error) {
	var req TailRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	if req.CPUs < 1 || req.CPUs > MaxAppliedCPUs {
		return nil, fmt.Errorf("%w: %s: %d CPUs (want 1 to %d)", ErrBadRequest, coordproto.QueryStreamTail, req.CPUs, MaxAppliedCPUs)
	}
	if s.r.cfg.Tails == nil {
		return nil, fmt.Errorf("%w: %s: this replica reads no streams", ErrInternal, coordproto.QueryStreamTail)
	}
	states, err := s.r.cfg.Tails.LastBatches(ctx, req.Host, req.CPUs)
	if err != nil {
		return nil, fmt.Errorf("%w: %s of %s: %w", ErrInternal, coordproto.QueryStreamTail, req.Host, err)
	}
	return json.Marshal(TailReply{Streams: states})
}

func (s *service) queryValuesTail(ctx context.Context, m *nats.Msg, _ func(string) (bool, time.Time, bool)) ([]byte, error) {
	var req ValuesTailRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	if s.r.cfg.Tails == nil {
		return nil, fmt.Errorf("%w: %s: this replica reads no streams", ErrInternal, coordproto.QueryValuesTail)
	}
	seq, err := s.r.cfg.Tails.LastValues(ctx, req.Host)
	if err != nil {
		return nil, fmt.Errorf("%w: %s of %s: %w", ErrInternal, coordproto.QueryValuesTail, req.Host, err)
	}
	return json.Marshal(ValuesTailReply{Seq: seq})
}

// StreamTail returns, for host's CPUs 0..cpus-1, the sequence number and
// sample accounting of the newest batch the batch stream still holds
// (Seq 0: none), read by any replica. A resuming agent asks it before the
// applied state (simhost.Resume says why in that order).
func (c *Client) StreamTail(ctx context.Context, host string, cpus int) ([]storage.StreamState, error) {
	subject, err := hostSubject(querySubject(coordproto.QueryStreamTail, false), host)
	if err != nil {
		return nil, err
	}
	var reply TailReply
	if err := c.requestJSON(ctx, subject, TailRequest{Host: host, CPUs: cpus}, &reply, retryAll); err != nil {
		return nil, err
	}
	if len(reply.Streams) != cpus {
		return nil, fmt.Errorf("coordinator: %s: %w: %d streams for %d CPUs", coordproto.QueryStreamTail, ErrInternal, len(reply.Streams), cpus)
	}
	return reply.Streams, nil
}

// ValuesTail returns the Seq of host's newest value record the value
// stream still holds (0: none), read by any replica.
func (c *Client) ValuesTail(ctx context.Context, host string) (uint64, error) {
	subject, err := hostSubject(querySubject(coordproto.QueryValuesTail, false), host)
	if err != nil {
		return 0, err
	}
	var reply ValuesTailReply
	err = c.requestJSON(ctx, subject, ValuesTailRequest{Host: host}, &reply, retryAll)
	return reply.Seq, err
}
