package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dcpi/internal/slogf"
	"dcpi/wire"
)

// PublisherConfig configures a node's Publisher.
type PublisherConfig struct {
	// Host is the node's host name: every batch must carry it, and it
	// names the subjects, one per CPU (see CheckHost, BatchSubject).
	Host string
	// MaxBufferedBytes bounds the queue's memory (encoded bytes plus a
	// per-message overhead); 0 means DefaultMaxBufferedBytes. Above it,
	// the oldest unsent batches become tombstones (see outQueue).
	MaxBufferedBytes int
	// AckTimeout bounds one attempt to publish one message and have it
	// acknowledged; 0 means 5 s.
	AckTimeout time.Duration
	// MaxBackoff caps the pause between failed attempts, which doubles
	// from 50 ms; 0 means 2 s.
	MaxBackoff time.Duration
	// Logger receives the first failure of a run of failures and the
	// recovery; nil discards them.
	Logger *slog.Logger

	// Applied, when set, turns on the end-to-end acknowledgment
	// (docs/durability.md): every batch JetStream acknowledges stays
	// retained until Applied reports its stream applied through its Seq,
	// and a stream whose applied Seq stalls for RepublishAfter has its
	// retained batches sent again, so a batch a NATS server lost with
	// its unsynced writes (a power loss) is stored after all. Nil: a
	// batch is forgotten once JetStream acknowledges it.
	Applied AppliedFunc
	// MaxRetainedBytes bounds the retained batches (encoded bytes plus
	// the per-message overhead); 0 means DefaultMaxRetainedBytes. At the
	// bound the sender publishes no new batch until some are applied, so
	// the queue fills and new samples are dropped as
	// transport.buffer_full, counted as ever.
	MaxRetainedBytes int
	// AppliedPoll is how often Applied is asked about the streams that
	// hold retained batches; 0 means 1 s (AppliedPollFor suits it to a
	// publish window).
	AppliedPoll time.Duration
	// RepublishAfter is how long a stream's applied Seq may stand still
	// while it holds retained batches before they are sent again; 0 means
	// 15 s.
	RepublishAfter time.Duration
}

// DefaultMaxBufferedBytes is the default bound of a Publisher's queue.
const DefaultMaxBufferedBytes = 16 << 20

const (
	defaultAckTimeout = 5 * time.Second
	defaultMaxBackoff = 2 * time.Second
	minBackoff        = 50 * time.Millisecond
)

// ErrClosed is returned by a Publisher's methods after Close.
var ErrClosed = errors.New("transport: publisher closed")

// PublisherStats are a Publisher's counters. At every moment
//
//	SamplesAccepted = SamplesPublished + QueuedSamples + Σ Drops
//
// so a node's samples are published, still queued, or dropped by name.
type PublisherStats struct {
	BatchesAccepted uint64 // batches PublishBatch queued
	SamplesAccepted uint64 // samples in them
	// BatchesPublished counts batches JetStream acknowledged, tombstones
	// included; SamplesPublished the samples they carried.
	BatchesPublished, SamplesPublished uint64
	// BytesPublished is the encoded size of the batches acknowledged.
	BytesPublished uint64
	// Tombstones counts batches replaced by tombstones (buffer full, or
	// too large for the server).
	Tombstones uint64
	// DuplicateAcks counts acknowledgements that said the stream already
	// held the message: a resend after an acknowledgement was lost.
	DuplicateAcks uint64

	ImagesAccepted uint64 // distinct image records PublishImage queued
	ImagesUploaded uint64 // written to the bucket
	ImagesPresent  uint64 // already in the bucket (another node's), not written

	// ValuesAccepted counts value records PublishValues queued,
	// ValuesPublished those JetStream acknowledged.
	ValuesAccepted, ValuesPublished uint64

	QueuedBatches, QueuedImages, QueuedValues int
	QueuedSamples                             uint64
	QueuedBytes                               int // counted against MaxBufferedBytes

	// Retries counts failed attempts; each is retried after a backoff.
	Retries uint64
	// Drops counts samples dropped, by counter name: wire.DropBufferFull,
	// wire.DropTooLarge. The same counts travel in the tombstones.
	Drops map[string]uint64
	// LastError is the last failed attempt's error, "" after a success.
	LastError string

	// The end-to-end acknowledgment (PublisherConfig.Applied): batches
	// acknowledged by JetStream and not yet applied, their samples and
	// bytes (counted against MaxRetainedBytes, not MaxBufferedBytes);
	// batches released once applied; batches sent again because their
	// stream stalled, and of those the ones JetStream said it still held;
	// failed applied queries.
	RetainedBatches              int
	RetainedSamples              uint64
	RetainedBytes                int
	Released                     uint64
	Republished, RepublishedDups uint64
	AppliedErrors                uint64
}

