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
}

// DefaultLimits keep a proposal around 100-200 KB.
func DefaultLimits() Limits { return Limits{MaxDeltaEntries: 20_000, MaxProposalEntries: 40_000} }

// Proposal is one group of deltas to commit together, and for each delta
// the indices (into Merge's input) of the batches it carries.
type Proposal struct {
	Deltas  []storage.Delta
	Members [][]int
}

// Entries is the number of entries the proposal carries.
func (p *Proposal) Entries() int {
	n := 0
	for _, d := range p.Deltas {
		n += len(d.Batch.Entries) + len(d.Batch.Unknown)
	}
	return n
}

// Merge folds batches into deltas and groups the deltas into proposals.
// Batches of one (host, CPU) stream with consecutive sequence numbers in
// one epoch merge into one delta [first, last]; a batch that repeats a
// sequence number already in the input (a redelivery racing the first
// delivery) joins the delta of its twin without being counted twice.
// Inputs are not modified; deltas share no memory with them.
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
			b.Epoch == cur.Epoch && len(cur.Entries)+len(b.Entries) <= lim.MaxDeltaEntries:
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

	var out []Proposal
	var p Proposal
	size := 0
	for k, d := range deltas {
		n := len(d.Batch.Entries) + len(d.Batch.Unknown)
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
	c.Drops = nil
	for name, n := range b.Drops {
		if c.Drops == nil {
			c.Drops = make(map[string]uint64, len(b.Drops))
		}
		c.Drops[name] = n
	}
	return &c
}

// fold adds b, the next batch of dst's stream, to dst; Normalize sums the
// entries both hold.
func fold(dst, b *wire.Batch) {
	dst.Entries = append(dst.Entries, b.Entries...)
	dst.Unknown = append(dst.Unknown, b.Unknown...)
	for name, n := range b.Drops {
		if dst.Drops == nil {
			dst.Drops = map[string]uint64{}
		}
		dst.Drops[name] += n
	}
	dst.Start, dst.End = min(dst.Start, b.Start), max(dst.End, b.End)
	// The accounting is cumulative: the later batch's describes the run.
	dst.Version = max(dst.Version, b.Version)
	dst.Delivered, dst.Accounted = b.Delivered, b.Accounted
}
