package aggregator

import (
	"cmp"
	"slices"

	"dcpi/storage"
	"dcpi/wire"
)

// Limits bound what one proposal carries, so a Raft log entry and its
// NATS request stay small (NATS's default payload limit is 1 MB; the
// batch encoding takes about 5 bytes an entry).
type Limits struct {
	// MaxDeltaEntries caps the entries merged into one delta; a longer
	// run of batches becomes several deltas.
	MaxDeltaEntries int
	// MaxProposalEntries caps the entries of all deltas in one proposal.
	MaxProposalEntries int
	// FoldHosts folds the deltas of a host's streams in one epoch into
	// host folds (storage.Delta.Folded; hostfold.go), whose entries
	// MaxProposalEntries bounds once merged: a fold may fill a proposal,
	// since over a long publish window each CPU's batch alone is most of
	// a delta, and a fold capped at MaxDeltaEntries would then not fold
	// at all. The proposer must then handle
	// storage.Unfold (MergeStreams), and every replica must read host
	// folds (a build from before them refuses the log entries).
	FoldHosts bool
}

// DefaultLimits keep a proposal around 100-200 KB.
func DefaultLimits() Limits { return Limits{MaxDeltaEntries: 20_000, MaxProposalEntries: 40_000} }

// Proposal is one group of deltas to commit together, and for each delta
// the indices (into Merge's input) of the batches it carries.
type Proposal struct {
	Deltas  []storage.Delta
	Members [][]int
}

// Entries is the number of entries the proposal carries: flat entries,
// unknown samples and stacks.
func (p *Proposal) Entries() int {
	n := 0
	for _, d := range p.Deltas {
		n += deltaSize(d.Batch)
	}
	return n
}

// deltaSize is what a batch counts against the limits. A stack counts as
// one entry: its frames are mostly shared through the frame table. A
// ProfileMe entry counts as one too, though it holds up to wire.MeFields
// sums: most are zero and not encoded.
func deltaSize(b *wire.Batch) int {
	return len(b.Entries) + len(b.Unknown) + len(b.Stacks) + len(b.Me) + len(b.MeHist) + len(b.MeAddrs)
}

// foldSize is what bounds folding batches into one delta: its entries
// less the unknown ones.
func foldSize(b *wire.Batch) int { return deltaSize(b) - len(b.Unknown) }

// Merge folds batches into deltas and groups the deltas into proposals.
// Batches of one (host, CPU) stream with consecutive sequence numbers in
// one epoch merge into one delta [first, last]; a batch that repeats a
// sequence number already in the input (a redelivery racing the first
// delivery) joins the delta of its twin without being counted twice.
// With lim.FoldHosts, the deltas of a host's streams then fold into host
// folds (hostfold.go). Inputs are not modified; deltas share no memory
// with them.
func Merge(batches []*wire.Batch, lim Limits) []Proposal {
	if lim.MaxDeltaEntries <= 0 {
		lim.MaxDeltaEntries = DefaultLimits().MaxDeltaEntries
	}
	if lim.MaxProposalEntries <= 0 {
		lim.MaxProposalEntries = DefaultLimits().MaxProposalEntries
	}
	order := make([]int, len(batches))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int {
		a, b := batches[x], batches[y]
		if c := cmp.Compare(a.Host, b.Host); c != 0 {
			return c
		}
		if c := cmp.Compare(a.CPU, b.CPU); c != 0 {
			return c
		}
		return cmp.Compare(a.Seq, b.Seq)
	})

	var deltas []storage.Delta
	var members [][]int
	var cur *wire.Batch
	var last uint64
	for _, i := range order {
		b := batches[i]
		switch {
		case cur != nil && b.Host == cur.Host && b.CPU == cur.CPU && b.Seq == last:
			// The same batch twice: ack both when the delta commits.
			members[len(members)-1] = append(members[len(members)-1], i)
			continue
		case cur != nil && b.Host == cur.Host && b.CPU == cur.CPU && b.Seq == last+1 &&
			b.Epoch == cur.Epoch && foldSize(cur)+foldSize(b) <= lim.MaxDeltaEntries:
			fold(cur, b)
			last = b.Seq
			deltas[len(deltas)-1].Last = last
			members[len(members)-1] = append(members[len(members)-1], i)
			continue
		}
		if cur != nil {
			cur.Normalize()
		}
		cur, last = clone(b), b.Seq
		deltas = append(deltas, storage.Delta{Batch: cur, Last: last})
		members = append(members, []int{i})
	}
	if cur != nil {
		cur.Normalize()
	}
	if lim.FoldHosts {
		deltas, members = foldHosts(deltas, members, lim.MaxProposalEntries)
	}

	var out []Proposal
	var p Proposal
	size := 0
	for k, d := range deltas {
		n := deltaSize(d.Batch)
		if len(p.Deltas) > 0 && size+n > lim.MaxProposalEntries {
			out = append(out, p)
			p, size = Proposal{}, 0
		}
		p.Deltas = append(p.Deltas, d)
		p.Members = append(p.Members, members[k])
		size += n
	}
	if len(p.Deltas) > 0 {
		out = append(out, p)
	}
	return out
}

