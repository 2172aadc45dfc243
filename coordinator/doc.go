// Package coordinator is the Raft-replicated owner of the shared profile
// database. It owns the replicated state machine (FSM: the commands of the
// log, their binary encoding, applying them to package storage, snapshots
// as Pebble checkpoints), epochs and their sealing rule, fleet membership
// (registration, leader-local liveness), the image registry, and the NATS
// request/reply service and its Client. It does not own the schema (storage),
// the message formats of batches and images (wire), consuming the stream or
// merging batches into deltas (aggregator), or the nodes.
//
// # Log entries and replicas
//
// Every change is a Command in the Raft log: Ingest (deltas and images),
// RegisterNode, CutEpoch, ScheduledCut, AckEpoch, SealEpoch, StartEpochs.
// Times in them are the leader's clock (Config.Now), read before
// proposing, so every replica applies
// the same entry to the same state with the same result. An entry's writes
// and its log index commit in one Pebble batch; the database is opened
// without fsync (the Raft log is the durable record), and a restarted
// replica skips the entries its database already holds. A malformed entry
// is an error result that changes nothing. The Raft log (raft-wal) is
// fsynced at every append, checksums each entry (verified on every read),
// and a failed write or fsync of it stops the replica for good rather than
// being retried (durablelog.go, docs/durability.md).
//
// The rules are pure functions, one per command (rules.go, and Sealable in
// seal.go): each reads the registry and returns the command's effect —
// records to write and Apply's result — or a refusal; FSM.apply only
// carries the effect out. testdata/fsm_epochs is the epoch lifecycle as a
// script (fsm_script_test.go).
//
// The FSM is a raft.BatchingFSM: of the entries Raft commits together, a
// run of consecutive Ingests is applied in one Pebble batch with the last
// one's index (fsm_batch.go), each entry getting the result it would have
// had alone. An entry is decoded once per replica (and once more by the
// leader's service, to refuse a bad proposal before it reaches the log).
//
// # Epochs (DCPI sec. 4.3.3)
//
// DCPI keeps profiles in non-overlapping epochs. Here a cut is a log entry:
// it closes the open epoch (Closing) and opens the next. Nodes learn of it
// from heartbeat replies, flush their driver and daemon into the closing
// epoch, and acknowledge with the last batch sequence of each stream. The
// leader seals the epoch (Sealable) once every live node has acknowledged
// and every acknowledged batch is applied; dead nodes are not waited for,
// and an ack that comes after the seal is recorded as late, its batches
// still landing in their epoch. With Config.EpochEvery the leader also
// cuts on a schedule (schedule.go): at each multiple of the period in
// wall-clock time it proposes a ScheduledCut naming the open epoch, which
// the FSM applies only if that epoch is still open, so the decision rests
// on replicated state and a leader change neither skips nor doubles a
// cut. Every replica, when it applies a seal,
// compacts the sealed epoch's keys in the background (FSM.compactSoon), so
// fleet-wide queries over it read one value per key.
//
// # Service
//
// The leader serves dcpi.coord.propose, .register, .heartbeat, .ack, .cut,
// .members.add/.remove and linearizable queries (dcpi.coord.lquery.*); any
// replica serves dcpi.coord.query.* (epochs, nodes, images, applied,
// totals, profile pages) from its own database. A node's requests about
// itself — register, heartbeat, ack, the applied and values-applied
// queries — go to a subject of that host, "<base>.<host>" (hostsubject.go):
// a host's credentials may publish only its own (transport/auth), and a
// body naming another host than its subject is refused (ErrOtherHost),
// counted and logged. Errors travel in the
// Dcpi-Error and Dcpi-Error-Code reply headers. Each request is handled
// under a context that ends at its deadline (10 s, or the wait its client
// states in the Dcpi-Timeout header if shorter) and when the service or
// the leadership stops; Raft applies, barriers and reads give up with it.
package coordinator
