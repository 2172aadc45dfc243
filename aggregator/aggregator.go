package aggregator

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"dcpi/internal/slogf"
	"dcpi/storage"
	"dcpi/wire"
	"dcpi/wire/delivery"
)

// Source is the stream of batches (transport.BatchSource in production).
type Source interface {
	Fetch(ctx context.Context, max int, wait time.Duration) ([]delivery.Batch, error)
}

// Proposer commits deltas and image records through the coordinator's
// Raft log and reports each delta's outcome once committed.
type Proposer interface {
	Propose(ctx context.Context, deltas []storage.Delta, images []*wire.ImageRecord) ([]storage.Outcome, error)
}

// ImageStore returns an image's record as its node uploaded it.
type ImageStore interface {
	FetchImage(ctx context.Context, key wire.ImageKey) (*wire.ImageRecord, error)
}

// Config configures an Aggregator.
type Config struct {
	FetchMax  int           // batches per fetch (default 256)
	FetchWait time.Duration // how long a fetch waits for the first batch (default 500 ms)
	Limits    Limits
	// GapDelay is how long a batch whose predecessor is not stored yet
	// waits before it is delivered again (default 200 ms).
	GapDelay time.Duration
	// InFlight is how many proposals may wait for their commit at once
	// (default 4). One at a time leaves the aggregator idle for a Raft
	// round trip and three replicas' apply per proposal; several keep the
	// replicated path busy. A stream is in at most one of them at a time,
	// so its deltas still commit in order (exactly-once does not depend on
	// that, storage judges every delta by its stream's applied Seq, but a
	// delta that overtook its predecessor would be a Gap, redone).
	InFlight int
	// MaxPendingEntries bounds the entries of the batches fetched and
	// not yet settled (default DefaultMaxPendingEntries): past it the
	// aggregator fetches nothing more until proposals settle, and a
	// fetch asks for no more batches than the room left holds at the
	// recent average batch size. Without it a backlog fills every fetch
	// (FetchMax batches) while InFlight proposals wait, so memory grows
	// with the batches' size: 1.7 GiB an aggregator at 1,000 hosts
	// publishing two-minute windows.
	MaxPendingEntries int
	// Logger hears of refused messages and failed fetches, proposals and
	// acknowledgements; nil discards them.
	Logger *slog.Logger
	logf   func(format string, args ...any)
}

func (c *Config) defaults() {
	if c.FetchMax <= 0 {
		c.FetchMax = 256
	}
	if c.FetchWait <= 0 {
		c.FetchWait = 500 * time.Millisecond
	}
	if c.GapDelay <= 0 {
		c.GapDelay = 200 * time.Millisecond
	}
	if c.InFlight <= 0 {
		c.InFlight = DefaultInFlight
	}
	if c.MaxPendingEntries <= 0 {
		c.MaxPendingEntries = DefaultMaxPendingEntries
	}
	c.logf = slogf.Printf(c.Logger)
}

// DefaultInFlight is Config.InFlight's default (aggregator.in_flight).
const DefaultInFlight = 4

// DefaultMaxPendingEntries is Config.MaxPendingEntries's default
// (aggregator.max_pending_entries): about 128 MiB of decoded entries,
// several times what four proposals in flight hold at 40,000 entries
// each (a host fold's input is up to six times its output).
const DefaultMaxPendingEntries = 2_000_000

// Stats are an aggregator's counters.
type Stats struct {
	Fetched uint64 // deliveries taken from the stream
	Acked   uint64 // batches acknowledged after their commit (new or redelivered)
	// Samples are those in batches this aggregator saw newly applied (a
	// commit whose answer was lost looks like a duplicate when it comes
	// back, so this can fall short; the database is the reference).
	Samples    uint64
	EntriesIn  uint64 // entries in the batches fetched, counted as deltaSize counts them
	EntriesOut uint64 // entries in the deltas proposed, alike (a delta proposed again counts again)
	Proposals  uint64
	Rejected   uint64 // malformed or forged messages terminated
	Gaps       uint64 // batches handed back because a predecessor was missing
	Overlaps   uint64 // deltas split because part of them was already stored
	Pending    uint64 // entries of the batches fetched and not yet settled (now)
}

