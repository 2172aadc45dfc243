package transport

import (
	"context"
	"dcpi/wire/delivery"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dcpi/wire"
)

// ValuesStreamName is the JetStream stream of value-sampling records
// (wire.ValuesRecord), one subject per host, ValuesSubject(host). It is a
// stream of its own, as the path uploads' is, not subjects of the batch
// stream: that one's aggregator consumer has no subject filter and would
// take (and Term) every record, and a record is not a batch — its hot
// lists merge by Gibbons-Matias's rule, its sequence is the host's, not a
// CPU's.
const ValuesStreamName = "DCPI_VALUES"

// valuesSubjectPrefix starts every values subject.
const valuesSubjectPrefix = "dcpi.values."

// ValuesDurable is the consumer every aggregator shares for value records
// (a message goes to one of them at a time).
const ValuesDurable = "values"

// ValuesSubject is the subject host publishes its value records on,
// "dcpi.values.<host>": the host is a token of its own, so per-host
// publish permissions can confine a host to its own subject, and
// LastValues asks JetStream for the newest record of one host.
func ValuesSubject(host string) (string, error) { return hostSubject(valuesSubjectPrefix, host) }

// valuesMsgID is the Nats-Msg-Id of a value record,
// "<host>/values/<epoch>/<seq>": JetStream drops a resend within
// DuplicateWindow; the database drops any later one by the host's applied
// Seq.
func valuesMsgID(host string, epoch, seq uint64) string {
	return host + "/values/" + strconv.FormatUint(epoch, 10) + "/" + strconv.FormatUint(seq, 10)
}

// EnsureValuesStream creates the value record stream or updates it to
// this configuration: work-queue retention (a record is removed once it
// is applied and acknowledged, and kept until then), file storage, no
// limits, the batches' duplicate window.
func EnsureValuesStream(ctx context.Context, js jetstream.JetStream, replicas int) error {
	return ensureHostWorkQueue(ctx, js, replicas, ValuesStreamName, valuesSubjectPrefix, "dcpi value-sampling records, one subject per host")
}

// PublishValues queues a value record and returns; it never waits for the
// network. Records are sent in call order with the batches and images, on
// ValuesSubject(host), each with its Nats-Msg-Id. It fails only for a
// record that does not validate or is not this host's, or after Close.
// A record is never replaced by a tombstone (see outQueue).
func (p *Publisher) PublishValues(r *wire.ValuesRecord) error {
	if r == nil {
		return errors.New("transport: publish values: nil record")
	}
	if r.Host != p.cfg.Host {
		return fmt.Errorf("transport: publish values: host %q on the publisher of %q", r.Host, p.cfg.Host)
	}
	it, err := newValuesItem(r)
	if err != nil {
		return fmt.Errorf("transport: publish values %s: %w", valuesMsgID(r.Host, r.Epoch, r.Seq), err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		return ErrClosed
	}
	p.st.ValuesAccepted++
	p.q.push(it)
	p.signal()
	return nil
}

// sendValues publishes one value record and waits for its acknowledgement.
func (p *Publisher) sendValues(it *item) (dup bool, err error) {
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.AckTimeout)
	defer cancel()
	msg := &nats.Msg{Subject: valuesSubjectPrefix + p.cfg.Host, Data: it.data}
	ack, err := p.js.PublishMsg(ctx, msg, jetstream.WithMsgID(it.id),
		jetstream.WithExpectStream(ValuesStreamName), jetstream.WithRetryAttempts(0))
	if err != nil {
		return false, fmt.Errorf("publish %s: %w", it.describe(), err)
	}
	return ack.Duplicate, nil
}

// ErrForgedValues is wrapped by a values delivery's error when the record
// names another host than its subject.
var ErrForgedValues = errors.New("forged value record")

// decodeValues decodes a value record message: outside input. The
// record's host must be the subject's; a record of another version is
// refused with wire.ErrVersion in the chain.
func decodeValues(subject string, data []byte) (*wire.ValuesRecord, error) {
	host, ok := strings.CutPrefix(subject, valuesSubjectPrefix)
	if !ok {
		return nil, fmt.Errorf("transport: subject %q: %w (%s<host>)", subject, ErrSubject, valuesSubjectPrefix)
	}
	if err := CheckHost(host); err != nil {
		return nil, fmt.Errorf("transport: subject %q: %w", subject, err)
	}
	var r wire.ValuesRecord
	if err := r.UnmarshalBinary(data); err != nil {
		return nil, fmt.Errorf("transport: message on %s: %w", subject, err)
	}
	if r.Host != host {
		return nil, fmt.Errorf("transport: message on %s: %w: record host %q", subject, ErrForgedValues, r.Host)
	}
	return &r, nil
}

