package transport

import (
	"context"
	"dcpi/wire/delivery"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"dcpi/wire"
)

// BatchSource is what an aggregator reads, over JetStream: batches from the
// shared durable consumer (aggregator.Source) and image records from the
// object store (aggregator.ImageStore). The aggregator declares both
// interfaces and knows nothing of NATS; this is the one place they meet,
// through the names of wire/delivery, so neither package imports the other
// (assertions in adapters_test.go keep them in step).
type BatchSource struct {
	Consumer *Consumer
	JS       jetstream.JetStream
}

// Fetch takes up to max batches from the stream (Consumer.Fetch).
func (s BatchSource) Fetch(ctx context.Context, max int, wait time.Duration) ([]delivery.Batch, error) {
	ds, err := s.Consumer.Fetch(ctx, max, wait)
	out := make([]delivery.Batch, len(ds))
	for i := range ds {
		out[i] = sourceDelivery{&ds[i]}
	}
	return out, err
}

// FetchImage reads an image record from the object store (FetchImage).
func (s BatchSource) FetchImage(ctx context.Context, key wire.ImageKey) (*wire.ImageRecord, error) {
	return FetchImage(ctx, s.JS, key)
}

// sourceDelivery is a Delivery seen through delivery.Batch's methods
// (Delivery's fields Batch and Err take those names).
type sourceDelivery struct{ d *Delivery }

func (d sourceDelivery) Batch() *wire.Batch            { return d.d.Batch }
func (d sourceDelivery) Err() error                    { return d.d.Err }
func (d sourceDelivery) Ack(ctx context.Context) error { return d.d.Ack(ctx) }
func (d sourceDelivery) Nak(delay time.Duration) error { return d.d.Nak(delay) }
func (d sourceDelivery) Term(reason string) error      { return d.d.Term(reason) }
