package cluster

import (
	"context"
	"dcpi/coordinator"
	"dcpi/simhost"
	"dcpi/storage"
	"dcpi/transport"
	"dcpi/wire"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Resume finds where host's batch streams continue (simhost.Resume), from
// the newest batches still in JetStream and the database's applied state.
func Resume(ctx context.Context, nc *nats.Conn, coord *coordinator.Client, host string, cpus int) (simhost.ResumePoint, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return simhost.ResumePoint{}, err
	}
	return simhost.Resume(ctx, streamTail{js: js, host: host}, appliedStreams{coord: coord, host: host}, cpus)
}

// resumeValues is the Seq host's next value record takes: after the newest
// record the stream still holds, read first, and the database's applied
// Seq, read second (transport.LastValues says why in that order).
func resumeValues(ctx context.Context, nc *nats.Conn, coord *coordinator.Client, host string) (uint64, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, err
	}
	var last uint64
	if r, err := transport.LastValues(ctx, js, host); err != nil {
		return 0, err
	} else if r != nil {
		last = r.Seq
	}
	applied, err := coord.ValuesApplied(ctx, host)
	if err != nil {
		return 0, fmt.Errorf("asking the coordinator where the value records resume: %w", err)
	}
	return max(last, applied) + 1, nil
}

// streamTail is a host's JetStream batch streams, as simhost.Resume reads
// them.
type streamTail struct {
	js   jetstream.JetStream
	host string
}

func (s streamTail) LastBatches(ctx context.Context, cpus int) ([]*wire.Batch, error) {
	return transport.LastBatches(ctx, s.js, s.host, cpus)
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