// Aggregator is the consume-merge-propose-ack loop.
type Aggregator struct {
	cfg    Config
	src    Source
	coord  Proposer
	images ImageStore

	knownMu sync.Mutex
	known   map[wire.ImageKey]bool // images committed through this aggregator
	flight  inFlight
	pending pending

	fetched, acked, samples, entriesIn, entriesOut atomic.Uint64
	proposals, rejected, gaps, overlaps            atomic.Uint64

	// For the metrics (metrics.go): deltas by outcome (index: the
	// storage.Outcome, 0 for any other), and the latencies of proposals
	// and of fetches from delivery to acknowledgement.
	outcomes           [6]atomic.Uint64
	proposeLat, ackLat prometheus.Histogram
}

// New returns an aggregator reading src and proposing to coord.
func New(cfg Config, src Source, coord Proposer, images ImageStore) *Aggregator {
	cfg.defaults()
	return &Aggregator{cfg: cfg, src: src, coord: coord, images: images, known: map[wire.ImageKey]bool{},
		proposeLat: newHistogram(mProposeSeconds), ackLat: newHistogram(mAckSeconds)}
}

// Stats returns the counters; safe from any goroutine.
func (a *Aggregator) Stats() Stats {
	return Stats{Fetched: a.fetched.Load(), Acked: a.acked.Load(), Samples: a.samples.Load(),
		EntriesIn: a.entriesIn.Load(), EntriesOut: a.entriesOut.Load(), Proposals: a.proposals.Load(),
		Rejected: a.rejected.Load(), Gaps: a.gaps.Load(), Overlaps: a.overlaps.Load(), Pending: uint64(a.pending.now())}
}

// Run consumes until ctx ends: it fetches, merges, and keeps up to
// Config.InFlight proposals waiting for their commit while it fetches on,
// as long as the batches fetched and not settled hold fewer than
// Config.MaxPendingEntries entries. Errors from the stream or the
// coordinator are logged and retried; nothing is acknowledged that was
// not committed.
func (a *Aggregator) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		n, ok := a.pending.room(ctx, a.cfg.FetchMax, a.cfg.MaxPendingEntries, a.firstGuess())
		if !ok {
			break
		}
		ds, err := a.src.Fetch(ctx, n, a.cfg.FetchWait)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			a.cfg.logf("aggregator: fetch: %v (retrying in %v)", err, backoff)
			sleep(ctx, backoff)
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		a.dispatch(ctx, ds, &wg)
	}
	return nil
}

// Handle processes one fetch: terminates what is not a valid batch,
// merges the rest, proposes, and acknowledges what was committed; it
// returns when every proposal of the fetch is settled.
func (a *Aggregator) Handle(ctx context.Context, ds []delivery.Batch) {
	var wg sync.WaitGroup
	a.dispatch(ctx, ds, &wg)
	wg.Wait()
}

// dispatch terminates what is not a valid batch, merges the rest, and
// starts each proposal as soon as fewer than Config.InFlight are waiting
// for their commit and none of them carries one of its streams, so a
// stream's deltas are proposed in order: one overtaking its predecessor
// would come back a Gap, to be delivered again, proposed again and
// replicated again. A proposal that must wait for a stream in flight does
// not hold up the fetch's proposals of other streams (a host's CPU
// batches split over two fetches would otherwise stall every host behind
// it for a commit); they start first, and the waiting ones follow in
// order. It returns once the last proposal has started; wg is done when
// all have settled.
func (a *Aggregator) dispatch(ctx context.Context, ds []delivery.Batch, wg *sync.WaitGroup) {
	if len(ds) == 0 {
		return
	}
	start := time.Now()
	a.fetched.Add(uint64(len(ds)))
	var good []delivery.Batch
	var batches []*wire.Batch
	entries := 0
	for _, d := range ds {
		if err := d.Err(); err != nil {
			a.rejected.Add(1)
			a.cfg.logf("aggregator: rejected a message: %v", err)
			if err := d.Term(err.Error()); err != nil {
				a.cfg.logf("aggregator: term: %v", err)
			}
			continue
		}
		good = append(good, d)
		batches = append(batches, d.Batch())
		entries += deltaSize(d.Batch()) // measured as entriesOut is
	}
	a.entriesIn.Add(uint64(entries))
	a.pending.add(entries, len(good))
	var fetch sync.WaitGroup
	launch := func(p Proposal, streams []streamKey) {
		fetch.Add(1)
		wg.Go(func() {
			defer fetch.Done()
			defer a.flight.leave(streams)
			a.propose(ctx, p, good)
		})
	}
	var later []Proposal         // proposals that must wait, in order
	held := map[streamKey]bool{} // their streams: none may overtake them
	for _, p := range Merge(batches, a.cfg.Limits) {
		streams := p.streams()
		if !slices.ContainsFunc(streams, func(s streamKey) bool { return held[s] }) && a.flight.tryEnter(streams, a.cfg.InFlight) {
			launch(p, streams)
			continue
		}
		later = append(later, p)
		for _, s := range streams {
			held[s] = true
		}
	}
	for _, p := range later {
		streams := p.streams()
		if !a.flight.enter(ctx, streams, a.cfg.InFlight) {
			break // ctx ended; what is unsettled is delivered again
		}
		launch(p, streams)
	}
	wg.Go(func() {
		fetch.Wait()
		a.pending.done(entries)
		a.ackLat.Observe(time.Since(start).Seconds())
	})
}