// Publisher is a node's side of the transport; it implements
// node.Publisher. PublishBatch and PublishImage only encode and enqueue; one
// goroutine sends the queue in order, waiting for each JetStream
// acknowledgement and retrying the head of the queue until it comes. Calls
// must come in sequence order per (Epoch, CPU); the queue keeps call order.
type Publisher struct {
	cfg  PublisherConfig
	logf func(string, ...any)
	nc   *nats.Conn
	js   jetstream.JetStream

	mu       sync.Mutex
	q        *outQueue
	ret      *retention      // nil without cfg.Applied
	resend   []*item         // retained batches to send again, before the queue
	images   map[string]bool // image names ever accepted
	st       PublisherStats  // counters not kept by q
	changed  chan struct{}   // closed and replaced when the queue shrinks or the sender stops
	wake     chan struct{}   // the queue is not empty
	closing  bool
	stopped  bool
	failing  bool
	closeErr error

	ctx    context.Context // ends the sender
	cancel context.CancelFunc
	done   chan struct{}
	polled chan struct{} // closed when the applied poller ends

	obs jetstream.ObjectStore // sender goroutine only
}

// Publisher has node.Publisher's method set; the check is spelled out here
// because transport must not import node (node sits above it in the data
// flow).
var _ interface {
	PublishImage(r *wire.ImageRecord) error
	PublishBatch(b *wire.Batch) error
} = (*Publisher)(nil)

