// Package aggregator turns the stream of node sample batches into Raft
// proposals. Merge is the pure part: it folds consecutive batches of each
// (host, CPU) stream into deltas — still keyed by epoch, event, image,
// offset and host, so per-host queries stay possible — optionally folds a
// host's streams into host folds (hostfold.go), and groups them into
// bounded proposals. Aggregator is the loop around it: fetch from a
// Source, propose to the coordinator, and acknowledge each batch only
// after the proposal that carried it was committed, so a crash anywhere
// means a redelivery, which the state machine recognizes by (host, CPU,
// seq) and ignores.
//
// The package declares the interfaces it consumes (Source, delivery.Batch,
// ImageStore, Proposer) and imports no NATS: transport.BatchSource is the
// JetStream side, coordinator.Client the proposer, and the tests use
// in-memory ones.
//
// Aggregators keep no state that matters: run more of them on the same
// durable consumer to scale out.
package aggregator
