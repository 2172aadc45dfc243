package node

import (
	"dcpi/storage"
	"dcpi/wire"
)

// LocalSink publishes into an embedded Pebble profile database through
// package storage, so one host can be profiled with no cluster at all.
type LocalSink struct{ DB *storage.DB }

// PublishImage stores the image record.
func (s LocalSink) PublishImage(r *wire.ImageRecord) error { return s.DB.PutImage(r) }

// PublishBatch applies the batch; a redelivered one changes nothing.
func (s LocalSink) PublishBatch(b *wire.Batch) error {
	_, err := s.DB.ApplyBatch(b)
	return err
}
