// Package transport owns the NATS JetStream path between node agents and
// aggregators: the stream and object-store names, the embedded server the
// coordinator runs, client connections, the node-side Publisher (a bounded,
// ordered, retrying queue that never blocks sampling and never loses a
// sample without counting it) and the aggregator-side Consumer that decodes
// and checks what it fetches, offered to an aggregator as BatchSource.
//
// It does not own the message formats (package wire), merging or
// acknowledgement policy (package aggregator, which acks only after the Raft
// commit), or storage. It imports wire (with wire/delivery, the names of a
// delivered message that the aggregator consumes) and the NATS modules,
// and none of the packages it serves: BatchSource satisfies the
// aggregator's Source and ImageStore, and Publisher node.Publisher, by
// their method sets alone, so a node agent links no database.
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
//
// # Subjects and restarts
//
// Each (host, CPU) stream of sequence numbers has its own subject,
// "dcpi.batch.<host>.<cpu>" (BatchSubject), so that a restarted node agent
// can ask the stream for the newest batch of each CPU still waiting there
// (LastPublished) and continue after it and after what storage has applied,
// never reusing a number; LastPublished says in which order to read the
// two. An aggregator refuses a batch whose host or CPU is not its
// subject's (ErrForged).
//
// # Past JetStream's acknowledgment
//
// JetStream acknowledges before it fsyncs (every 2 minutes by default), so
// a power loss can take batches it acknowledged. With
// PublisherConfig.Applied a Publisher keeps each acknowledged batch until
// the coordinator reports its stream applied through it, and sends again
// the batches of a stream whose applied Seq stalls (retention, in
// retain.go; docs/durability.md). ServerConfig.SyncAlways is the other
// remedy, an fsync per message.
package transport
