// Package transport owns the NATS JetStream path between node agents and
// aggregators: the stream and object-store names, the embedded server the
// coordinator runs, client connections, the node-side Publisher (a bounded,
// ordered, retrying queue that never blocks sampling and never loses a
// sample without counting it) and the aggregator-side Consumer that decodes
// and checks what it fetches.
//
// It does not own the message formats (package wire), merging or
// acknowledgement policy (package aggregator, which acks only after the Raft
// commit), or storage. It imports wire and the NATS modules, nothing else of
// the project; it satisfies node.Publisher by its method set alone.
//
// # Conservation
//
// Every batch handed to Publisher.PublishBatch reaches the stream exactly
// once per (Host, Epoch, CPU, Seq), in order, or is replaced by a tombstone
// that carries its sequence number and counts its samples in the drop
// counter "transport.buffer_full" (or "transport.too_large"). Sequence
// numbers therefore stay contiguous, and samples + drop counters summed over
// the stream equal what the node produced. JetStream's duplicate window
// (Nats-Msg-Id) drops resends; storage's applied-sequence record drops any
// that outlive the window.
package transport
