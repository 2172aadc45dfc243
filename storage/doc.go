// Package storage is the Pebble schema of the profile database: epochs ×
// events × images × offsets (× host) → counts, written with merge operators
// and batches, read through narrow interfaces. It is the only importer of
// Pebble. It owns keys, values and their checks; it does not own what an
// epoch means (the coordinator) or how profiles are analyzed (analysis).
//
// DCPI kept one file per image and event in a directory per epoch (sec.
// 4.3.3 of the paper); here the same hierarchy is a key prefix, so an epoch,
// an event of an epoch, or an image of an event is one contiguous key range.
//
// # Key schema (schema version 2)
//
// Integers are big-endian and fixed-width so that keys sort numerically. An
// image is its 34-byte wire.ImageKey. A host is its name and a 0x00 byte
// (wire forbids control characters in host names), so "a" sorts before
// "ab". Values marked "merged" are 8-byte big-endian uint64 counters written
// only with Pebble merges through the counter Merger (addition, saturating at
// 2^64-1), so no write reads.
//
//	'c' epoch:8 event:1 image:34 offset:8 host\0 pid:4  → samples (merged)
//	'f' epoch:8 event:1 image:34 offset:8               → samples over all hosts and PIDs (merged)
//	'h' epoch:8 host\0 event:1 image:34 offset:8 pid:4  → samples, as 'c' (merged)
//	's' epoch:8 event:1 host\0 class:1                  → samples per host, class 'k' attributed, 'u' unknown (merged)
//	'u' epoch:8 event:1 host\0 pid:4 pc:8               → unattributed samples, the "unknown" profile (merged)
//	'd' epoch:8 host\0 name                             → named drop counter (merged)
//	'a' host\0 cpu:2                                    → highest contiguous batch Seq applied (8 bytes, Set)
//	'i' image:34                                        → wire.ImageRecord encoding (Set)
//	'e' epoch:8                                         → epoch record: version 1, state, start ns, end ns; version 2 (a merge) adds merged-through:8 (Set)
//	'n' host\0                                          → node record: version 2, CPUs, registered, updated, labels, events per sample (Set; version 1 has no periods)
//	'k' epoch:8 host\0                                  → epoch ack: version, flags (late), at, per-stream last Seqs (Set)
//	't' stackID:8                                       → stack record: version 1, flags (truncated), images, frames (Set once)
//	'g' epoch:8 event:1 stackID:8                       → samples by call stack over all hosts and PIDs (merged)
//	'x' epoch:8 host\0 event:1 stackID:8 pid:4          → samples by call stack (merged)
//	'q' epoch:8 event:1 host\0                          → samples counted by stacks, per host (merged)
//	'p' epoch:8 host\0 name                             → named stack drop counter (merged)
//	'U' host\0 uploadID:16                              → path upload record: version 1, source, image:34, refusal reason ("" applied) (Set once)
//	'W' source:1 image:34                               → merged path profile and CCT of every host (wire.PathProfile encoding, Set)
//	'V' source:1 image:34 host\0                        → merged path profile and CCT of one host (wire.PathProfile encoding, Set)
//	'v' epoch:8 host\0 image:34 offset:8 kind:1          → value-sampling hot list of one host (hotlist encoding, Set)
//	'l' epoch:8 image:34 offset:8 kind:1                → value-sampling hot list of every host (hotlist encoding, Set)
//	'z' epoch:8 host\0                                  → value-sampling accounting: version 1, modules, last Seq applied, interrupts by outcome (Set)
//	'y' host\0                                          → the host's last value record Seq applied, over all epochs (uvarint, Set)
//	'M' epoch:8 host\0 image:34 offset:8 pid:4 field:1  → ProfileMe sum of one wire.Me field (merged; nonzero fields only)
//	'G' epoch:8 image:34 offset:8 field:1               → ProfileMe sum over all hosts and PIDs (merged)
//	'S' epoch:8 host\0 class:1                          → ProfileMe samples per host, class 'k' in entries, 'u' unknown, 'h' history not kept (merged)
//	'D' epoch:8 host\0 name                             → named ProfileMe drop counter (merged)
//	'H' epoch:8 host\0 image:34 offset:8 history:2      → ProfileMe samples with that path history (merged)
//	'J' epoch:8 image:34 offset:8 history:2             → the same over all hosts (merged)
//	'A' epoch:8 host\0 image:34 offset:8                → ProfileMe effective-address hot list (hotlist encoding, Set)
//	'B' epoch:8 image:34 offset:8                       → the same over all hosts (hotlist encoding, Set)
//	'r' host\0 view:1                                   → samples stored or dropped in epochs retention deleted, view 'f' flat, 's' stacks, 'm' ProfileMe (merged)
//	'P' host\0 pid:4 epoch:8                            → process record: wire.ProcessRecord encoding, epoch the first the node saw it in (Set)
//	'm' "schema"                                        → "dcpi-profile-db/2" (Set once)
//	'm' "logindex"                                      → the Raft log index the database reflects (8 bytes, Set)
//	'm' "run"                                           → a local run's RunInfo (model, events, ProfileMe's S and W) as JSON (Set once; dcpi profile only)
//
// 'c' is the profile proper, with the host dimension (and the PID where the
// daemon keeps per-process profiles, else 0). 'f' is its roll-up over hosts
// and PIDs, written in the same Pebble batch, so a fleet-wide query reads one
// key per (epoch, event, image, offset) rather than one per host. 'h' holds
// the counts of 'c' again, host-major, in the same batch: a query naming a
// few hosts reads one contiguous range per (epoch, host) — and merges them
// back into (event, image, offset, host) order — where in 'c' it would seek
// once per (event, image, offset) past the other hosts (4-6 s for one host
// among 1,000). 'c' stays for queries by PID over every host, and for ones
// naming so many hosts that a range each costs more than seeking. 's' and
// 'd' let Totals check conservation (samples generated = stored + dropped)
// without scanning profiles.
//
// Call stacks (wire.StackEntry) are content-addressed: a stack's ID is 64
// bits of the SHA-256 of its record (its frames, leaf first, and whether it
// was truncated), and its record is written once to 't'. If that ID already
// holds another stack's record, the next ID is tried, and so on: a read
// during apply, deterministic because every replica applies the same log
// in the same order, so two different stacks are never merged. 'x' is the
// stack profile host-major (a query naming hosts reads one range per epoch
// and host, as 'h'), 'g' its roll-up for fleet-wide queries, 'q' and 'p'
// the stack view's conservation counters: per stream, stack samples plus
// stack drops equal the samples delivered. All are written in the same
// Pebble batch as the delta's flat counts. The stack tables were added to
// schema version 2 without a new version: a database from before them
// reads as one without stacks, and a build from before them reads none of
// their prefixes.
//
// Value-sampling hot lists (wire.ValuesRecord; internal/hotlist) are
// merged when applied, like path profiles, never summed: ApplyValues reads
// each list's stored (epoch, host) and fleet-wide versions, merges the
// record's into both by Gibbons-Matias's rule (the smaller τ thinned
// first, coins seeded from the lists merged so every replica stores the
// same) and writes them with the host's accounting in 'z' and its Seq in
// 'y' in one batch. A host numbers its records once over all its epochs,
// so 'y' decides: a record whose Seq is not past it is a redelivery, and
// ApplyValuesWith (the state machine's) decides a merged run first..Seq as
// a delta is decided (Applied, Duplicate, Gap, Overlap).
// ProfileMe samples (wire.MeEntry: one instruction's sums of retires,
// aborts, event bits, stall cycles and latencies, docs/profileme.md) are
// stored one key per nonzero field: 'M' host-major, 'G' rolled up over
// hosts and PIDs for fleet-wide queries, and 'S' and 'D' the ProfileMe
// view's conservation counters (per stream, samples in entries, unknown
// and drops equal the instructions the hardware tagged). They are written
// in the same Pebble batch as the delta's flat counts, so they share its
// exactly-once application; like the stack tables they were added to
// schema version 2 without a new version. ProfileMe section version 2
// adds 'H' and 'J', the (PC, path history) counts for path reconstruction,
// summed like the fields (per batch they add up to the entries' samples,
// less the history drops in 'S' class 'h'), and 'A' and 'B', the
// effective-address hot lists, merged on apply as value sampling's are
// (read, Gibbons-Matias merge, Set, in the delta's batch, one apply call
// at a time).
//
// Path profiles (wire.PathUpload: Ball-Larus path counts and a calling
// context tree of one image, from an instrumented run or hwsim's oracle)
// are merged when applied, not summed by Pebble merges: ApplyPathUpload
// reads the stored profile of (source, image) in 'W' and of (source,
// image, host) in 'V', merges the upload into each (MergePathProfiles: path
// counts and metrics summed, trees merged record by record) and writes
// both back with the upload's record in 'U', in one Pebble batch. A (host,
// upload ID) found in 'U' is a redelivery and changes nothing. An upload
// that does not merge (other metric names, another path numbering) is
// recorded in 'U' as refused, with its reason, and merges nothing. The
// source is the first byte of the profile keys, so oracle ground truth and
// instrumented measurements are never merged. There is no epoch dimension:
// a path profile covers one run, whenever it ended. These tables were
// added to schema version 2 as the stack tables were.
//
// Process records (wire.ProcessRecord: a process's binary and the user's
// process labels) are keyed by the host that published them — taken from
// its credentials by the coordinator, never from the record — then PID and
// the first epoch the node saw the process in, so a reused PID is a new
// key and a host's processes are one range. Samples carry a PID only for
// images kept per process (node.per_process); Query.HostPIDs, the
// process selectors' (host, PID) pairs, narrows a query's PIDs per host.
// The table was added to schema version 2 as the stack tables were.
//
// Schema versions: a database of another version is refused at Open and
// must be rebuilt (version 2 added 'h').
//
// # Batches and redelivery
//
// ApplyBatch writes a wire.Batch's counts, its unknown samples and drops, and
// the new applied Seq of its (Host, CPU) in one Pebble batch: either all of
// it is durable or none is. A batch whose Seq is at or below the applied Seq
// is a redelivery and changes nothing. A batch whose Seq skips ahead is
// refused with ErrSeqGap, also changing nothing: the publisher keeps a
// stream in order, so a gap means a batch was lost upstream, and the caller
// must redeliver from the missing Seq rather than have the loss hidden.
//
// ApplyDeltas takes an aggregator's Deltas: consecutive batches [Seq, Last]
// of one stream merged into one. It reports an Outcome per delta (Applied,
// Duplicate, Gap, Overlap) instead of failing on a gap, commits every
// applied delta of a call in one Pebble batch, and with ApplyDeltasWith
// commits a Meta (registry records and the Raft log index) in the same
// batch, so the coordinator's FSM applies a log entry all or nothing.
//
// A host fold (Delta.Folded) is one delta for runs of several streams of one
// host in one epoch, their batches merged into one set of entries: every
// table but the applied Seqs is per host, so it writes what the runs'
// separate deltas would, with each key merged once. It applies only if
// every run is next in its stream, writing each stream's new Seq and
// accounting; if all its runs are duplicates or all gaps it reports
// Duplicate or Gap; otherwise Unfold, changing nothing, and the proposer
// sends the runs as separate deltas.
//
// A call's counts reach Pebble in key order, one merge per key (the sums
// of the call's operands of that key), which keeps the memtable's inserts
// in cache (writer.go).
//
// # Retention
//
// MergeEpochs folds a run of sealed epochs first..last into epoch first:
// every counter of the later epochs is added to first's by a merge operand
// (so the merged totals are the parts' sums exactly), hot lists merge by
// the Gibbons-Matias rule, value accounting adds, acks keep each stream's
// highest Seq, and the record spans the parts' Start..End with
// merged-through = last (record version 2). The later parts' keys go by
// range deletions in the same batch, so epoch numbers stay unique and
// increasing. ExpireEpochs deletes every epoch through a number the same
// way, after adding what each host's deleted epochs held — per view, the
// samples stored and the samples dropped, read from the conservation
// counters — to 'r', so that generated = stored + dropped + expired stays
// exact (ExpiredTotals); it also deletes the process records first seen in
// those epochs whose processes have no sample left in the flat profile of
// the epochs they own after them (until the PID's next record, if any),
// which costs a scan of those hosts' remaining 'h' rows, and only when
// such records exist. Both refuse an epoch that is not sealed
// (ErrUnsealed) and change nothing then. A range deletion only hides keys;
// CompactEpochs over the range is what gives the space back.
//
// # Compaction
//
// Every count is a merge, so until Pebble's compactions combine them a key
// is read as the sum of a stack of operands. Compact rewrites the whole
// database into one value per key; the coordinator runs it when an epoch is
// sealed, so queries over sealed epochs read compacted tables. Open tunes
// Pebble for ingest (bigger memtables, compacting L0 later: see the
// constants in db.go).
//
// 'n', 'k' and the log index are the coordinator's registry: storage owns
// their encoding, the coordinator their meaning.
package storage
