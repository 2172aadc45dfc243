package transport

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DuplicateWindow is how long the stream remembers a Nats-Msg-Id and drops
// a message that repeats it: longer than any publisher's retry of one
// message takes in practice (an ack lost to a disconnect is retried within
// seconds of the reconnect). A resend outside the window is stored twice;
// storage's applied-sequence record drops the second copy.
const DuplicateWindow = 10 * time.Minute

// EnsureStream creates the batch stream and the image bucket, or updates
// them to this configuration; it is idempotent, so every coordinator and
// aggregator may call it at start. replicas is the JetStream replication
// factor (1 for the embedded server, 3 or 5 for a cluster); 0 means 1.
//
// The stream has work-queue retention: a message is removed once an
// aggregator acks it (after the Raft commit) and kept until then, however
// long, so no limit ever discards a batch that was not applied. That is also
// why it has no size or age limits.
func EnsureStream(ctx context.Context, js jetstream.JetStream, replicas int) error {
	if replicas == 0 {
		replicas = 1
	}
	if replicas < 1 || replicas > 5 {
		return fmt.Errorf("transport: ensure stream %s: %d replicas (want 1..5)", StreamName, replicas)
	}
	_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        StreamName,
		Description: "dcpi sample batches, one subject per host",
		Subjects:    []string{subjectPrefix + "*"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Duplicates:  DuplicateWindow,
		Discard:     jetstream.DiscardNew,
		MaxMsgs:     -1,
		MaxBytes:    -1,
		MaxAge:      0,
	})
	if err != nil {
		return fmt.Errorf("transport: ensure stream %s: %w", StreamName, err)
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
	return nil
}
