// Package delivery names what a consumer takes from a stream: one message,
// decoded, to be acknowledged once stored, handed back (Nak) to be
// delivered again later, or terminated when it can never be stored. The
// aggregator consumes deliveries and transport makes them from JetStream
// messages; both import these names and neither imports the other, so the
// node-side transport links no database (the way etcd raft's messages live
// in raftpb, apart from the raft library and its users).
package delivery

import (
	"context"
	"time"

	"dcpi/wire"
)

// Settler settles a delivered message.
type Settler interface {
	Ack(ctx context.Context) error
	Nak(delay time.Duration) error
	Term(reason string) error
}

// Batch is one sample batch taken from the batch stream.
type Batch interface {
	// Batch is the decoded batch; nil when Err is set.
	Batch() *wire.Batch
	// Err says why the message is not a valid batch (malformed, forged).
	Err() error
	Settler
}

// Values is one value-sampling record taken from its stream.
type Values interface {
	// Record is the decoded record; nil when Err is set.
	Record() *wire.ValuesRecord
	// Err says why the message is not a valid record (malformed, of
	// another version, forged).
	Err() error
	Settler
}