// NewPublisher starts a publisher on nc; it needs neither the server nor the
// stream to exist yet, and sends once they do.
func NewPublisher(nc *nats.Conn, cfg PublisherConfig) (*Publisher, error) {
	if err := CheckHost(cfg.Host); err != nil {
		return nil, fmt.Errorf("transport: new publisher: %w", err)
	}
	if cfg.MaxBufferedBytes < 0 {
		return nil, fmt.Errorf("transport: new publisher: MaxBufferedBytes %d is negative", cfg.MaxBufferedBytes)
	}
	if cfg.MaxBufferedBytes == 0 {
		cfg.MaxBufferedBytes = DefaultMaxBufferedBytes
	}
	if cfg.AckTimeout <= 0 {
		cfg.AckTimeout = defaultAckTimeout
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = defaultMaxBackoff
	}
	if cfg.MaxRetainedBytes < 0 {
		return nil, fmt.Errorf("transport: new publisher: MaxRetainedBytes %d is negative", cfg.MaxRetainedBytes)
	}
	if cfg.MaxRetainedBytes == 0 {
		cfg.MaxRetainedBytes = DefaultMaxRetainedBytes
	}
	if cfg.AppliedPoll <= 0 {
		cfg.AppliedPoll = defaultAppliedPoll
	}
	if cfg.RepublishAfter <= 0 {
		cfg.RepublishAfter = defaultRepublishAfter
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("transport: new publisher: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Publisher{cfg: cfg, logf: slogf.Printf(cfg.Logger), nc: nc, js: js, q: newOutQueue(cfg.MaxBufferedBytes),
		images: map[string]bool{}, changed: make(chan struct{}), wake: make(chan struct{}, 1),
		ctx: ctx, cancel: cancel, done: make(chan struct{}), polled: make(chan struct{})}
	go p.run()
	if cfg.Applied != nil {
		p.ret = newRetention(cfg.MaxRetainedBytes)
		go p.pollApplied()
	} else {
		close(p.polled)
	}
	return p, nil
}

// PublishBatch queues b and returns; it never waits for the network. It
// fails only for a batch that does not validate or is not this host's, or
// after Close. b may be reused once it returns.
func (p *Publisher) PublishBatch(b *wire.Batch) error {
	if b == nil {
		return errors.New("transport: publish batch: nil batch")
	}
	if b.Host != p.cfg.Host {
		return fmt.Errorf("transport: publish batch: host %q on the publisher of %q", b.Host, p.cfg.Host)
	}
	it, err := newBatchItem(b)
	if err != nil {
		return fmt.Errorf("transport: publish batch %s: %w", msgID(b.Host, b.Epoch, b.CPU, b.Seq), err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		return ErrClosed
	}
	p.st.BatchesAccepted++
	p.st.SamplesAccepted += it.samples
	p.q.push(it)
	p.signal()
	return nil
}

// PublishImage queues r for upload unless this publisher already has; the
// sender uploads it only if the bucket does not hold its key yet. It never
// waits for the network.
func (p *Publisher) PublishImage(r *wire.ImageRecord) error {
	if r == nil {
		return errors.New("transport: publish image: nil record")
	}
	it, err := newImageItem(r)
	if err != nil {
		return fmt.Errorf("transport: publish image %s: %w", r.Key, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		return ErrClosed
	}
	if p.images[it.name] {
		return nil
	}
	p.images[it.name] = true
	p.st.ImagesAccepted++
	p.q.push(it)
	p.signal()
	return nil
}

// signal wakes the sender; p.mu is held.
func (p *Publisher) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// broadcast wakes Flush; p.mu is held.
func (p *Publisher) broadcast() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Flush waits until the queue is empty, every message acknowledged by
// JetStream, or ctx ends. Messages queued during the call are waited for
// too, so a producer that never pauses keeps Flush waiting until ctx ends.
func (p *Publisher) Flush(ctx context.Context) error {
	for {
		p.mu.Lock()
		n, stopped, ch := p.q.len(), p.stopped, p.changed
		p.mu.Unlock()
		if n == 0 {
			return nil
		}
		if stopped {
			return fmt.Errorf("transport: flush: %w with %d messages unsent", ErrClosed, n)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			p.mu.Lock()
			n, last := p.q.len(), p.st.LastError
			p.mu.Unlock()
			if last == "" {
				last = "none"
			}
			return fmt.Errorf("transport: flush: %d messages still queued (last error: %s): %w", n, last, ctx.Err())
		}
	}
}

// Close refuses new messages, flushes until ctx ends, and stops the sender.
// It does not close the connection. Whatever is still queued then is
// abandoned: the error says how many batches and samples, which are then
// neither published nor counted as dropped (Stats still shows them as
// queued). Later calls return the first call's result.
func (p *Publisher) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		<-p.done
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.closeErr
	}
	p.closing = true
	p.mu.Unlock()

	ferr := p.Flush(ctx)
	p.cancel()
	<-p.done
	<-p.polled

	p.mu.Lock()
	defer p.mu.Unlock()
	if ferr != nil && p.q.len() > 0 {
		p.closeErr = fmt.Errorf("transport: close: abandoned %d batches (%d samples), %d images and %d value records: %w",
			p.q.queuedBatches, p.q.queuedSamples, p.q.queuedImages, p.q.queuedValues, ferr)
	}
	return p.closeErr
}

// Stats returns a snapshot of the counters.
func (p *Publisher) Stats() PublisherStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.st
	s.Tombstones = p.q.tombstones
	s.QueuedBatches, s.QueuedImages, s.QueuedValues = p.q.queuedBatches, p.q.queuedImages, p.q.queuedValues
	s.QueuedSamples, s.QueuedBytes = p.q.queuedSamples, p.q.bytes
	s.Drops = maps.Clone(p.q.drops)
	if p.ret != nil {
		s.RetainedBatches, s.RetainedSamples, s.RetainedBytes = p.ret.batches, p.ret.samples, p.ret.bytes
	}
	return s
}

// run is the sender: it sends the head of the queue until acknowledged,
// then the next, until Close.
func (p *Publisher) run() {
	defer func() {
		p.mu.Lock()
		p.stopped = true
		p.broadcast()
		p.mu.Unlock()
		close(p.done)
	}()
	backoff := minBackoff
	for {
		it, again := p.next()
		if it == nil {
			return
		}
		var err error
		if again {
			err = p.resendRetained(it)
		} else {
			err = p.send(it)
		}
		if p.ctx.Err() != nil {
			return
		}
		if err == nil {
			backoff = minBackoff
			continue
		}
		// Jitter (half the backoff, at random) so that the nodes of a
		// cluster do not retry in step after the server comes back.
		pause := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-time.After(pause):
		case <-p.ctx.Done():
			return
		}
		backoff = min(2*backoff, p.cfg.MaxBackoff)
	}
}

// next waits for what to send: a retained batch to send again (again), or
// else the head of the queue, marked attempted; nil once the publisher
// stops. While the retained batches are at their bound, a batch at the
// head waits for some to be applied.
func (p *Publisher) next() (it *item, again bool) {
	for {
		p.mu.Lock()
		for len(p.resend) > 0 && p.resend[0].released {
			p.resend[0] = nil
			p.resend = p.resend[1:]
		}
		if len(p.resend) > 0 {
			it = p.resend[0]
			p.mu.Unlock()
			return it, true
		}
		if p.q.len() > 0 && (p.ret == nil || !p.ret.full() || p.q.items[0].image || p.q.items[0].values) {
			it = p.q.head()
		}
		p.mu.Unlock()
		if it != nil {
			return it, false
		}
		select {
		case <-p.wake:
		case <-p.ctx.Done():
			return nil, false
		}
	}
}

