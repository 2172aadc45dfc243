// Package aggregator consumes sample batches from NATS JetStream, merges
// them across hosts and time into deltas keyed by epoch, event, image and
// offset, and proposes them to the coordinator, acknowledging the stream
// only after the Raft commit.
//
// Status: issue 5; this package holds nothing yet.
package aggregator
