package transport

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"dcpi/wire"
)

// ConsumerConfig configures an aggregator's consumer.
type ConsumerConfig struct {
	// Durable names the consumer; every aggregator uses the same name and
	// so shares one queue: a message goes to one of them at a time.
	// Empty means DefaultDurable.
	Durable string
	// AckWait is how long a delivery may stay unacknowledged before
	// JetStream delivers it again (to any aggregator); it must cover the
	// Raft commit. 0 means 30 s. Delivery.InProgress extends it.
	AckWait time.Duration
	// MaxAckPending bounds deliveries outstanding across all
	// aggregators; 0 means the server's default (1000).
	MaxAckPending int
	// Hosts, if not empty, limits the consumer to these hosts' subjects
	// (one filter "dcpi.batch.<host>.>" each, for all their CPUs). All
	// aggregators sharing a Durable must pass the same list: each
	// NewConsumer updates the shared consumer's filter.
	Hosts []string
}

// DefaultDurable is the consumer every aggregator shares by default.
const DefaultDurable = "aggregators"

const defaultAckWait = 30 * time.Second

// Consumer is an aggregator's handle on the shared durable pull consumer.
type Consumer struct {
	c    jetstream.Consumer
	name string
}

// NewConsumer creates the durable pull consumer on the batch stream, or
// updates it to cfg, with explicit acks. The stream must exist
// (EnsureStream).
func NewConsumer(ctx context.Context, js jetstream.JetStream, cfg ConsumerConfig) (*Consumer, error) {
	if cfg.Durable == "" {
		cfg.Durable = DefaultDurable
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = defaultAckWait
	}
	if cfg.MaxAckPending < 0 {
		return nil, fmt.Errorf("transport: consumer %s: MaxAckPending %d is negative", cfg.Durable, cfg.MaxAckPending)
	}
	var filters []string
	for _, h := range cfg.Hosts {
		s, err := hostFilter(h)
		if err != nil {
			return nil, fmt.Errorf("transport: consumer %s: %w", cfg.Durable, err)
		}
		filters = append(filters, s)
	}
	c, err := js.CreateOrUpdateConsumer(ctx, StreamName, jetstream.ConsumerConfig{
		Durable:        cfg.Durable,
		Description:    "dcpi aggregators: merge, propose, ack after commit",
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        cfg.AckWait,
		MaxDeliver:     -1, // a batch is never given up on; a bad one is Termed
		MaxAckPending:  cfg.MaxAckPending,
		FilterSubjects: filters,
	})
	if err != nil {
		return nil, fmt.Errorf("transport: consumer %s on stream %s: %w", cfg.Durable, StreamName, err)
	}
	return &Consumer{c: c, name: cfg.Durable}, nil
}

// Fetch returns up to max deliveries: those available now, or, if there
// are none, the first to arrive within wait and those available with it.
// An empty result with a nil error means nothing came. A delivery whose
// payload is not a valid batch of its subject's host and CPU has Err set
// and Batch nil; the caller should Term it. The error is non-nil only when
// a fetch itself failed or ctx ended; deliveries received before are
// returned with it. wait should be well under AckWait, since every
// delivery's AckWait runs from the moment the server sends it.
func (c *Consumer) Fetch(ctx context.Context, max int, wait time.Duration) ([]Delivery, error) {
	if max <= 0 {
		return nil, fmt.Errorf("transport: fetch from %s: max %d (want > 0)", c.name, max)
	}
	if wait <= 0 {
		return nil, fmt.Errorf("transport: fetch from %s: wait %v (want > 0)", c.name, wait)
	}
	// A pull request for max messages with an expiry waits for all max or
	// the expiry, holding the first ones meanwhile, so that with a short
	// AckWait they would be redelivered inside the same pull. Instead: take
	// what is there; if nothing, wait for one; then take what came with it.
	noWait := func(n int) func() (jetstream.MessageBatch, error) {
		return func() (jetstream.MessageBatch, error) { return c.c.FetchNoWait(n) }
	}
	out, err := c.collect(ctx, noWait(max))
	if err != nil || len(out) > 0 {
		return out, err
	}
	// jetstream takes a context or a wait, not both: fold the wait into
	// the context, whose deadline becomes the pull request's expiry.
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	out, err = c.collect(ctx, func() (jetstream.MessageBatch, error) {
		mb, err := c.c.Fetch(1, jetstream.FetchContext(wctx))
		if err != nil && wctx.Err() != nil && ctx.Err() == nil {
			// The wait ran out before the request was made
			// (FetchContext refuses a passed deadline).
			return nil, errWaitOver
		}
		return mb, err
	})
	if err != nil || len(out) == 0 || max == 1 {
		return out, err
	}
	more, err := c.collect(ctx, noWait(max-1))
	return append(out, more...), err
}

var errWaitOver = errors.New("wait over")

