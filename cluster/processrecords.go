package cluster

import (
	"context"
	"sync"
	"time"

	"dcpi/coordinator"
	"dcpi/transport"
	"dcpi/wire"
)

// maxQueuedProcesses bounds the process records a host holds while the
// coordinator is unreachable; past it new ones are dropped (and logged).
const maxQueuedProcesses = 1 << 16

// ProcessSender sends a host's process records to the coordinator as
// host requests, on the host's own credentials, so the coordinator binds
// them to that host (docs/security.md). The daemon only queues them: a
// request waits on Raft, which the daemon must not.
type ProcessSender struct {
	coord *coordinator.Client
	host  string
	lf    func(string, ...any)
	wake  chan struct{}
	send  sync.Mutex // one request at a time, in order

	mu      sync.Mutex
	queue   []*wire.ProcessRecord
	dropped uint64
}

// NewProcessSender sends host's process records through coord (a
// connection on the host's credentials), logging failures to lf; Run
// sends them.
func NewProcessSender(coord *coordinator.Client, host string, lf func(string, ...any)) *ProcessSender {
	return &ProcessSender{coord: coord, host: host, lf: lf, wake: make(chan struct{}, 1)}
}

// PublishProcess queues r (a node.ProcessPublisher's method).
func (s *ProcessSender) PublishProcess(r *wire.ProcessRecord) error {
	s.mu.Lock()
	if len(s.queue) >= maxQueuedProcesses {
		if s.dropped++; s.dropped == 1 {
			s.lf("host %s: %d process records queued for the coordinator; dropping new ones", s.host, len(s.queue))
		}
		s.mu.Unlock()
		return nil
	}
	s.queue = append(s.queue, r)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

// Run sends what is queued until ctx ends, retrying every second while
// the coordinator does not take it.
func (s *ProcessSender) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		}
		for s.Flush(ctx) != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}
}

// Flush sends every record queued; on failure they stay queued, ahead of
// any queued since.
func (s *ProcessSender) Flush(ctx context.Context) error {
	s.send.Lock()
	defer s.send.Unlock()
	s.mu.Lock()
	recs := s.queue
	s.queue = nil
	s.mu.Unlock()
	if len(recs) == 0 {
		return nil
	}
	err := s.coord.PutProcesses(ctx, s.host, recs)
	if err != nil {
		if ctx.Err() == nil {
			s.lf("host %s: sending %d process records: %v (will try again)", s.host, len(recs), err)
		}
		s.mu.Lock()
		s.queue = append(recs, s.queue...)
		s.mu.Unlock()
	}
	return err
}

// hostPublisher is the host's node publisher: batches and images to
// JetStream, process records to the coordinator.
type hostPublisher struct {
	*transport.Publisher
	*ProcessSender
}