// errNotConnected: the connection is down and reconnecting; an attempt
// would fail at once (Connect disables the client's reconnect buffer).
var errNotConnected = errors.New("not connected to a NATS server (reconnecting)")

// send makes one attempt at the head, it, and records the outcome.
func (p *Publisher) send(it *item) error {
	var err error
	var dup, uploaded bool
	if !p.nc.IsConnected() {
		err = fmt.Errorf("publish %s: %w", it.describe(), errNotConnected)
	} else if it.image {
		uploaded, err = p.sendImage(it)
	} else if it.values {
		dup, err = p.sendValues(it)
	} else {
		dup, err = p.sendBatch(it)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		p.q.pop()
		switch {
		case it.image && uploaded:
			p.st.ImagesUploaded++
		case it.image:
			p.st.ImagesPresent++
		case it.values:
			p.st.ValuesPublished++
			if dup {
				p.st.DuplicateAcks++
			}
		default:
			p.st.BatchesPublished++
			p.st.SamplesPublished += it.samples
			p.st.BytesPublished += uint64(len(it.data))
			if dup {
				p.st.DuplicateAcks++
			}
			if p.ret != nil {
				p.ret.add(it, time.Now())
			}
		}
		if p.failing {
			p.failing = false
			p.logf("transport: publisher %s: sending again after %d failed attempts", p.cfg.Host, p.st.Retries)
		}
		p.st.LastError = ""
		p.broadcast()
		return nil
	}
	if p.ctx.Err() != nil {
		return err // stopping: not a failure of the server
	}
	p.st.Retries++
	p.st.LastError = err.Error()
	if !it.image && !it.values && errors.Is(err, nats.ErrMaxPayload) {
		// The client refused it before sending, so the server cannot
		// have it: replace it by its tombstone, which will fit.
		if terr := p.q.tombstoneHead(wire.DropTooLarge); terr != nil {
			p.logf("transport: publisher %s: %v", p.cfg.Host, terr)
		} else {
			p.logf("transport: publisher %s: %s larger than the server's limit: replaced by a tombstone", p.cfg.Host, it.describe())
		}
	}
	if !p.failing {
		p.failing = true
		p.logf("transport: publisher %s: %v (retrying with backoff)", p.cfg.Host, err)
	}
	return err
}

// sendBatch publishes one batch and waits for its acknowledgement.
func (p *Publisher) sendBatch(it *item) (dup bool, err error) {
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.AckTimeout)
	defer cancel()
	// The host was checked by NewPublisher and is every batch's.
	msg := &nats.Msg{Subject: batchSubject(p.cfg.Host, it.hdr.CPU), Data: it.data}
	// Our loop retries with backoff; the client's own retry on "no
	// responders" would only hide attempts from the counters.
	ack, err := p.js.PublishMsg(ctx, msg, jetstream.WithMsgID(it.id),
		jetstream.WithExpectStream(StreamName), jetstream.WithRetryAttempts(0))
	if err != nil {
		return false, fmt.Errorf("publish %s: %w", it.describe(), err)
	}
	return ack.Duplicate, nil
}

// sendImage uploads one image record unless the bucket has its name.
func (p *Publisher) sendImage(it *item) (uploaded bool, err error) {
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.AckTimeout)
	defer cancel()
	if p.obs == nil {
		obs, err := p.js.ObjectStore(ctx, ImageBucket)
		if err != nil {
			return false, fmt.Errorf("publish %s: open bucket %s: %w", it.describe(), ImageBucket, err)
		}
		p.obs = obs
	}
	_, err = p.obs.GetInfo(ctx, it.name)
	if err == nil {
		return false, nil // content-addressed: same name, same content
	}
	if !errors.Is(err, jetstream.ErrObjectNotFound) {
		return false, fmt.Errorf("publish %s: look up: %w", it.describe(), err)
	}
	// Two nodes may both find the name absent and both write it; the
	// contents are equal, so the second write changes nothing a reader
	// can see.
	if _, err := p.obs.PutBytes(ctx, it.name, it.data); err != nil {
		return false, fmt.Errorf("publish %s: upload: %w", it.describe(), err)
	}
	return true, nil
}
