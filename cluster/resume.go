package cluster

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dcpi/coordinator"
	"dcpi/node"
	"dcpi/simhost"
	"dcpi/storage"
	"dcpi/transport"
)

// Resume finds where host's batch streams continue (simhost.Resume), from
// the newest batches still in JetStream and the database's applied state,
// both asked of the coordinator: a host's credentials may not read the
// streams (coordinator.StreamTails says why).
func Resume(ctx context.Context, coord *coordinator.Client, host string, cpus int) (simhost.ResumePoint, error) {
	return simhost.Resume(ctx, streamTail{coord: coord, host: host}, appliedStreams{coord: coord, host: host}, cpus)
}

// resumeValues is the Seq host's next value record takes: after the newest
// record the stream still holds, read first, and the database's applied
// Seq, read second (transport.LastValues says why in that order).
func resumeValues(ctx context.Context, coord *coordinator.Client, host string) (uint64, error) {
	last, err := coord.ValuesTail(ctx, host)
	if err != nil {
		return 0, fmt.Errorf("asking the coordinator for the value stream's newest record: %w", err)
	}
	applied, err := coord.ValuesApplied(ctx, host)
	if err != nil {
		return 0, fmt.Errorf("asking the coordinator where the value records resume: %w", err)
	}
	return max(last, applied) + 1, nil
}

// streamTail is what the batch stream holds of a host, as the
// coordinator reads it for simhost.Resume.
type streamTail struct {
	coord *coordinator.Client
	host  string
}

func (s streamTail) StreamTail(ctx context.Context, cpus int) ([]storage.StreamState, error) {
	return s.coord.StreamTail(ctx, s.host, cpus)
}

// JetStreamTails reads the streams' newest messages of a host over a
// coordinator's connection (coordinator.StreamTails): by the streams'
// message-get API, which the stream's leader answers, so a tail includes
// every publish the stream acknowledged.
type JetStreamTails struct{ JS jetstream.JetStream }

// NewJetStreamTails reads over nc.
func NewJetStreamTails(nc *nats.Conn) (JetStreamTails, error) {
	js, err := jetstream.New(nc)
	return JetStreamTails{JS: js}, err
}

// LastBatches implements coordinator.StreamTails.
func (t JetStreamTails) LastBatches(ctx context.Context, host string, cpus int) ([]storage.StreamState, error) {
	bs, err := transport.LastBatches(ctx, t.JS, host, cpus)
	if err != nil {
		return nil, err
	}
	out := make([]storage.StreamState, len(bs))
	for i, b := range bs {
		if b != nil {
			out[i] = storage.StreamState{Seq: b.Seq, Delivered: b.Delivered, Accounted: b.Accounted}
		}
	}
	return out, nil
}

// LastValues implements coordinator.StreamTails.
func (t JetStreamTails) LastValues(ctx context.Context, host string) (uint64, error) {
	r, err := transport.LastValues(ctx, t.JS, host)
	if err != nil || r == nil {
		return 0, err
	}
	return r.Seq, nil
}

// appliedStreams is the database's applied state of a host's streams, read
// from the leader after every commit (a follower could be behind the
// stream).
type appliedStreams struct {
	coord *coordinator.Client
	host  string
}

func (a appliedStreams) StreamState(ctx context.Context, cpu uint16) (storage.StreamState, error) {
	return a.coord.StreamState(ctx, a.host, cpu, true)
}

// control adapts the coordinator client to the node's Control. Its
// registrations carry the host's events per sample (periods: what
// simhost.EventsPerSample makes of its counter configuration), which the
// node does not know.
type control struct {
	c       *coordinator.Client
	labels  map[string]string
	cpus    int
	periods map[uint8]uint64
}

// NodeControl is a host's line to the coordinator for node.Follow: it
// registers the host with labels, its CPUs and its events per sample
// (periods, by event number), registers again a host the coordinator
// has forgotten, heartbeats and acknowledges epochs.
func NodeControl(coord *coordinator.Client, labels map[string]string, cpus int, periods map[uint8]uint64) node.Control {
	return control{c: coord, labels: labels, cpus: cpus, periods: periods}
}

func (c control) Register(ctx context.Context, host string, labels map[string]string, cpus int) error {
	return c.c.Register(ctx, host, labels, cpus, c.periods)
}

func (c control) Heartbeat(ctx context.Context, host string) (uint64, error) {
	st, err := c.c.Heartbeat(ctx, host)
	if err != nil {
		return 0, err
	}
	if !st.Registered {
		// Forgotten (a restored snapshot, say): register again.
		if err := c.c.Register(ctx, host, c.labels, c.cpus, c.periods); err != nil {
			return 0, err
		}
	}
	return st.Epoch, nil
}

func (c control) AckEpoch(ctx context.Context, host string, epoch uint64, lastSeq []uint64) error {
	return c.c.AckEpoch(ctx, host, epoch, lastSeq)
}
