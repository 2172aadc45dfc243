package aggregator

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"dcpi/transport"
	"dcpi/wire"
)

// JetStream adapts the transport's durable consumer and image store to
// the aggregator's Source and ImageStore.
type JetStream struct {
	Consumer *transport.Consumer
	JS       jetstream.JetStream
}

// Fetch takes up to max batches from the stream.
func (j JetStream) Fetch(ctx context.Context, max int, wait time.Duration) ([]Delivery, error) {
	ds, err := j.Consumer.Fetch(ctx, max, wait)
	out := make([]Delivery, len(ds))
	for i := range ds {
		out[i] = jsDelivery{&ds[i]}
	}
	return out, err
}

// FetchImage reads an image record from the object store.
func (j JetStream) FetchImage(ctx context.Context, key wire.ImageKey) (*wire.ImageRecord, error) {
	return transport.FetchImage(ctx, j.JS, key)
}

type jsDelivery struct{ d *transport.Delivery }

func (d jsDelivery) Batch() *wire.Batch            { return d.d.Batch }
func (d jsDelivery) Err() error                    { return d.d.Err }
func (d jsDelivery) Ack(ctx context.Context) error { return d.d.Ack(ctx) }
func (d jsDelivery) Nak(delay time.Duration) error { return d.d.Nak(delay) }
func (d jsDelivery) Term(reason string) error      { return d.d.Term(reason) }
