package transport

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DuplicateWindow is how long the stream remembers a Nats-Msg-Id and drops
// a message that repeats it: longer than any publisher's retry of one
// message takes in practice (an ack lost to a disconnect is retried within
// seconds of the reconnect). A resend outside the window is stored twice;
// storage's applied-sequence record drops the second copy.
const DuplicateWindow = 10 * time.Minute

// ErrLegacyStream is wrapped by EnsureStream's error when the batch stream
// still holds batches on the per-host subjects of before the CPU token
// ("dcpi.batch.<host>"), which this version can neither consume nor see in
// LastPublished.
var ErrLegacyStream = errors.New("batch stream holds batches on the old per-host subjects")

// streamConfig is the batch stream's configuration.
func streamConfig(replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        StreamName,
		Description: "dcpi sample batches, one subject per (host, CPU)",
		Subjects:    []string{streamSubject},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Duplicates:  DuplicateWindow,
		Discard:     jetstream.DiscardNew,
		MaxMsgs:     -1,
		MaxBytes:    -1,
		MaxAge:      0,
		AllowDirect: allowDirect(replicas),
	}
}

// allowDirect says whether a stream of replicas allows direct gets, which
// a resuming agent's read of its subjects' newest messages (LastPublished,
// LastValues) then uses. A direct get of a subject's last message names
// the subject in the API subject ($JS.API.DIRECT.GET.<stream>.<subject>),
// so the server's permissions confine a host to its own subjects
// (HostJetStreamAPI); the message-get API ($JS.API.STREAM.MSG.GET.<stream>)
// names it in the body, so a host allowed it could read any host's newest
// batch. Only with one replica: then the one server that stored and
// acknowledged a publish answers, from that store. With more, a follower
// that has not yet applied the newest publishes may answer (nats-server
// enables direct gets on a follower once it is nearly caught up), while a
// resuming agent must see every batch the stream acknowledged; such a
// stream keeps the leader's message get, and the cluster's own
// credentials must allow it.
func allowDirect(replicas int) bool { return replicas == 1 }

// EnsureStream creates the batch stream and the image buckets, or updates
// them to this configuration; it is idempotent, so every coordinator and
// aggregator may call it at start. replicas is the JetStream replication
// factor (1 for the embedded server, 3 or 5 for a cluster); 0 means 1.
//
// The stream has work-queue retention: a message is removed once an
// aggregator acks it (after the Raft commit) and kept until then, however
// long, so no limit ever discards a batch that was not applied. That is also
// why it has no size or age limits.
//
// A stream made by a version with one subject per host ("dcpi.batch.*")
// is updated in place to the per-(host, CPU) subjects if it holds no batch
// on the old subjects. While it holds any, EnsureStream fails with
// ErrLegacyStream (changing nothing, unless an old node published in the
// instant between its check and the update): stop the node agents, let the previous version's
// aggregators drain the stream (until it holds 0 messages), then start
// this version everywhere; or, if those batches may be lost, delete the
// stream (nats stream rm DCPI_BATCHES). Nodes and aggregators of the two
// versions must not run together: an old node finds no stream for its
// subject and keeps its batches queued, and an old aggregator's
// EnsureStream would put the old subjects back.
func EnsureStream(ctx context.Context, js jetstream.JetStream, replicas int) error {
	if replicas == 0 {
		replicas = 1
	}
	if replicas < 1 || replicas > 5 {
		return fmt.Errorf("transport: ensure stream %s: %d replicas (want 1..5)", StreamName, replicas)
	}
	cfg := streamConfig(replicas)
	migrate := false
	switch s, err := js.Stream(ctx, StreamName); {
	case errors.Is(err, jetstream.ErrStreamNotFound):
	case err != nil:
		return fmt.Errorf("transport: ensure stream %s: %w", StreamName, err)
	default:
		// Checked at every start, not only when the subjects differ:
		// an old-subject batch stored in the race below, or by an old
		// aggregator's revert, must stop this version from starting
		// until someone drains it, not be Termed as malformed.
		if err := checkLegacy(ctx, s); err != nil {
			return err
		}
		migrate = !slices.Equal(s.CachedInfo().Config.Subjects, cfg.Subjects)
	}
	s, err := js.CreateOrUpdateStream(ctx, cfg)
	if err != nil {
		return fmt.Errorf("transport: ensure stream %s: %w", StreamName, err)
	}
	if migrate {
		// An old node may have published between the check and the
		// update; after the update none can, so this look is final.
		if err := checkLegacy(ctx, s); err != nil {
			return err
		}
	}
	_, err = js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket:      ImageBucket,
		Description: "dcpi image records by content key",
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	})
	if err != nil {
		return fmt.Errorf("transport: ensure object store %s: %w", ImageBucket, err)
	}
	// The image file bucket too, although PutImageFile would make it on
	// first use: a node agent's credentials may write objects but not
	// create or change streams (transport/auth).
	_, err = js.CreateOrUpdateObjectStore(ctx, imageFileBucketConfig(replicas))
	if err != nil {
		return fmt.Errorf("transport: ensure object store %s: %w", ImageFileBucket, err)
	}
	return nil
}

// checkLegacy fails with ErrLegacyStream if s holds messages on the old
// per-host subjects.
func checkLegacy(ctx context.Context, s jetstream.Stream) error {
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(legacySubject))
	if err != nil {
		return fmt.Errorf("transport: ensure stream %s: count batches on %s: %w", StreamName, legacySubject, err)
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("transport: ensure stream %s: %w: %d messages on %s in %d subjects; "+
		"stop the node agents and drain them with the previous version's aggregators, "+
		"or delete the stream if they may be lost (nats stream rm %s)",
		StreamName, ErrLegacyStream, n, legacySubject, len(info.State.Subjects), StreamName)
}