// pending counts the entries of the batches fetched and not yet settled
// (Config.MaxPendingEntries), and the recent average batch size.
type pending struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced whenever entries settle
	entries int
	avg     float64 // entries a batch, a moving average over fetches
}

// room waits until fewer than limit entries are pending and returns how
// many batches to fetch: max, or as many average batches as the room
// left holds (at least one), a batch taken as guess entries until a fetch
// has shown their size. It reports false if ctx ends first.
func (p *pending) room(ctx context.Context, max, limit, guess int) (int, bool) {
	for {
		p.mu.Lock()
		if p.changed == nil {
			p.changed = make(chan struct{})
		}
		if left := limit - p.entries; left > 0 {
			avg := p.avg
			if avg == 0 {
				avg = float64(guess)
			}
			n := min(max, int(float64(left)/avg)+1)
			p.mu.Unlock()
			return n, true
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, false
		}
	}
}

// firstGuess is the size a batch is taken to have before any is seen:
// as large as a delta may be.
func (a *Aggregator) firstGuess() int {
	if g := a.cfg.Limits.MaxDeltaEntries; g > 0 {
		return g
	}
	return DefaultLimits().MaxDeltaEntries
}

// add counts a fetch's batches, entries in all, as pending.
func (p *pending) add(entries, batches int) {
	if batches == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.entries += entries
	a := max(float64(entries)/float64(batches), 1)
	if p.avg == 0 {
		p.avg = a
	} else {
		p.avg += (a - p.avg) / 4
	}
}

// done settles what add counted.
func (p *pending) done(entries int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.entries -= entries
	if p.changed != nil {
		close(p.changed)
		p.changed = make(chan struct{})
	}
}

func (p *pending) now() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.entries
}

// streamKey names one (host, CPU) stream.
type streamKey struct {
	host string
	cpu  uint16
}

// streams are the streams p's deltas belong to.
func (p *Proposal) streams() []streamKey {
	out := make([]streamKey, 0, len(p.Deltas))
	for _, d := range p.Deltas {
		out = append(out, streamKey{d.Batch.Host, d.Batch.CPU})
		for _, r := range d.Folded {
			out = append(out, streamKey{d.Batch.Host, r.CPU})
		}
	}
	return out
}

// inFlight tracks the proposals waiting for their commit and the streams
// they carry.
type inFlight struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced whenever a proposal leaves
	n       int
	busy    map[streamKey]int
}

