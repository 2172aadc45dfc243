package aggregator

import (
	"cmp"
	"slices"

	"dcpi/storage"
	"dcpi/wire"
)

// Host folds: storage keeps counts per host, not per CPU, so the deltas of
// one host's CPUs — which sample mostly the same hot instructions — can
// travel as one delta with one merged set of entries (storage.Delta.Folded),
// and every replica decodes, validates and merges each (image, offset,
// event, PID) once per host instead of once per CPU. The state machine
// applies a fold only if each of its runs is next in its stream; otherwise
// it answers storage.Unfold and changes nothing, and the proposer sends the
// runs again as per-stream deltas (MergeStreams).
//
// Batches with ProfileMe address lists stay out of folds: those lists are
// merged on apply by a randomized rule (hotlist.Merge), so merging them
// across CPUs first would store other lists than the per-stream deltas do.

// foldHosts folds the per-stream deltas of Merge (sorted by host, CPU and
// Seq, normalized) into host folds of at most maxEntries merged entries,
// and returns the new deltas and their members. A stream's k-th delta
// folds only with other streams' k-th deltas of the same epoch, and the
// folds of round k come before those of round k+1, so each stream's
// deltas stay in Seq order.
func foldHosts(deltas []storage.Delta, members [][]int, maxEntries int) ([]storage.Delta, [][]int) {
	var outD []storage.Delta
	var outM [][]int
	for i := 0; i < len(deltas); {
		j := i + 1
		for j < len(deltas) && deltas[j].Batch.Host == deltas[i].Batch.Host {
			j++
		}
		outD, outM = foldHost(deltas[i:j], members[i:j], maxEntries, outD, outM)
		i = j
	}
	return outD, outM
}

// foldHost appends the folds of one host's deltas to outD and outM.
func foldHost(ds []storage.Delta, ms [][]int, maxEntries int, outD []storage.Delta, outM [][]int) ([]storage.Delta, [][]int) {
	if len(ds) == 1 || ds[0].Batch.CPU == ds[len(ds)-1].Batch.CPU {
		return append(outD, ds...), append(outM, ms...) // one stream
	}
	// round[i] is ds[i]'s place among its stream's deltas.
	round := make([]int, len(ds))
	for i := 1; i < len(ds); i++ {
		if ds[i].Batch.CPU == ds[i-1].Batch.CPU {
			round[i] = round[i-1] + 1
		}
	}
	order := make([]int, len(ds))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int {
		if c := cmp.Compare(round[x], round[y]); c != 0 {
			return c
		}
		return cmp.Compare(ds[x].Batch.Epoch, ds[y].Batch.Epoch) // then CPU: stable
	})
	var f *storage.Delta // the fold being built
	var fm, parts []int  // its members, and the deltas in it
	flush := func() {
		if f == nil {
			return
		}
		if len(f.Folded) > 0 && storage.CheckDelta(*f) != nil {
			// Sums of valid batches can break the wire format's
			// caps (a 64-bit total, a section's length); the
			// state machine would refuse the proposal, so send
			// the deltas unfolded.
			for _, i := range parts {
				outD, outM = append(outD, ds[i]), append(outM, ms[i])
			}
		} else {
			outD, outM = append(outD, *f), append(outM, fm)
		}
		f, fm, parts = nil, nil, parts[:0]
	}
	fround := 0 // the round of f's deltas
	for _, i := range order {
		d := ds[i]
		if f != nil && (round[i] != fround || d.Batch.Epoch != f.Batch.Epoch) {
			flush() // before anything of the next round
		}
		if !foldable(d.Batch) {
			outD, outM = append(outD, d), append(outM, ms[i])
			continue
		}
		if f != nil && mergedFoldSize(f.Batch, d.Batch) > maxEntries {
			flush()
		}
		parts = append(parts, i)
		if f == nil {
			c := d
			c.Batch = clone(d.Batch)
			f, fm, fround = &c, slices.Clone(ms[i]), round[i]
			continue
		}
		b := d.Batch
		delivered, accounted := f.Batch.Delivered, f.Batch.Accounted
		fold(f.Batch, b)
		// The fold's header is its first run's: keep that accounting.
		f.Batch.Delivered, f.Batch.Accounted = delivered, accounted
		f.Batch.Normalize() // so the next size check counts merged entries
		f.Folded = append(f.Folded, storage.StreamRun{CPU: b.CPU, First: b.Seq, Last: d.Last,
			Delivered: b.Delivered, Accounted: b.Accounted})
		fm = append(fm, ms[i]...)
	}
	flush()
	return outD, outM
}

// mergedFoldSize bounds foldSize of f and b folded and normalized, both
// normalized: their flat entries counted as merged — a host's CPUs share
// most of theirs, and over a long publish window each CPU's batch alone
// is more than half a delta — and the rest as if none merged.
func mergedFoldSize(f, b *wire.Batch) int {
	return wire.UnionLen(f.Entries, b.Entries) + foldSize(f) - len(f.Entries) + foldSize(b) - len(b.Entries)
}

// foldable reports whether a delta's batch may join a host fold: it has
// no ProfileMe address lists (see above).
func foldable(b *wire.Batch) bool { return len(b.MeAddrs) == 0 }

// MergeStreams is what to propose for a host fold that the state machine
// answered storage.Unfold: Merge of the batches members lists (indices
// into batches, as a Proposal's Members are into Merge's input) without
// host folds, its proposals' Members again indices into batches.
func MergeStreams(batches []*wire.Batch, members []int, lim Limits) []Proposal {
	sub := make([]*wire.Batch, len(members))
	for k, i := range members {
		sub[k] = batches[i]
	}
	lim.FoldHosts = false
	ps := Merge(sub, lim)
	for _, p := range ps {
		for _, m := range p.Members {
			for j, k := range m {
				m[j] = members[k]
			}
		}
	}
	return ps
}
