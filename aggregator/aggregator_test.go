package aggregator

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dcpi/internal/testrand"
	"dcpi/storage"
	"dcpi/wire"
	"dcpi/wire/wiretest"
)

func testRand(t testing.TB) *rand.Rand { return testrand.New(t) }

// streamBatch is batch seq of stream (host, cpu) in epoch, over four
// images, with the daemon's running accounting (delivered, accounted) that
// a delta must carry from its last batch.
func streamBatch(r *rand.Rand, host string, cpu uint16, seq, epoch uint64) *wire.Batch {
	b := wiretest.RandBatch(r, wiretest.Options{Host: host, CPU: cpu, Seq: seq, Epoch: epoch,
		MaxEntries: 29, Images: wiretest.Keys(4), Events: 2, Offsets: 50, MaxCount: 9})
	b.Delivered, b.Accounted = seq*100, seq*90
	return b
}

// openTestDB opens a database in t's temporary directory, closed when t
// ends.
func openTestDB(t *testing.T) *storage.DB {
	t.Helper()
	db, err := storage.Open(filepath.Join(t.TempDir(), "db"), storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// sum is what a set of batches holds: samples (entries and unknown) and drops.
func sum(bs []*wire.Batch) (samples, drops uint64) {
	for _, b := range bs {
		samples += b.Total()
		for _, n := range b.Drops {
			drops += n
		}
	}
	return
}

func TestMergeFoldsConsecutiveRuns(t *testing.T) {
	r := testRand(t)
	var in []*wire.Batch
	for seq := uint64(1); seq <= 5; seq++ {
		in = append(in, streamBatch(r, "h1", 0, seq, 1))
	}
	in = append(in, streamBatch(r, "h1", 0, 7, 1))        // a gap: new delta
	in = append(in, streamBatch(r, "h1", 0, 8, 2))        // new epoch: new delta
	in = append(in, streamBatch(r, "h2", 0, 1, 1), in[2]) // another host; a twin of seq 3
	in = append(in, streamBatch(r, "h1", 1, 4, 1))        // another CPU
	r.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
	before := make([]*wire.Batch, len(in))
	for i, b := range in {
		before[i] = wiretest.Clone(b)
	}

	ps := Merge(in, DefaultLimits())
	if len(ps) != 1 {
		t.Fatalf("%d proposals, want 1", len(ps))
	}
	type span struct {
		host       string
		cpu        uint16
		first, end uint64
		members    int
	}
	var got []span
	var samples, drops uint64
	for k, d := range ps[0].Deltas {
		if err := storage.CheckDelta(d); err != nil {
			t.Fatal(err)
		}
		got = append(got, span{d.Batch.Host, d.Batch.CPU, d.Batch.Seq, d.Last, len(ps[0].Members[k])})
		s, dr := sum([]*wire.Batch{d.Batch})
		samples, drops = samples+s, drops+dr
	}
	for _, d := range ps[0].Deltas {
		last := max(d.Last, d.Batch.Seq)
		if d.Batch.Delivered != last*100 || d.Batch.Accounted != last*90 {
			t.Errorf("delta [%d, %d] carries accounting (%d, %d), want its last batch's", d.Batch.Seq, last, d.Batch.Delivered, d.Batch.Accounted)
		}
	}
	want := []span{{"h1", 0, 1, 5, 6}, {"h1", 0, 7, 7, 1}, {"h1", 0, 8, 8, 1}, {"h1", 1, 4, 4, 1}, {"h2", 0, 1, 1, 1}}
	if !slices.Equal(got, want) {
		t.Fatalf("deltas %+v\nwant %+v", got, want)
	}
	// The twin of seq 3 is acked with its delta but counted once.
	twin := indexOfTwin(in)
	ws, wd := sum(append(slices.Clone(in[:twin]), in[twin+1:]...))
	if samples != ws || drops != wd {
		t.Fatalf("deltas hold %d samples, %d drops; batches %d, %d", samples, drops, ws, wd)
	}
	for i, b := range in {
		if !wiretest.BatchEqual(before[i], b) {
			t.Fatalf("Merge modified its input batch %d", i)
		}
	}
}

// indexOfTwin returns the index of the second occurrence of a repeated pointer.
func indexOfTwin(in []*wire.Batch) int {
	seen := map[*wire.Batch]bool{}
	for i, b := range in {
		if seen[b] {
			return i
		}
		seen[b] = true
	}
	return -1
}

func TestMergeLimits(t *testing.T) {
	r := testRand(t)
	var in []*wire.Batch
	for seq := uint64(1); seq <= 40; seq++ {
		in = append(in, streamBatch(r, "h", 0, seq, 1))
	}
	lim := Limits{MaxDeltaEntries: 50, MaxProposalEntries: 120}
	ps := Merge(in, lim)
	next := uint64(1)
	for _, p := range ps {
		if p.Entries() > lim.MaxProposalEntries && len(p.Deltas) > 1 {
			t.Fatalf("proposal of %d entries over the limit %d", p.Entries(), lim.MaxProposalEntries)
		}
		for _, d := range p.Deltas {
			if d.Batch.Seq != next {
				t.Fatalf("delta starts at %d, want %d", d.Batch.Seq, next)
			}
			next = d.Last + 1
		}
	}
	if next != 41 || len(ps) < 3 {
		t.Fatalf("deltas end at %d in %d proposals", next-1, len(ps))
	}
}

// flakyProposer commits to a real database, but sometimes fails before
// the commit and sometimes loses the answer after it. It applies one
// proposal at a time, as the Raft log orders those in flight.
type flakyProposer struct {
	mu sync.Mutex
	r  *rand.Rand
	db *storage.DB
}

// newFlakyProposer draws its own generator from r, which the source
// uses under its own lock.
func newFlakyProposer(r *rand.Rand, db *storage.DB) *flakyProposer {
	return &flakyProposer{r: rand.New(rand.NewPCG(r.Uint64(), r.Uint64())), db: db}
}

func (p *flakyProposer) Propose(_ context.Context, ds []storage.Delta, _ []*wire.ImageRecord) ([]storage.Outcome, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch p.r.IntN(10) {
	case 0:
		return nil, errors.New("leader lost before commit")
	case 1:
		if _, err := p.db.ApplyDeltas(ds); err != nil {
			return nil, err
		}
		return nil, errors.New("timeout after commit")
	}
	return p.db.ApplyDeltas(ds)
}

// TestAggregatorConservesUnderRedelivery runs the loop against a stream
// that delivers out of order, redelivers, loses acks and carries malformed
// messages, and a proposer that fails before and after commits, and
// requires the database to hold every batch exactly once.
func TestAggregatorConservesUnderRedelivery(t *testing.T) {
	r := testRand(t)
	db := openTestDB(t)
	s := &MemSource{Rand: r, LoseAckOneIn: 20}
	var all []*wire.Batch
	for h := range 3 {
		for cpu := range uint16(2) {
			epoch := uint64(1)
			for seq := uint64(1); seq <= 30; seq++ {
				if r.IntN(10) == 0 {
					epoch++
				}
				b := streamBatch(r, fmt.Sprintf("host%d", h), cpu, seq, epoch)
				all = append(all, b)
				s.Add(b)
				if r.IntN(8) == 0 { // published twice
					s.Add(b)
				}
			}
		}
	}
	for range 5 {
		s.AddInvalid(errors.New("malformed batch: bad magic"))
	}
	a := New(Config{Limits: Limits{MaxDeltaEntries: 60, MaxProposalEntries: 150}}, s, newFlakyProposer(r, db), nil)
	ctx := context.Background()
	for round := 0; !s.Empty(); round++ {
		if round > 2000 {
			t.Fatalf("stream not drained after %d rounds", round)
		}
		ds, _ := s.Fetch(ctx, 1+r.IntN(40), 0)
		a.Handle(ctx, ds)
	}
	wantSamples, wantDrops := sum(all)
	samples, unknown, drops, err := db.Totals(storage.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var gotDrops uint64
	for _, n := range drops {
		gotDrops += n
	}
	if samples+unknown != wantSamples || gotDrops != wantDrops {
		t.Fatalf("stored %d samples and %d drops; the batches hold %d and %d", samples+unknown, gotDrops, wantSamples, wantDrops)
	}
	st := a.Stats()
	if _, terms := s.Settled(); st.Rejected != 5 || terms != 5 {
		t.Fatalf("%d rejected, %d terminated; want the 5 malformed", st.Rejected, terms)
	}
	// A commit whose answer was lost is redelivered and found a
	// duplicate, so the aggregator's own count can only fall short.
	if st.Samples > wantSamples || st.Samples == 0 {
		t.Fatalf("aggregator counted %d samples newly applied of %d", st.Samples, wantSamples)
	}
	t.Logf("%d batches in %d proposals; %d gaps, %d overlaps; entries %d in, %d out",
		len(all), st.Proposals, st.Gaps, st.Overlaps, st.EntriesIn, st.EntriesOut)
}

// TestOverlapSplitsIntoSingles: a run whose first part is stored comes back
// Overlap and is proposed again batch by batch, even when merging would
// fold the run into one delta again (a batch without entries before one
// with a single entry once made this recurse without end).
func TestOverlapSplitsIntoSingles(t *testing.T) {
	db := openTestDB(t)
	mk := func(seq uint64, entries []wire.Entry) *wire.Batch {
		b := &wire.Batch{Version: wire.Version, Host: "h", Seq: seq, Epoch: 1, Entries: entries}
		b.Normalize()
		return b
	}
	five := mk(5, nil)
	six := mk(6, []wire.Entry{{Image: wiretest.Key(1), Offset: 8, Count: 3}})
	var stored []*wire.Batch
	for seq := uint64(1); seq <= 5; seq++ {
		b := mk(seq, []wire.Entry{{Image: wiretest.Key(1), Offset: 4, Count: 1}})
		if seq == 5 {
			b = five
		}
		stored = append(stored, b)
	}
	if _, err := db.ApplyBatches(stored); err != nil {
		t.Fatal(err)
	}
	r := testRand(t)
	s := &MemSource{Rand: r, LoseAckOneIn: 20}
	s.Add(five)
	s.Add(six)
	a := New(Config{Limits: Limits{MaxDeltaEntries: 1, MaxProposalEntries: 100}}, s, newFlakyProposer(r, db), nil)
	for round := 0; !s.Empty(); round++ {
		if round > 100 {
			t.Fatal("batches never settled")
		}
		ds, _ := s.Fetch(context.Background(), 10, 0)
		a.Handle(context.Background(), ds)
	}
	if seq, _ := db.Applied("h", 0); seq != 6 {
		t.Fatalf("applied through %d, want 6", seq)
	}
	if a.Stats().Overlaps == 0 {
		t.Fatal("the test did not produce an overlap")
	}
}

// pipelineProposer commits to a real database one proposal at a time, as
// the Raft log orders them, but holds the first proposals until want of
// them wait together: with fewer in flight it never lets go. It fails the
// test if two proposals in flight carry the same stream.
type pipelineProposer struct {
	t       *testing.T
	db      *storage.DB
	want    int
	mu      sync.Mutex
	waiting int
	open    chan struct{} // closed when want proposals waited together
	busy    map[streamKey]bool
}

func (p *pipelineProposer) Propose(ctx context.Context, ds []storage.Delta, _ []*wire.ImageRecord) ([]storage.Outcome, error) {
	p.mu.Lock()
	for _, d := range ds {
		k := streamKey{d.Batch.Host, d.Batch.CPU}
		if p.busy[k] {
			p.t.Errorf("two proposals in flight carry %s CPU %d", k.host, k.cpu)
		}
		p.busy[k] = true
	}
	if p.waiting++; p.waiting == p.want {
		close(p.open)
	}
	p.mu.Unlock()
	select {
	case <-p.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range ds {
		delete(p.busy, streamKey{d.Batch.Host, d.Batch.CPU})
	}
	return p.db.ApplyDeltas(ds)
}

// runUntilEmpty runs a until s is empty or ctx ends.
func runUntilEmpty(ctx context.Context, a *Aggregator, s *MemSource) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	for !s.Empty() && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
}

// drainAndCheck runs a until s is empty (failing t after 2 minutes) and
// checks that db holds exactly what all holds.
func drainAndCheck(t *testing.T, a *Aggregator, s *MemSource, db *storage.DB, all []*wire.Batch) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runUntilEmpty(ctx, a, s)
	if !s.Empty() {
		t.Fatal("the stream did not drain")
	}
	checkStored(t, db, all)
}

// checkStored fails t unless db holds exactly what the batches hold.
func checkStored(t *testing.T, db *storage.DB, all []*wire.Batch) {
	t.Helper()
	wantSamples, wantDrops := sum(all)
	samples, unknown, drops, err := db.Totals(storage.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var gotDrops uint64
	for _, n := range drops {
		gotDrops += n
	}
	if samples+unknown != wantSamples || gotDrops != wantDrops {
		t.Fatalf("stored %d samples and %d drops; the batches hold %d and %d", samples+unknown, gotDrops, wantSamples, wantDrops)
	}
}

// TestRunKeepsProposalsInFlight: Run starts proposals while others wait
// for their commit (the proposer releases nothing until three wait at
// once), never two carrying one stream, so no delta overtakes its
// predecessor (no Gap), and everything is stored exactly once.
func TestRunKeepsProposalsInFlight(t *testing.T) {
	r := testRand(t)
	db := openTestDB(t)
	// In order, the hosts interleaved: each fetch of three is one batch
	// of each host, and the next fetch the same streams again.
	s := &MemSource{Exclusive: true}
	var all []*wire.Batch
	for seq := uint64(1); seq <= 10; seq++ {
		for h := range 3 {
			b := streamBatch(r, fmt.Sprintf("host%d", h), 0, seq, 1)
			all = append(all, b)
			s.Add(b)
		}
	}
	const inFlight = 3
	p := &pipelineProposer{t: t, db: db, want: inFlight, open: make(chan struct{}), busy: map[streamKey]bool{}}
	// A proposal a delta: three deltas of a fetch are three proposals.
	a := New(Config{FetchMax: 3, InFlight: inFlight, Limits: Limits{MaxDeltaEntries: 1, MaxProposalEntries: 1}}, s, p, nil)
	// A wrong implementation (one proposal at a time) waits here forever;
	// the deadline only turns that into a failure.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runUntilEmpty(ctx, a, s)
	select {
	case <-p.open:
	default:
		t.Fatalf("never %d proposals in flight at once", inFlight)
	}
	if !s.Empty() {
		t.Fatal("the stream did not drain")
	}
	checkStored(t, db, all)
	if st := a.Stats(); st.Gaps != 0 || st.Proposals != 30 {
		t.Fatalf("%d proposals, %d gaps; want 30 proposals in stream order, no gap", st.Proposals, st.Gaps)
	}
}

// TestRunConservesUnderRedelivery is TestAggregatorConservesUnderRedelivery
// through Run, proposals in flight together: out of order, redelivered,
// acks lost, a proposer failing before and after commits.
func TestRunConservesUnderRedelivery(t *testing.T) {
	r := testRand(t)
	db := openTestDB(t)
	s := &MemSource{Rand: r, LoseAckOneIn: 20, Exclusive: true}
	var all []*wire.Batch
	for h := range 6 {
		for cpu := range uint16(2) {
			for seq := uint64(1); seq <= 15; seq++ {
				b := streamBatch(r, fmt.Sprintf("host%d", h), cpu, seq, 1)
				all = append(all, b)
				s.Add(b)
			}
		}
	}
	p := newFlakyProposer(r, db)
	a := New(Config{FetchMax: 9, InFlight: 4, Limits: Limits{MaxDeltaEntries: 60, MaxProposalEntries: 80}}, s, p, nil)
	drainAndCheck(t, a, s, db, all)
}

// slowProposer commits to a database after a pause, recording the
// aggregator's pending entries at each call.
type slowProposer struct {
	db      *storage.DB
	a       atomic.Pointer[Aggregator]
	maxSeen atomic.Int64
}

func (p *slowProposer) Propose(ctx context.Context, ds []storage.Delta, _ []*wire.ImageRecord) ([]storage.Outcome, error) {
	if a := p.a.Load(); a != nil {
		n := int64(a.Stats().Pending)
		for m := p.maxSeen.Load(); n > m && !p.maxSeen.CompareAndSwap(m, n); m = p.maxSeen.Load() {
		}
	}
	time.Sleep(time.Millisecond)
	return p.db.ApplyDeltas(ds)
}

// TestRunBoundsPending: with a backlog of 200 batches and room for
// three, Run never holds more than MaxPendingEntries and one batch
// fetched and unsettled (unbounded, a fetch alone would hold 64
// batches), stores everything, and ends with nothing pending.
func TestRunBoundsPending(t *testing.T) {
	r := testRand(t)
	db := openTestDB(t)
	s := &MemSource{Exclusive: true}
	var all []*wire.Batch
	// Batches of one size, as a fleet's of one window nearly are: the
	// fetch size follows the average.
	const biggest = 20
	for i := range 200 {
		b := streamBatch(r, fmt.Sprintf("host%d", i%20), 0, uint64(i/20)+1, 1)
		for deltaSize(b) != biggest {
			b = streamBatch(r, fmt.Sprintf("host%d", i%20), 0, uint64(i/20)+1, 1)
		}
		all = append(all, b)
		s.Add(b)
	}
	limit := 3 * biggest
	p := &slowProposer{db: db}
	a := New(Config{FetchMax: 64, MaxPendingEntries: limit, Limits: Limits{MaxDeltaEntries: biggest, MaxProposalEntries: biggest}}, s, p, nil)
	p.a.Store(a)
	drainAndCheck(t, a, s, db, all)
	if got := p.maxSeen.Load(); got > int64(limit+biggest) || got == 0 {
		t.Errorf("up to %d entries pending, want at most the bound %d and one batch (%d)", got, limit, biggest)
	}
	if st := a.Stats(); st.Pending != 0 {
		t.Errorf("%d entries pending after the stream drained", st.Pending)
	}
}

// TestDispatchPassesAWaitingStream: a fetch whose first proposal carries a
// stream still in flight from the fetch before starts its other streams'
// proposals meanwhile. The proposer lets nothing commit until three wait
// together — host0's first batch and hosts 1 and 2 of the second fetch —
// so a dispatch that waited for host0 before starting the others would
// never get there.
func TestDispatchPassesAWaitingStream(t *testing.T) {
	r := testRand(t)
	db := openTestDB(t)
	s := &MemSource{Exclusive: true}
	first := streamBatch(r, "host0", 0, 1, 1)
	s.Add(first)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ds1, _ := s.Fetch(ctx, 10, time.Second)
	all := []*wire.Batch{first, streamBatch(r, "host0", 0, 2, 1), streamBatch(r, "host1", 0, 1, 1), streamBatch(r, "host2", 0, 1, 1)}
	for _, b := range all[1:] {
		s.Add(b)
	}
	ds2, _ := s.Fetch(ctx, 10, time.Second)
	if len(ds1) != 1 || len(ds2) != 3 {
		t.Fatalf("fetches of %d and %d batches, want 1 and 3", len(ds1), len(ds2))
	}
	p := &pipelineProposer{t: t, db: db, want: 3, open: make(chan struct{}), busy: map[streamKey]bool{}}
	a := New(Config{InFlight: 3, Limits: Limits{MaxDeltaEntries: 1, MaxProposalEntries: 1}}, s, p, nil)
	var wg sync.WaitGroup
	a.dispatch(ctx, ds1, &wg)
	a.dispatch(ctx, ds2, &wg)
	wg.Wait()
	select {
	case <-p.open:
	default:
		t.Fatal("never 3 proposals in flight: the second fetch waited for host0 before starting hosts 1 and 2")
	}
	if !s.Empty() {
		t.Fatal("not every batch was settled")
	}
	checkStored(t, db, all)
	if st := a.Stats(); st.Gaps != 0 {
		t.Errorf("%d gaps: host0's second batch overtook its first", st.Gaps)
	}
}
