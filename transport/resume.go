package transport

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"dcpi/wire"
)

// LastPublished returns, for CPUs 0..cpus-1 of host, the Seq of the newest
// batch of that (host, CPU) the stream still holds, 0 when it holds none
// (or there is no stream yet). A restarted node agent uses it to continue
// its sequences without reusing a number that is still waiting in the
// stream; the daemon's own stream (wire.AllCPUs), if it has one, is
// LastPublishedCPU's.
//
// The stream alone is not enough, nor is the profile database alone, and
// the order of the two reads matters. The caller must:
//
//  1. make sure the previous agent of host has stopped, so that none of
//     its publishes is still in flight;
//  2. read LastPublished FIRST;
//  3. then read the coordinator's applied seq of each stream;
//  4. resume each stream at max(both)+1.
//
// Why: the stream has work-queue retention, and an aggregator acks a batch
// (which removes it) only after the Raft commit that applied it. So a batch
// that is not in the stream at the first read was either never stored, or
// was applied before that read, and the applied seq read after it counts
// it. Read in the other order, a batch could be applied and removed between
// the two reads and be seen by neither. The newest batch of a subject has
// the highest Seq because a Publisher sends each stream's batches in order,
// one at a time, each after the previous one's acknowledgement.
//
// A message on the host's subjects that is not a valid batch of that
// (host, CPU) is an error naming its subject and stream sequence: it
// stays until an aggregator Terms it, and until then the stream cannot say
// where that CPU stands.
func LastPublished(ctx context.Context, js jetstream.JetStream, host string, cpus int) ([]uint64, error) {
	bs, err := LastBatches(ctx, js, host, cpus)
	if err != nil {
		return nil, err
	}
	last := make([]uint64, cpus)
	for cpu, b := range bs {
		if b != nil {
			last[cpu] = b.Seq
		}
	}
	return last, nil
}

// LastBatches is LastPublished with the batches themselves (nil for a CPU
// with none held): a restarted agent also reads its predecessor's sample
// accounting (wire.Batch.Delivered, Accounted) from them.
func LastBatches(ctx context.Context, js jetstream.JetStream, host string, cpus int) ([]*wire.Batch, error) {
	if err := CheckHost(host); err != nil {
		return nil, fmt.Errorf("transport: last published: %w", err)
	}
	if cpus < 0 || cpus > wire.AllCPUs {
		return nil, fmt.Errorf("transport: last published of %s: %d CPUs (want 0..%d)", host, cpus, wire.AllCPUs)
	}
	last := make([]*wire.Batch, cpus)
	s, err := js.Stream(ctx, StreamName)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return last, nil
	}
	if err != nil {
		return nil, fmt.Errorf("transport: last published of %s: stream %s: %w", host, StreamName, err)
	}
	for cpu := range last {
		if last[cpu], err = lastPublished(ctx, s, host, uint16(cpu)); err != nil {
			return nil, err
		}
	}
	return last, nil
}

// LastPublishedCPU is LastPublished for one stream of host, such as the
// daemon's (wire.AllCPUs); the same rule applies.
func LastPublishedCPU(ctx context.Context, js jetstream.JetStream, host string, cpu uint16) (uint64, error) {
	if err := CheckHost(host); err != nil {
		return 0, fmt.Errorf("transport: last published: %w", err)
	}
	s, err := js.Stream(ctx, StreamName)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("transport: last published of %s cpu %d: stream %s: %w", host, cpu, StreamName, err)
	}
	b, err := lastPublished(ctx, s, host, cpu)
	if err != nil || b == nil {
		return 0, err
	}
	return b.Seq, nil
}

// lastPublished reads the last message on (host, cpu)'s subject and
// decodes it (nil: none), through the stream's message-get API, which the
// stream's leader answers, so it sees every acknowledged publish. Only
// the coordinator's credentials may (noDirectGets says why).
func lastPublished(ctx context.Context, s jetstream.Stream, host string, cpu uint16) (*wire.Batch, error) {
	subject := batchSubject(host, cpu)
	m, err := s.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("transport: last published on %s: %w", subject, err)
	}
	_, _, b, err := decodeDelivery(m.Subject, m.Data)
	if err != nil {
		return nil, fmt.Errorf("transport: last published of %s cpu %d: stream seq %d: %w", host, cpu, m.Sequence, err)
	}
	return b, nil
}
