package main

import (
	"context"
	"dcpi/analysis/imagefind"
	"dcpi/transport"
	"dcpi/wire"
	"errors"
	"fmt"
	"io"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// newImageFinder is the finder of a tool whose images come from o: the
// cluster's upload when o is a cluster, and the --image-dir directories.
func newImageFinder(log io.Writer, o *openedSource, dirs []string) imagefind.Finder {
	var uploaded func(wire.ImageKey) ([]byte, error)
	if o != nil {
		uploaded = o.imageFile
	}
	return imagefind.New(log, uploaded, dirs)
}

// clusterImageFiles reads the files nodes uploaded to the cluster.
func clusterImageFiles(ctx context.Context, nc *nats.Conn) func(wire.ImageKey) ([]byte, error) {
	return func(key wire.ImageKey) ([]byte, error) {
		js, err := jetstream.New(nc)
		if err != nil {
			return nil, err
		}
		b, err := transport.FetchImageFile(ctx, js, key)
		if errors.Is(err, transport.ErrImageNotFound) {
			return nil, fmt.Errorf("%w: %w", imagefind.ErrNotUploaded, err)
		}
		return b, err
	}
}
