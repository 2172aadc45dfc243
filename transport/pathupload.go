package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dcpi/internal/slogf"
	"dcpi/wire"
)

// PathStreamName is the JetStream stream of path uploads (wire.PathUpload),
// one subject per host, PathSubject(host). It is a stream of its own, not
// subjects of the batch stream: that one has work-queue retention and an
// aggregator consumer without a subject filter, which would take (and
// Term) every upload.
const PathStreamName = "DCPI_PATHS"

// pathSubjectPrefix starts every path upload subject.
const pathSubjectPrefix = "dcpi.paths."

// PathDurable is the consumer that applies path uploads, shared by every
// process that runs ConsumePathUploads (a message goes to one at a time).
const PathDurable = "path-uploads"

// PathSubject is the subject host publishes its path uploads on,
// "dcpi.paths.<host>": the host is a token of its own, so per-host publish
// permissions can confine a host to its own subject, as with batches.
func PathSubject(host string) (string, error) { return hostSubject(pathSubjectPrefix, host) }

// pathUploadMsgID is the Nats-Msg-Id of an upload, "<host>/<upload ID>":
// JetStream drops a resend within DuplicateWindow; the coordinator drops
// any later one by the same pair.
func pathUploadMsgID(u *wire.PathUpload) string { return u.Host + "/" + u.ID.String() }

// EnsurePathStream creates the path upload stream or updates it to this
// configuration: work-queue retention (an upload is removed once it is
// applied and acknowledged, and kept until then), file storage, no limits.
func EnsurePathStream(ctx context.Context, js jetstream.JetStream, replicas int) error {
	return ensureHostWorkQueue(ctx, js, replicas, PathStreamName, pathSubjectPrefix, "dcpi path profile uploads, one subject per host")
}

// ensureHostWorkQueue creates or updates a stream of one subject per host
// (prefix + host): work-queue retention (a message leaves once it is
// applied and acknowledged), file storage, no limits, the batches'
// duplicate window, and no direct gets (noDirectGets).
func ensureHostWorkQueue(ctx context.Context, js jetstream.JetStream, replicas int, name, prefix, description string) error {
	if replicas == 0 {
		replicas = 1
	}
	if replicas < 1 || replicas > 5 {
		return fmt.Errorf("transport: ensure stream %s: %d replicas (want 1..5)", name, replicas)
	}
	_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        name,
		Description: description,
		Subjects:    []string{prefix + "*"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Duplicates:  DuplicateWindow,
		Discard:     jetstream.DiscardNew,
		MaxMsgs:     -1,
		MaxBytes:    -1,
		AllowDirect: noDirectGets,
	})
	if err != nil {
		return fmt.Errorf("transport: ensure stream %s: %w", name, err)
	}
	return nil
}

// hostSubject is prefix + host for a host name a subject can carry.
func hostSubject(prefix, host string) (string, error) {
	if err := CheckHost(host); err != nil {
		return "", err
	}
	return prefix + host, nil
}

// PublishPathUpload publishes u on its host's subject and waits for
// JetStream to store it. An error means it may or may not be stored: the
// caller publishes the same upload (same ID) again.
func PublishPathUpload(ctx context.Context, js jetstream.JetStream, u *wire.PathUpload) error {
	data, err := u.MarshalBinary()
	if err != nil {
		return fmt.Errorf("transport: publish path upload: %w", err)
	}
	subject, err := PathSubject(u.Host)
	if err != nil {
		return err
	}
	m := nats.NewMsg(subject)
	m.Data = data
	m.Header.Set(jetstream.MsgIDHeader, pathUploadMsgID(u))
	if _, err := js.PublishMsg(ctx, m); err != nil {
		return fmt.Errorf("transport: publish path upload %s: %w", pathUploadMsgID(u), err)
	}
	return nil
}