// enter waits until fewer than limit proposals are in flight and none
// carries one of streams, then counts one more carrying them. It reports
// false, counting nothing, if ctx ends first.
func (f *inFlight) enter(ctx context.Context, streams []streamKey, limit int) bool {
	for {
		ok, ch := f.try(streams, limit)
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// tryEnter is enter without the wait: false, counting nothing, if it
// would wait.
func (f *inFlight) tryEnter(streams []streamKey, limit int) bool {
	ok, _ := f.try(streams, limit)
	return ok
}

// try counts one more proposal carrying streams if it may go now; if
// not, it returns the channel closed at the next change.
func (f *inFlight) try(streams []streamKey, limit int) (bool, chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.busy == nil {
		f.busy = map[streamKey]int{}
		f.changed = make(chan struct{})
	}
	free := f.n < limit
	for _, s := range streams {
		if !free {
			break
		}
		free = f.busy[s] == 0
	}
	if !free {
		return false, f.changed
	}
	f.n++
	for _, s := range streams {
		f.busy[s]++
	}
	return true, nil
}

// leave ends what enter counted.
func (f *inFlight) leave(streams []streamKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	for _, s := range streams {
		if f.busy[s]--; f.busy[s] == 0 {
			delete(f.busy, s)
		}
	}
	close(f.changed)
	f.changed = make(chan struct{})
}

// propose commits one proposal and settles its deliveries by outcome.
func (a *Aggregator) propose(ctx context.Context, p Proposal, ds []delivery.Batch) {
	images := a.imagesFor(ctx, p.Deltas)
	a.proposals.Add(1)
	a.entriesOut.Add(uint64(p.Entries()))
	start := time.Now()
	outcomes, err := a.coord.Propose(ctx, p.Deltas, images)
	a.proposeLat.Observe(time.Since(start).Seconds())
	if err == nil && len(outcomes) != len(p.Deltas) {
		err = fmt.Errorf("coordinator answered %d outcomes for %d deltas", len(outcomes), len(p.Deltas))
	}
	if err != nil {
		// Not committed as far as we know: hand everything back. If it
		// was committed after all, the redelivery is a Duplicate.
		if ctx.Err() == nil {
			a.cfg.logf("aggregator: propose %d deltas: %v", len(p.Deltas), err)
		}
		for _, m := range p.Members {
			a.nakAll(ds, m, a.cfg.GapDelay)
		}
		return
	}
	a.knownMu.Lock()
	for _, im := range images {
		a.known[im.Key] = true
	}
	a.knownMu.Unlock()
	for k, o := range outcomes {
		a.outcomes[outcomeIndex(o)].Add(1)
		switch o {
		case storage.Applied, storage.Duplicate:
			var prev *wire.Batch // members are in (CPU, seq) order; twins are adjacent
			for _, i := range p.Members[k] {
				if b := ds[i].Batch(); o == storage.Applied && (prev == nil || b.CPU != prev.CPU || b.Seq != prev.Seq) {
					a.samples.Add(b.Total())
					prev = b
				}
				if err := ds[i].Ack(ctx); err != nil {
					a.cfg.logf("aggregator: ack: %v (the batch will be redelivered and found a duplicate)", err)
					continue
				}
				a.acked.Add(1)
			}
		case storage.Gap:
			a.gaps.Add(uint64(len(p.Members[k])))
			a.nakAll(ds, p.Members[k], a.cfg.GapDelay)
		case storage.Overlap:
			// Part of the run is stored: propose its batches one by one,
			// and the state machine sorts stored from new.
			a.overlaps.Add(1)
			a.propose(ctx, singles(p.Members[k], ds), ds)
		case storage.Unfold:
			bs := make([]*wire.Batch, len(ds))
			for i := range ds {
				bs[i] = ds[i].Batch()
			}
			for _, q := range MergeStreams(bs, p.Members[k], a.cfg.Limits) {
				a.propose(ctx, q, ds)
			}
		default:
			a.cfg.logf("aggregator: unexpected outcome %v; handing the batches back", o)
			a.nakAll(ds, p.Members[k], a.cfg.GapDelay)
		}
	}
}

func (a *Aggregator) nakAll(ds []delivery.Batch, members []int, delay time.Duration) {
	for _, i := range members {
		if err := ds[i].Nak(delay); err != nil {
			a.cfg.logf("aggregator: nak: %v (it will be redelivered when its ack wait ends)", err)
		}
	}
}

// imagesFor returns the records of images the deltas name that this
// aggregator has not committed yet. An image its node has not uploaded
// yet is left out: its batches are stored regardless, and the record
// follows with a later proposal.
func (a *Aggregator) imagesFor(ctx context.Context, deltas []storage.Delta) []*wire.ImageRecord {
	if a.images == nil {
		return nil
	}
	var out []*wire.ImageRecord
	seen := map[wire.ImageKey]bool{}
	for _, d := range deltas {
		for i := range d.Batch.Entries {
			k := d.Batch.Entries[i].Image
			if seen[k] || a.isKnown(k) {
				continue
			}
			seen[k] = true
			r, err := a.images.FetchImage(ctx, k)
			if err != nil {
				a.cfg.logf("aggregator: image %v: %v (will try again)", k, err)
				continue
			}
			out = append(out, r)
		}
	}
	return out
}

func (a *Aggregator) isKnown(k wire.ImageKey) bool {
	a.knownMu.Lock()
	defer a.knownMu.Unlock()
	return a.known[k]
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// singles is a proposal of one delta per batch of members (which are in
// seq order, twins adjacent), so that none of its deltas can overlap what
// is stored: each is either stored already or not at all.
func singles(members []int, ds []delivery.Batch) Proposal {
	var q Proposal
	for _, i := range members {
		if n := len(q.Deltas); n > 0 && q.Deltas[n-1].Batch.Seq == ds[i].Batch().Seq {
			q.Members[n-1] = append(q.Members[n-1], i) // a twin
			continue
		}
		q.Deltas = append(q.Deltas, storage.Delta{Batch: ds[i].Batch()})
		q.Members = append(q.Members, []int{i})
	}
	return q
}