// clone copies b deeply enough that folding into it never touches b.
func clone(b *wire.Batch) *wire.Batch {
	c := *b
	c.Entries = slices.Clone(b.Entries)
	c.Unknown = slices.Clone(b.Unknown)
	c.Drops = addDrops(nil, b.Drops)
	// Frames are never written through, so stacks may share them with b.
	c.Stacks = slices.Clone(b.Stacks)
	c.StackDrops = addDrops(nil, b.StackDrops)
	c.Me = slices.Clone(b.Me)
	c.MeDrops = addDrops(nil, b.MeDrops)
	// Address lists are never written through (Normalize merges into
	// new ones), so they may share their entries with b.
	c.MeHist = slices.Clone(b.MeHist)
	c.MeAddrs = slices.Clone(b.MeAddrs)
	return &c
}

// fold adds b, the next batch of dst's stream, to dst; Normalize sums the
// entries both hold.
func fold(dst, b *wire.Batch) {
	dst.Entries = append(dst.Entries, b.Entries...)
	dst.Unknown = append(dst.Unknown, b.Unknown...)
	dst.Drops = addDrops(dst.Drops, b.Drops)
	// Stacks sum per (PID, event, frames, truncated), as Normalize does;
	// the PID survives into storage as the flat entries' does.
	dst.Stacks = append(dst.Stacks, b.Stacks...)
	dst.StackDrops = addDrops(dst.StackDrops, b.StackDrops)
	// ProfileMe sums add per (image, offset, PID), as Normalize does.
	dst.Me = append(dst.Me, b.Me...)
	if u := dst.MeUnknown + b.MeUnknown; u >= dst.MeUnknown {
		dst.MeUnknown = u
	} else {
		dst.MeUnknown = ^uint64(0) // saturate, as the counts do
	}
	dst.MeDrops = addDrops(dst.MeDrops, b.MeDrops)
	// (PC, history) counts add per key; address hot lists of one
	// instruction merge unbiased (hotlist.Merge), both in Normalize.
	dst.MeHist = append(dst.MeHist, b.MeHist...)
	if u := dst.MeHistDropped + b.MeHistDropped; u >= dst.MeHistDropped {
		dst.MeHistDropped = u
	} else {
		dst.MeHistDropped = ^uint64(0)
	}
	dst.MeAddrs = append(dst.MeAddrs, b.MeAddrs...)
	dst.Start, dst.End = min(dst.Start, b.Start), max(dst.End, b.End)
	// The accounting is cumulative: the later batch's describes the run.
	// A delta of flat and stack batches is of the stack version, and
	// one with a ProfileMe batch of the ProfileMe version.
	dst.Version = max(dst.Version, b.Version)
	dst.Delivered, dst.Accounted = b.Delivered, b.Accounted
}

// addDrops adds named counters to dst, allocating it only when there is
// something to add.
func addDrops(dst, src map[string]uint64) map[string]uint64 {
	for name, n := range src {
		if dst == nil {
			dst = map[string]uint64{}
		}
		dst[name] += n
	}
	return dst
}
