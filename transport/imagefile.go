package transport

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"dcpi/wire"
)

// ImageFileBucket is the JetStream object store of the files of images a
// user brought (dcpi node -- ./prog): object name ImageKey.String(),
// content the ELF file. The cluster's image records hold symbols, not
// bytes; these let dcpi list and pprof disassemble the user's program on
// any machine. Embedded workloads and vmunix are in every dcpi binary and
// are not uploaded.
const ImageFileBucket = "dcpi-image-files"

// MaxImageFileBytes bounds an uploaded image file.
const MaxImageFileBytes = 256 << 20

// imageFileBucketDescription describes the image file bucket.
const imageFileBucketDescription = "dcpi image files (ELF) by content key"

// PutImageFile uploads an image's file under its content key unless the
// bucket has it already (content-addressed: the name fixes the bytes). The
// bucket is made by EnsureStream; on a server whose streams an older
// version made, it is created on first use with the replicas of the record
// bucket, so it survives what the records survive.
func PutImageFile(ctx context.Context, js jetstream.JetStream, key wire.ImageKey, data []byte) (uploaded bool, err error) {
	if err := key.Check(); err != nil {
		return false, fmt.Errorf("transport: upload image file: %w", err)
	}
	name := key.String()
	if len(data) > MaxImageFileBytes {
		return false, fmt.Errorf("transport: upload image file %s: %d bytes (cap %d): %w", name, len(data), MaxImageFileBytes, wire.ErrTooLarge)
	}
	obs, err := js.ObjectStore(ctx, ImageFileBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		replicas := 1
		if recs, err := js.ObjectStore(ctx, ImageBucket); err == nil {
			if st, err := recs.Status(ctx); err == nil {
				replicas = st.Replicas()
			}
		}
		if err = ensureObjectBucket(ctx, js, ImageFileBucket, imageFileBucketDescription, replicas); err == nil {
			obs, err = js.ObjectStore(ctx, ImageFileBucket)
		}
	}
	if err != nil {
		return false, fmt.Errorf("transport: upload image file %s: open bucket %s: %w", name, ImageFileBucket, err)
	}
	if _, err := obs.GetInfo(ctx, name); err == nil {
		return false, nil
	} else if !errors.Is(err, jetstream.ErrObjectNotFound) {
		return false, fmt.Errorf("transport: upload image file %s: look up: %w", name, err)
	}
	if _, err := obs.PutBytes(ctx, name, data); err != nil {
		return false, fmt.Errorf("transport: upload image file %s: %w", name, err)
	}
	return true, nil
}

// FetchImageFile reads the file uploaded under key (ErrImageNotFound when
// none was). The caller checks that the bytes are the image (their content
// key), as for any file it is handed.
func FetchImageFile(ctx context.Context, js jetstream.JetStream, key wire.ImageKey) ([]byte, error) {
	if err := key.Check(); err != nil {
		return nil, fmt.Errorf("transport: fetch image file: %w", err)
	}
	name := key.String()
	obs, err := js.ObjectStore(ctx, ImageFileBucket)
	if err != nil {
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil, fmt.Errorf("transport: fetch image file %s: %w (no bucket %s)", name, ErrImageNotFound, ImageFileBucket)
		}
		return nil, fmt.Errorf("transport: fetch image file %s: open bucket %s: %w", name, ImageFileBucket, err)
	}
	info, err := obs.GetInfo(ctx, name)
	if err != nil {
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return nil, fmt.Errorf("transport: fetch image file %s: %w", name, ErrImageNotFound)
		}
		return nil, fmt.Errorf("transport: fetch image file %s: %w", name, err)
	}
	if info.Size > MaxImageFileBytes {
		return nil, fmt.Errorf("transport: fetch image file %s: object of %d bytes (cap %d): %w", name, info.Size, MaxImageFileBytes, wire.ErrTooLarge)
	}
	data, err := obs.GetBytes(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("transport: fetch image file %s: %w", name, err)
	}
	return data, nil
}
