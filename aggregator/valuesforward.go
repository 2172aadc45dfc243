package aggregator

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"dcpi/storage"
	"dcpi/wire"
	"dcpi/wire/delivery"
)

// ValuesSource is the stream of value records (transport.ValuesSource in
// production).
type ValuesSource interface {
	FetchValues(ctx context.Context, max int, wait time.Duration) ([]delivery.Values, error)
}

// ValuesProposer commits the merge of a host's value records first..r.Seq
// through the coordinator's Raft log and reports its outcome once
// committed (coordinator.Client.IngestValues).
type ValuesProposer interface {
	IngestValues(ctx context.Context, first uint64, r *wire.ValuesRecord) (storage.Outcome, error)
}

// ValuesStats are a values forwarder's counters.
type ValuesStats struct {
	Fetched   uint64 // deliveries taken from the stream
	Acked     uint64 // records acknowledged after their commit
	Applied   uint64 // records in runs the database applied
	Proposals uint64
	Rejected  uint64 // malformed, other-version or forged messages terminated
	Gaps      uint64 // records handed back because a predecessor was missing
	Overlaps  uint64 // runs split because part of them was already stored
}

// maxValuesRun bounds a merged run, so that one proposal stays well under
// NATS's payload limit: the merged record holds the union of the run's
// lists, which grows with the run for a program with many hot PCs.
const maxValuesRun = 32

// ValuesForwarder is the aggregator's loop for value records: consume,
// merge each host's consecutive records (MergeValues: Gibbons-Matias,
// thinning to the larger τ), propose, and acknowledge only after the
// commit — the batch loop's discipline, so nothing is lost and a
// redelivered record is a Duplicate.
type ValuesForwarder struct {
	cfg   Config
	src   ValuesSource
	coord ValuesProposer

	fetched, acked, applied, proposals, rejected, gaps, overlaps atomic.Uint64
}

// NewValuesForwarder returns a forwarder reading src and proposing to
// coord; of cfg it uses FetchMax, FetchWait, GapDelay and Logf.
func NewValuesForwarder(cfg Config, src ValuesSource, coord ValuesProposer) *ValuesForwarder {
	cfg.defaults()
	return &ValuesForwarder{cfg: cfg, src: src, coord: coord}
}

// Stats returns the counters; safe from any goroutine.
func (f *ValuesForwarder) Stats() ValuesStats {
	return ValuesStats{Fetched: f.fetched.Load(), Acked: f.acked.Load(), Applied: f.applied.Load(),
		Proposals: f.proposals.Load(), Rejected: f.rejected.Load(), Gaps: f.gaps.Load(), Overlaps: f.overlaps.Load()}
}

// Run consumes until ctx ends. Errors from the stream or the coordinator
// are logged and retried; nothing is acknowledged that was not committed.
func (f *ValuesForwarder) Run(ctx context.Context) error {
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		ds, err := f.src.FetchValues(ctx, f.cfg.FetchMax, f.cfg.FetchWait)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			f.cfg.logf("aggregator: fetch value records: %v (retrying in %v)", err, backoff)
			sleep(ctx, backoff)
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		f.Handle(ctx, ds)
	}
	return nil
}

// valuesRun is a run of one host's records with consecutive Seqs in one
// epoch and module; members[i] are the deliveries of records[i] (a
// record delivered twice in one fetch has two).
type valuesRun struct {
	records []*wire.ValuesRecord
	members [][]delivery.Values
}

// Handle processes one fetch: terminates what is not a valid record,
// merges each host's runs, proposes them in Seq order, and settles each
// delivery by its run's outcome.
func (f *ValuesForwarder) Handle(ctx context.Context, ds []delivery.Values) {
	f.fetched.Add(uint64(len(ds)))
	var good []delivery.Values
	for _, d := range ds {
		if err := d.Err(); err != nil {
			f.rejected.Add(1)
			f.cfg.logf("aggregator: rejected a value record: %v", err)
			if err := d.Term(err.Error()); err != nil {
				f.cfg.logf("aggregator: term: %v", err)
			}
			continue
		}
		good = append(good, d)
	}
	for _, run := range valuesRuns(good) {
		f.propose(ctx, run)
	}
}