// LastValues returns the newest value record of host the stream still
// holds (nil: none, or no stream yet). A restarted node agent numbers its
// records after both it and the database's applied Seq
// (coordinator.Client.ValuesApplied), read in that order for the reason
// LastPublished gives: a record leaves the work queue only after its
// commit.
func LastValues(ctx context.Context, js jetstream.JetStream, host string) (*wire.ValuesRecord, error) {
	subject, err := ValuesSubject(host)
	if err != nil {
		return nil, fmt.Errorf("transport: last values: %w", err)
	}
	s, err := js.Stream(ctx, ValuesStreamName)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("transport: last values of %s: stream %s: %w", host, ValuesStreamName, err)
	}
	m, err := s.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("transport: last values on %s: %w", subject, err)
	}
	r, err := decodeValues(m.Subject, m.Data)
	if err != nil {
		return nil, fmt.Errorf("transport: last values of %s: stream seq %d: %w", host, m.Sequence, err)
	}
	return r, nil
}

// ValuesSource is what an aggregator's values forwarder reads: value
// records from the shared durable consumer ValuesDurable
// (aggregator.ValuesSource).
type ValuesSource struct {
	c jetstream.Consumer
}

// NewValuesSource creates the durable pull consumer on the value record
// stream, or updates it, with explicit acks; ackWait 0 means 30 s. The
// stream must exist (EnsureValuesStream).
func NewValuesSource(ctx context.Context, js jetstream.JetStream, ackWait time.Duration) (*ValuesSource, error) {
	if ackWait <= 0 {
		ackWait = defaultAckWait
	}
	c, err := js.CreateOrUpdateConsumer(ctx, ValuesStreamName, jetstream.ConsumerConfig{
		Durable:       ValuesDurable,
		Description:   "dcpi value records: merge, propose, ack after commit",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		MaxDeliver:    -1, // a record is never given up on; a bad one is Termed
	})
	if err != nil {
		return nil, fmt.Errorf("transport: consumer %s on stream %s: %w", ValuesDurable, ValuesStreamName, err)
	}
	return &ValuesSource{c: c}, nil
}

// FetchValues returns up to max deliveries: those available now, or, if
// there are none, those that arrive within wait. A delivery whose payload
// is not a valid record of its subject's host has Err set; the caller
// Terms it.
func (s *ValuesSource) FetchValues(ctx context.Context, max int, wait time.Duration) ([]delivery.Values, error) {
	if max <= 0 || wait <= 0 {
		return nil, fmt.Errorf("transport: fetch values: max %d, wait %v (want both > 0)", max, wait)
	}
	mb, err := s.c.FetchNoWait(max)
	if err != nil {
		return nil, fmt.Errorf("transport: fetch values: %w", err)
	}
	out := collectValues(mb)
	if len(out) > 0 {
		return out, nil
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	mb, err = s.c.Fetch(max, jetstream.FetchContext(wctx))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("transport: fetch values: %w", ctx.Err())
		}
		if wctx.Err() != nil {
			return nil, nil
		}
		return nil, fmt.Errorf("transport: fetch values: %w", err)
	}
	out = collectValues(mb)
	if err := mb.Error(); err != nil && ctx.Err() == nil &&
		!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && !errors.Is(err, nats.ErrTimeout) {
		return out, fmt.Errorf("transport: fetch values: %w", err)
	}
	return out, nil
}

func collectValues(mb jetstream.MessageBatch) []delivery.Values {
	var out []delivery.Values
	for m := range mb.Messages() {
		r, err := decodeValues(m.Subject(), m.Data())
		out = append(out, &valuesDelivery{m: m, r: r, err: err})
	}
	return out
}

// valuesDelivery is one fetched value record message.
type valuesDelivery struct {
	m   jetstream.Msg
	r   *wire.ValuesRecord
	err error
}

func (d *valuesDelivery) Record() *wire.ValuesRecord { return d.r }
func (d *valuesDelivery) Err() error                 { return d.err }

// Ack acknowledges and waits for the server to confirm it (double ack).
func (d *valuesDelivery) Ack(ctx context.Context) error { return d.m.DoubleAck(ctx) }
func (d *valuesDelivery) Nak(delay time.Duration) error { return d.m.NakWithDelay(delay) }
func (d *valuesDelivery) Term(reason string) error      { return d.m.TermWithReason(reason) }