// collect runs one pull request and decodes what it brings. The request's
// own expiry, or its context's deadline, ends it normally.
func (c *Consumer) collect(ctx context.Context, pull func() (jetstream.MessageBatch, error)) ([]Delivery, error) {
	mb, err := pull()
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("transport: fetch from %s: %w", c.name, ctx.Err())
		}
		if err == errWaitOver {
			return nil, nil
		}
		return nil, fmt.Errorf("transport: fetch from %s: %w", c.name, err)
	}
	var out []Delivery
	for m := range mb.Messages() {
		out = append(out, newDelivery(m))
	}
	if err := mb.Error(); err != nil {
		if ctx.Err() != nil {
			return out, fmt.Errorf("transport: fetch from %s: %w", c.name, ctx.Err())
		}
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			return out, fmt.Errorf("transport: fetch from %s: %w", c.name, err)
		}
	}
	return out, nil
}

// Delivery is one message fetched from the stream.
type Delivery struct {
	// Batch is the decoded, validated batch; nil when Err is set.
	Batch *wire.Batch
	// Err says why the payload is not a batch this subject may carry:
	// malformed, invalid, or forged (its Host or CPU is not the
	// subject's).
	Err error
	// Subject is the message's subject; Host and CPU the stream it names
	// ("" and 0 if it is not a batch subject).
	Subject, Host string
	CPU           uint16
	// MsgID is the Nats-Msg-Id header the publisher set.
	MsgID string
	// StreamSeq is the message's sequence in the stream.
	StreamSeq uint64
	// NumDelivered counts deliveries of this message, 1 the first time.
	NumDelivered uint64
	// Stored is when the stream stored the message.
	Stored time.Time

	msg jetstream.Msg
}

func newDelivery(m jetstream.Msg) Delivery {
	d := Delivery{Subject: m.Subject(), msg: m, MsgID: m.Headers().Get(jetstream.MsgIDHeader)}
	d.Host, d.CPU, d.Batch, d.Err = decodeDelivery(d.Subject, m.Data())
	if md, err := m.Metadata(); err != nil {
		if d.Err == nil {
			d.Batch, d.Err = nil, fmt.Errorf("transport: message on %s: metadata: %w", d.Subject, err)
		}
	} else {
		d.StreamSeq, d.NumDelivered, d.Stored = md.Sequence.Stream, md.NumDelivered, md.Timestamp
	}
	return d
}

// ErrForged is wrapped by a Delivery's Err when the batch names another host
// or CPU than its subject. With per-host publish permissions the subject's
// host is the authenticated identity, so such a batch is refused rather
// than credited to the host it claims; a CPU other than the subject's would
// hide the batch from LastPublished, which reads each CPU's subject.
var ErrForged = errors.New("forged batch")

// decodeDelivery decodes a message's payload: outside input, so it checks
// everything and never panics. host and cpu are the subject's, set
// whenever the subject is a batch subject.
func decodeDelivery(subject string, data []byte) (host string, cpu uint16, b *wire.Batch, err error) {
	host, cpu, err = parseSubject(subject)
	if err != nil {
		return "", 0, nil, err
	}
	var nb wire.Batch
	if err := nb.UnmarshalBinary(data); err != nil {
		return host, cpu, nil, fmt.Errorf("transport: message on %s: %w", subject, err)
	}
	if nb.Host != host {
		return host, cpu, nil, fmt.Errorf("transport: message on %s: %w: batch host %q", subject, ErrForged, nb.Host)
	}
	if nb.CPU != cpu {
		return host, cpu, nil, fmt.Errorf("transport: message on %s: %w: batch CPU %d", subject, ErrForged, nb.CPU)
	}
	return host, cpu, &nb, nil
}

// Ack acknowledges the delivery and waits for the server to confirm it
// (double ack), so that an ack lost on the way cannot cause a redelivery
// the caller believes impossible.
func (d *Delivery) Ack(ctx context.Context) error {
	if d.msg == nil {
		return errors.New("transport: ack: delivery has no message")
	}
	if err := d.msg.DoubleAck(ctx); err != nil {
		return fmt.Errorf("transport: ack stream seq %d: %w", d.StreamSeq, err)
	}
	return nil
}

// Nak asks for redelivery after delay (at once if 0).
func (d *Delivery) Nak(delay time.Duration) error {
	if d.msg == nil {
		return errors.New("transport: nak: delivery has no message")
	}
	var err error
	if delay > 0 {
		err = d.msg.NakWithDelay(delay)
	} else {
		err = d.msg.Nak()
	}
	if err != nil {
		return fmt.Errorf("transport: nak stream seq %d: %w", d.StreamSeq, err)
	}
	return nil
}

// InProgress resets the delivery's AckWait, for a batch whose commit takes
// longer than usual.
func (d *Delivery) InProgress() error {
	if d.msg == nil {
		return errors.New("transport: in progress: delivery has no message")
	}
	if err := d.msg.InProgress(); err != nil {
		return fmt.Errorf("transport: in progress stream seq %d: %w", d.StreamSeq, err)
	}
	return nil
}

// Term tells the server never to deliver the message again, with reason
// recorded in its advisory; for deliveries with Err set.
func (d *Delivery) Term(reason string) error {
	if d.msg == nil {
		return errors.New("transport: term: delivery has no message")
	}
	if err := d.msg.TermWithReason(reason); err != nil {
		return fmt.Errorf("transport: term stream seq %d: %w", d.StreamSeq, err)
	}
	return nil
}