// valuesRuns groups deliveries by host, orders each host's by Seq, and
// cuts them into runs at a missing Seq, an epoch or module change, or
// maxValuesRun records.
func valuesRuns(ds []delivery.Values) []valuesRun {
	slices.SortStableFunc(ds, func(a, b delivery.Values) int {
		ra, rb := a.Record(), b.Record()
		return cmp.Or(cmp.Compare(ra.Host, rb.Host), cmp.Compare(ra.Seq, rb.Seq))
	})
	var runs []valuesRun
	for _, d := range ds {
		r := d.Record()
		if n := len(runs); n > 0 {
			cur := &runs[n-1]
			last := cur.records[len(cur.records)-1]
			switch {
			case last.Host == r.Host && last.Seq == r.Seq:
				// The same record twice (a redelivery beside the
				// original): settle both by one outcome.
				cur.members[len(cur.members)-1] = append(cur.members[len(cur.members)-1], d)
				continue
			case last.Host == r.Host && last.Seq+1 == r.Seq && last.Epoch == r.Epoch &&
				last.Module == r.Module && len(cur.records) < maxValuesRun:
				cur.records = append(cur.records, r)
				cur.members = append(cur.members, []delivery.Values{d})
				continue
			}
		}
		runs = append(runs, valuesRun{records: []*wire.ValuesRecord{r}, members: [][]delivery.Values{{d}}})
	}
	return runs
}

// propose commits one run and settles its deliveries by the outcome.
func (f *ValuesForwarder) propose(ctx context.Context, run valuesRun) {
	merged, err := MergeValues(run.records)
	if err != nil {
		// The records were each valid and the run was cut to merge:
		// this is a bug, not bad input. Hand them back one by one.
		f.cfg.logf("aggregator: merge value records: %v", err)
		if len(run.records) > 1 {
			f.singles(ctx, run)
		} else {
			f.nakAll(run.members)
		}
		return
	}
	first := run.records[0].Seq
	f.proposals.Add(1)
	o, err := f.coord.IngestValues(ctx, first, merged)
	if err != nil {
		// Not committed as far as we know: hand everything back. If it
		// was committed after all, the redelivery is a Duplicate.
		if ctx.Err() == nil {
			f.cfg.logf("aggregator: propose value records %s %d..%d: %v", merged.Host, first, merged.Seq, err)
		}
		f.nakAll(run.members)
		return
	}
	switch o {
	case storage.Applied, storage.Duplicate:
		if o == storage.Applied {
			f.applied.Add(uint64(len(run.records)))
		}
		for _, ms := range run.members {
			for _, d := range ms {
				if err := d.Ack(ctx); err != nil {
					f.cfg.logf("aggregator: ack value record: %v (it will be redelivered and found a duplicate)", err)
					continue
				}
				f.acked.Add(1)
			}
		}
	case storage.Gap:
		for _, ms := range run.members {
			f.gaps.Add(uint64(len(ms)))
		}
		f.nakAll(run.members)
	case storage.Overlap:
		// Part of the run is stored: propose its records one by one,
		// and the state machine sorts stored from new.
		f.overlaps.Add(1)
		f.singles(ctx, run)
	default:
		f.cfg.logf("aggregator: unexpected outcome %v for value records %s %d..%d; handing them back", o, merged.Host, first, merged.Seq)
		f.nakAll(run.members)
	}
}

// singles proposes each record of run alone.
func (f *ValuesForwarder) singles(ctx context.Context, run valuesRun) {
	for i, r := range run.records {
		f.propose(ctx, valuesRun{records: []*wire.ValuesRecord{r}, members: run.members[i : i+1]})
	}
}

func (f *ValuesForwarder) nakAll(members [][]delivery.Values) {
	for _, ms := range members {
		for _, d := range ms {
			if err := d.Nak(f.cfg.GapDelay); err != nil {
				f.cfg.logf("aggregator: nak value record: %v (it will be redelivered when its ack wait ends)", err)
			}
		}
	}
}

// String describes the counters for logs.
func (s ValuesStats) String() string {
	return fmt.Sprintf("%d value records fetched, %d applied, %d acknowledged in %d proposals; %d rejected, %d gaps, %d overlaps",
		s.Fetched, s.Applied, s.Acked, s.Proposals, s.Rejected, s.Gaps, s.Overlaps)
}
