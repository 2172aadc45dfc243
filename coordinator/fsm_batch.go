package coordinator

import (
	"github.com/hashicorp/raft"
)

// maxGroupEntries bounds the wire entries of the Ingest log entries that
// ApplyBatch commits in one Pebble batch. It must keep the batch well
// below Pebble's large-batch threshold (half a memtable, 16 MiB, counted
// with the memtable's per-key overhead): a batch over it is not inserted
// into the memtable but sorted whole (newFlushableBatch) and flushed as
// its own small L0 table, which more than doubled the replicas' apply CPU
// in BenchmarkIngest. Each entry costs about 210 bytes of batch (merges
// into the per-host, host-major and fleet tables; measured), so 16Ki
// entries make a batch of about 3.4 MB; 64Ki, the bound before the
// host-major table, crossed the threshold.
const maxGroupEntries = 1 << 14

// ApplyBatch implements raft.BatchingFSM: raft hands over the entries it
// committed together (up to MaxAppendEntries). Runs of consecutive Ingest
// entries are applied as one storage.ApplyDeltasWith call — one Pebble
// batch and commit, its merges sorted across all of them — with the last
// entry's log index; every other entry is applied alone, in order, as
// Apply would.
//
// Results are exactly Apply's, entry by entry: ApplyDeltas takes the
// deltas of a call in order with the applied Seqs as of the call so far,
// so each delta's Outcome is what applying the entries one at a time gives.
// Atomicity is per group instead of per entry, which a crash cannot tell
// apart: the group's writes and its last index commit together, so a
// restarted replica either holds the whole group or replays all of it. If
// the group's call fails (a storage error; the entries were checked when
// decoded), nothing of it was written, and its entries are applied one by
// one to give each its own result.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	res := make([]any, len(logs))
	var group []pendingIngest
	entries := 0
	flush := func() {
		if len(group) > 0 {
			f.applyIngests(group, res)
			group, entries = group[:0], 0
		}
	}
	for i, l := range logs {
		if l.Type != raft.LogCommand || (l.Index != 0 && l.Index <= f.applied) {
			continue
		}
		c, err := DecodeCommand(l.Data)
		if err != nil {
			// Changes nothing, so it need not wait for the group.
			f.logf("coordinator: log entry %d rejected: %v", l.Index, err)
			res[i] = err
			continue
		}
		in, ok := c.(*Ingest)
		if !ok {
			flush() // the command reads what the group writes
			res[i] = f.applyDecoded(l.Index, c)
			continue
		}
		n := 0
		for _, d := range in.Deltas {
			n += len(d.Batch.Entries)
		}
		if entries+n > maxGroupEntries {
			flush()
		}
		group = append(group, pendingIngest{at: i, index: l.Index, c: in})
		entries += n
	}
	flush()
	return res
}

// pendingIngest is a decoded Ingest entry of ApplyBatch, logs[at].
type pendingIngest struct {
	at    int
	index uint64
	c     *Ingest
}

// applyIngests applies a group of Ingest entries in one storage call and
// stores each entry's result at res[p.at].
func (f *FSM) applyIngests(group []pendingIngest, res []any) {
	if len(group) == 1 {
		p := group[0]
		res[p.at] = f.applyDecoded(p.index, p.c)
		return
	}
	// One effect for the group: the entries' images and deltas in order,
	// written with the last entry's index.
	var e effect
	for _, p := range group {
		pe := ingestEffect(p.c)
		e.images = append(e.images, pe.images...)
		e.deltas = append(e.deltas, pe.deltas...)
	}
	last := group[len(group)-1].index
	m, err := e.meta(last)
	if err != nil {
		f.applyOneByOne(group, res)
		return
	}
	out, err := f.ingest(e.deltas, &m)
	if err != nil {
		f.applyOneByOne(group, res)
		return
	}
	for _, p := range group {
		n := len(p.c.Deltas)
		res[p.at], out = out[:n:n], out[n:]
	}
	if last != 0 {
		f.setApplied(last)
	}
}

// applyOneByOne applies a group's entries singly, after its combined call
// failed having written nothing.
func (f *FSM) applyOneByOne(group []pendingIngest, res []any) {
	for _, p := range group {
		res[p.at] = f.applyDecoded(p.index, p.c)
	}
}

var _ raft.BatchingFSM = (*FSM)(nil)
