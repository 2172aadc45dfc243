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
		AllowDirect: noDirectGets,
	}
}

// noDirectGets is every stream's AllowDirect: off. JetStream answers a
// direct get on whatever reply subject the requester names, with the
// server's rights, as the raw message; a client allowed a direct get of
// a message whose bytes it wrote (its own newest batch, an image it
// uploaded) could have the server publish them on another host's batch
// subject, where they would be taken as that host's. Without direct gets,
// reads go through the message-get API, whose answer is a JSON document
// wrapping the message, and no role but the coordinator may use it on the
// batch and value streams: a resuming agent asks the coordinator for its
// streams' newest batches (coordinator.StreamTails). The message get is
// answered by the stream's leader, so a tail read this way includes every
// publish the stream acknowledged, on a replicated stream too.
const noDirectGets = false

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
	if err := ensureObjectBucket(ctx, js, ImageBucket, "dcpi image records by content key", replicas); err != nil {
		return err
	}
	// The image file bucket too, although PutImageFile would make it on
	// first use: a node agent's credentials may write objects but not
	// create or change streams (transport/auth).
	return ensureObjectBucket(ctx, js, ImageFileBucket, imageFileBucketDescription, replicas)
}

// ensureObjectBucket creates or updates the stream of an object store
// bucket: the stream nats.go's object store makes (its subjects, rollups,
// discarding new messages when full), but without direct gets
// (noDirectGets), which its own creation turns on. The object store binds
// to it by name (js.ObjectStore) and then reads its metadata through the
// message-get API.
func ensureObjectBucket(ctx context.Context, js jetstream.JetStream, bucket, description string, replicas int) error {
	_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        "OBJ_" + bucket,
		Description: description,
		Subjects:    []string{"$O." + bucket + ".C.>", "$O." + bucket + ".M.>"},
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Discard:     jetstream.DiscardNew,
		MaxBytes:    -1,
		AllowRollup: true,
		AllowDirect: noDirectGets,
	})
	if err != nil {
		return fmt.Errorf("transport: ensure object store %s: %w", bucket, err)
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