// decodePathUpload decodes a path upload message: outside input. The
// upload's host must be the subject's (ErrForged otherwise).
func decodePathUpload(subject string, data []byte) (*wire.PathUpload, error) {
	host, ok := strings.CutPrefix(subject, pathSubjectPrefix)
	if !ok {
		return nil, fmt.Errorf("transport: subject %q: %w (%s<host>)", subject, ErrSubject, pathSubjectPrefix)
	}
	if err := CheckHost(host); err != nil {
		return nil, fmt.Errorf("transport: subject %q: %w", subject, err)
	}
	var u wire.PathUpload
	if err := u.UnmarshalBinary(data); err != nil {
		return nil, fmt.Errorf("transport: message on %s: %w", subject, err)
	}
	if u.Host != host {
		return nil, fmt.Errorf("transport: message on %s: %w: upload host %q", subject, ErrForged, u.Host)
	}
	return &u, nil
}

// PathConsumerConfig configures ConsumePathUploads.
type PathConsumerConfig struct {
	// AckWait covers one apply (a Raft commit); 0 means 30 s.
	AckWait time.Duration
	// RetryDelay is how long a failed apply waits before its
	// redelivery; 0 means 1 s.
	RetryDelay time.Duration
	// Logger logs refused messages and failed applies; nil: discarded.
	Logger *slog.Logger
}

// ConsumePathUploads applies path uploads until ctx ends: each message
// that decodes is passed to apply and acknowledged once apply returns nil
// (the upload is committed: applied, a duplicate, or refused for good);
// if apply fails it is redelivered after RetryDelay. A message that is not
// a valid upload of its subject's host is terminated with its reason
// logged. Exactly once: apply may see an upload twice (a lost ack), and
// the coordinator's record of (host, upload ID) makes the second a
// duplicate.
func ConsumePathUploads(ctx context.Context, js jetstream.JetStream, cfg PathConsumerConfig, apply func(context.Context, *wire.PathUpload) error) error {
	if cfg.AckWait <= 0 {
		cfg.AckWait = defaultAckWait
	}
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = time.Second
	}
	logf := slogf.Printf(cfg.Logger)
	c, err := js.CreateOrUpdateConsumer(ctx, PathStreamName, jetstream.ConsumerConfig{
		Durable:       PathDurable,
		Description:   "dcpi path uploads: apply through the coordinator, ack after commit",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxDeliver:    -1,
	})
	if err != nil {
		return fmt.Errorf("transport: consumer %s on stream %s: %w", PathDurable, PathStreamName, err)
	}
	for ctx.Err() == nil {
		fctx, cancel := context.WithTimeout(ctx, time.Second)
		mb, err := c.Fetch(8, jetstream.FetchContext(fctx))
		if err != nil {
			cancel()
			if ctx.Err() != nil {
				break
			}
			logf("fetch path uploads: %v", err)
			time.Sleep(cfg.RetryDelay)
			continue
		}
		for m := range mb.Messages() {
			handlePathUpload(ctx, m, cfg.RetryDelay, logf, apply)
		}
		cancel()
		if err := mb.Error(); err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) && ctx.Err() == nil {
			logf("fetch path uploads: %v", err)
		}
	}
	return nil
}

func handlePathUpload(ctx context.Context, m jetstream.Msg, retry time.Duration, logf func(string, ...any), apply func(context.Context, *wire.PathUpload) error) {
	u, err := decodePathUpload(m.Subject(), m.Data())
	if err != nil {
		logf("path upload refused: %v", err)
		if err := m.TermWithReason(err.Error()); err != nil {
			logf("term: %v", err)
		}
		return
	}
	if err := apply(ctx, u); err != nil {
		logf("path upload %s: %v (redelivered in %v)", pathUploadMsgID(u), err, retry)
		if err := m.NakWithDelay(retry); err != nil {
			logf("nak: %v", err)
		}
		return
	}
	if err := m.DoubleAck(ctx); err != nil {
		// Redelivered after AckWait; the coordinator drops it then.
		logf("ack path upload %s: %v", pathUploadMsgID(u), err)
	}
}
