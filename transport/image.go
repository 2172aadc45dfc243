package transport

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"dcpi/wire"
)

// ErrImageNotFound is wrapped by FetchImage's error when the bucket does not
// hold the key, or does not exist yet: no node has published the image.
var ErrImageNotFound = errors.New("image not found")

// FetchImage reads and validates the image record stored under key. The
// object is outside input: its size is checked before reading, its bytes
// are decoded by wire, and its key must be the one asked for.
func FetchImage(ctx context.Context, js jetstream.JetStream, key wire.ImageKey) (*wire.ImageRecord, error) {
	if err := key.Check(); err != nil {
		return nil, fmt.Errorf("transport: fetch image: %w", err)
	}
	name := key.String()
	obs, err := js.ObjectStore(ctx, ImageBucket)
	if err != nil {
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil, fmt.Errorf("transport: fetch image %s: %w (no bucket %s)", name, ErrImageNotFound, ImageBucket)
		}
		return nil, fmt.Errorf("transport: fetch image %s: open bucket %s: %w", name, ImageBucket, err)
	}
	info, err := obs.GetInfo(ctx, name)
	if err != nil {
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return nil, fmt.Errorf("transport: fetch image %s: %w", name, ErrImageNotFound)
		}
		return nil, fmt.Errorf("transport: fetch image %s: %w", name, err)
	}
	if info.Size > wire.MaxMessageBytes {
		return nil, fmt.Errorf("transport: fetch image %s: object of %d bytes (cap %d): %w", name, info.Size, wire.MaxMessageBytes, wire.ErrTooLarge)
	}
	data, err := obs.GetBytes(ctx, name)
	if err != nil {
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return nil, fmt.Errorf("transport: fetch image %s: %w", name, ErrImageNotFound)
		}
		return nil, fmt.Errorf("transport: fetch image %s: %w", name, err)
	}
	var r wire.ImageRecord
	if err := r.UnmarshalBinary(data); err != nil {
		return nil, fmt.Errorf("transport: fetch image %s: %w", name, err)
	}
	if r.Key != key {
		return nil, fmt.Errorf("transport: fetch image %s: object holds the record of %s: %w", name, r.Key, wire.ErrInvalid)
	}
	return &r, nil
}
