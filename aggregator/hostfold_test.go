package aggregator

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dcpi/storage"
	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// cpuBatch is streamBatch with accounting that differs between CPUs too,
// so a run's accounting taken from another stream shows.
func cpuBatch(r *rand.Rand, host string, cpu uint16, seq, epoch uint64) *wire.Batch {
	b := streamBatch(r, host, cpu, seq, epoch)
	b.Delivered, b.Accounted = delivered(cpu, seq), delivered(cpu, seq)-seq
	return b
}

func delivered(cpu uint16, seq uint64) uint64 { return seq*100 + uint64(cpu) }

// TestMergeHostFoldShape: with FoldHosts, a host's streams' deltas of one
// round and epoch become one fold, CPUs ascending, each run with its own
// Seqs and accounting; a batch with address lists, another epoch, another
// host stay out; every batch is a member of exactly one delta.
func TestMergeHostFoldShape(t *testing.T) {
	r := testRand(t)
	var in []*wire.Batch
	for cpu := range uint16(3) {
		for seq := uint64(1); seq <= 3; seq++ {
			in = append(in, cpuBatch(r, "h1", cpu, seq, 1))
		}
	}
	in = append(in, cpuBatch(r, "h1", 1, 4, 2)) // cpu 1's second delta, epoch 2
	addrs := cpuBatch(r, "h1", 3, 1, 1)
	wiretest.AddMe(r, addrs, wiretest.Keys(4), 8, 4)
	wiretest.AddMeV2(r, addrs)
	for len(addrs.MeAddrs) == 0 {
		addrs.MeAddrs = []wire.MeAddrList{{Image: wiretest.Key(0), Offset: 4}}
		addrs.MeAddrs[0].List.N, addrs.MeAddrs[0].List.Entries = 1, nil
	}
	in = append(in, addrs, cpuBatch(r, "h2", 0, 1, 1), in[4]) // and a twin of h1/1 seq 2
	r.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
	before := make([]*wire.Batch, len(in))
	for i, b := range in {
		before[i] = wiretest.Clone(b)
	}

	lim := DefaultLimits()
	lim.FoldHosts = true
	ps := Merge(in, lim)
	if len(ps) != 1 {
		t.Fatalf("%d proposals", len(ps))
	}
	p := ps[0]
	type shape struct {
		host        string
		cpu         uint16
		first, last uint64
		epoch       uint64
		folded      string
		members     int
	}
	var got []shape
	seen := map[int]int{}
	for k, d := range p.Deltas {
		if err := storage.CheckDelta(d); err != nil {
			t.Fatalf("delta %d: %v", k, err)
		}
		var f []string
		for _, run := range d.Folded {
			f = append(f, fmt.Sprintf("%d:%d-%d", run.CPU, run.First, run.Last))
			if run.Delivered != delivered(run.CPU, run.Last) || run.Accounted != run.Delivered-run.Last {
				t.Errorf("run %+v: not its last batch's accounting", run)
			}
		}
		if d.Batch.Delivered != delivered(d.Batch.CPU, d.Last) || d.Batch.Accounted != d.Batch.Delivered-d.Last {
			t.Errorf("delta %d: header accounting (%d, %d) is not its first run's last batch's", k, d.Batch.Delivered, d.Batch.Accounted)
		}
		got = append(got, shape{d.Batch.Host, d.Batch.CPU, d.Batch.Seq, d.Last, d.Batch.Epoch, strings.Join(f, " "), len(p.Members[k])})
		for _, i := range p.Members[k] {
			seen[i]++
		}
	}
	want := []shape{
		{"h1", 3, 1, 1, 1, "", 1},             // unfoldable: out as it comes
		{"h1", 0, 1, 3, 1, "1:1-3 2:1-3", 10}, // cpu 1's seq 2 twice
		{"h1", 1, 4, 4, 2, "", 1},
		{"h2", 0, 1, 1, 1, "", 1},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("deltas\n %+v\nwant\n %+v", got, want)
	}
	for i := range in {
		if seen[i] != 1 {
			t.Fatalf("batch %d is a member of %d deltas", i, seen[i])
		}
	}
	// The fold holds what its batches hold, twins once.
	var fb []*wire.Batch
	for _, i := range p.Members[1] {
		if !slices.Contains(fb, in[i]) {
			fb = append(fb, in[i])
		}
	}
	ws, wd := sum(fb)
	if s, d := sum([]*wire.Batch{p.Deltas[1].Batch}); s != ws || d != wd {
		t.Fatalf("fold holds %d samples, %d drops; its batches %d, %d", s, d, ws, wd)
	}
	for i, b := range in {
		if !wiretest.BatchEqual(before[i], b) {
			t.Fatalf("Merge modified its input batch %d", i)
		}
	}

	// MaxProposalEntries bounds a fold's merged entries.
	lim.MaxProposalEntries = len(p.Deltas[1].Batch.Entries) - 1
	lim.MaxDeltaEntries = min(lim.MaxDeltaEntries, lim.MaxProposalEntries)
	for _, p := range Merge(in, lim) {
		for _, d := range p.Deltas {
			if len(d.Folded) > 0 && foldSize(d.Batch) > lim.MaxProposalEntries {
				t.Fatalf("a fold of %d entries, over the limit %d", foldSize(d.Batch), lim.MaxProposalEntries)
			}
		}
	}
}

// proposeLikeAggregator commits proposals to db as the aggregator settles
// them — Applied and Duplicate are done, Overlap goes again one batch per
// delta, Unfold goes again as per-stream deltas (MergeStreams), Gap waits
// — and returns the batches settled and the outcomes seen.
func proposeLikeAggregator(t *testing.T, db *storage.DB, in []*wire.Batch, ps []Proposal, lim Limits, seen map[storage.Outcome]int) (settled []int) {
	t.Helper()
	for len(ps) > 0 {
		p := ps[0]
		ps = ps[1:]
		out, err := db.ApplyDeltas(p.Deltas)
		if err != nil {
			t.Fatal(err)
		}
		for k, o := range out {
			seen[o]++
			switch o {
			case storage.Applied, storage.Duplicate:
				settled = append(settled, p.Members[k]...)
			case storage.Overlap:
				var q Proposal
				for _, i := range p.Members[k] {
					q.Deltas = append(q.Deltas, storage.Delta{Batch: in[i]})
					q.Members = append(q.Members, []int{i})
				}
				ps = append(ps, q)
			case storage.Unfold:
				if len(p.Deltas[k].Folded) == 0 {
					t.Fatalf("Unfold for a delta that is no fold")
				}
				ps = append(ps, MergeStreams(in, p.Members[k], lim)...)
			case storage.Gap:
			default:
				t.Fatalf("outcome %v", o)
			}
		}
	}
	return settled
}

// dumpQueries is what queries read of db: records, totals, stack totals,
// ProfileMe rows and the streams' states.
func dumpQueries(t *testing.T, db *storage.DB, streams map[string]bool) string {
	t.Helper()
	var b strings.Builder
	err := db.Records(storage.Query{}, func(r storage.Record) error {
		fmt.Fprintf(&b, "rec %d %d %v %d %s %d = %d\n", r.Epoch, r.Event, r.Image, r.Offset, r.Host, r.PID, r.Count)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s, u, d, err := db.Totals(storage.Query{})
	if err != nil {
		t.Fatal(err)
	}
	ss, sd, err := db.StackTotals(storage.Query{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "totals %d %d %v stacks %d %v\n", s, u, d, ss, sd)
	err = db.MeProfile(t.Context(), storage.Query{}, func(r *storage.MeRow) error {
		fmt.Fprintf(&b, "me %v %d %s %v\n", r.Image, r.Offset, r.Host, r.Counts)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range streams {
			if !yield(k) {
				return
			}
		}
	}) {
		var host string
		var cpu uint16
		fmt.Sscanf(k, "%s %d", &host, &cpu)
		st, err := db.Stream(host, cpu)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "stream %s %+v\n", k, st)
	}
	return b.String()
}

// TestHostFoldsStoreWhatStreamsStore delivers several hosts' streams in
// fetches of random batches — out of order, with redeliveries of stored
// batches beside new ones (so some folds come back Unfold) — merged with
// host folds and settled as the aggregator does, and requires the
// database to read exactly as one given every batch in per-stream
// deltas: counts, stacks, ProfileMe sums, drops, Seqs and accounting.
func TestHostFoldsStoreWhatStreamsStore(t *testing.T) {
	r := testRand(t)
	open := func() *storage.DB {
		db, err := storage.Open(filepath.Join(t.TempDir(), "db"), storage.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	folded, reference := open(), open()
	var all []*wire.Batch
	streams := map[string]bool{}
	for h := range 3 {
		host := fmt.Sprintf("host%d", h)
		for _, cpu := range []uint16{0, 1, 2, 3, wire.AllCPUs} {
			streams[fmt.Sprintf("%s %d", host, cpu)] = true
			epoch := uint64(1)
			for seq := uint64(1); seq <= 12; seq++ {
				if r.IntN(8) == 0 {
					epoch++
				}
				b := cpuBatch(r, host, cpu, seq, epoch)
				if r.IntN(4) == 0 {
					b = wiretest.RandBatch(r, wiretest.Options{Host: host, CPU: cpu, Seq: seq, Epoch: epoch,
						MaxEntries: 29, Images: wiretest.Keys(4), Events: 2, Offsets: 50, MaxCount: 9, MaxStacks: 6})
					b.Delivered, b.Accounted = delivered(cpu, seq), delivered(cpu, seq)-seq
				}
				if r.IntN(5) == 0 {
					wiretest.AddMe(r, b, wiretest.Keys(4), 20, 5)
					wiretest.AddMeV2(r, b)
					b.MeAddrs = nil // see dumpQueries: lists merge by a randomized rule
				}
				all = append(all, b)
			}
		}
	}
	// The reference: every stream's batches as its per-stream deltas.
	lim := Limits{MaxDeltaEntries: 400, MaxProposalEntries: 2000}
	for _, p := range Merge(all, lim) {
		if out, err := reference.ApplyDeltas(p.Deltas); err != nil || slices.ContainsFunc(out, func(o storage.Outcome) bool { return o != storage.Applied }) {
			t.Fatalf("reference: %v %v", out, err)
		}
	}

	lim.FoldHosts = true
	seen := map[storage.Outcome]int{}
	pending := make([]bool, len(all))
	for i := range pending {
		pending[i] = true
	}
	done := make([]bool, len(all))
	for round := 0; slices.Contains(pending, true); round++ {
		if round > 1000 {
			t.Fatal("batches never settle")
		}
		// A fetch: pending batches in random order, most of them,
		// and some stored ones again.
		var fetch []*wire.Batch
		for i, b := range all {
			if pending[i] && r.IntN(3) != 0 || done[i] && r.IntN(15) == 0 {
				fetch = append(fetch, b)
			}
		}
		r.Shuffle(len(fetch), func(i, j int) { fetch[i], fetch[j] = fetch[j], fetch[i] })
		for _, i := range proposeLikeAggregator(t, folded, fetch, Merge(fetch, lim), lim, seen) {
			k := slices.Index(all, fetch[i])
			pending[k], done[k] = false, true
		}
	}
	if seen[storage.Unfold] == 0 || seen[storage.Applied] == 0 {
		t.Fatalf("outcomes %v: want some folds unfolded", seen)
	}
	if got, want := dumpQueries(t, folded, streams), dumpQueries(t, reference, streams); got != want {
		t.Fatalf("host folds stored what per-stream deltas do not:\n%s\nwant\n%s", got, want)
	}
	t.Logf("outcomes %v", seen)
}

// TestMergeStreamsMembers: MergeStreams's members are indices into the
// batches given, and it never folds.
func TestMergeStreamsMembers(t *testing.T) {
	r := testRand(t)
	var in []*wire.Batch
	for cpu := range uint16(3) {
		for seq := uint64(1); seq <= 2; seq++ {
			in = append(in, streamBatch(r, "h", cpu, seq, 1))
		}
	}
	members := []int{5, 4, 1, 0} // cpu 2 and cpu 0
	ps := MergeStreams(in, members, Limits{FoldHosts: true})
	var got []string
	for _, p := range ps {
		for k, d := range p.Deltas {
			if len(d.Folded) > 0 {
				t.Fatal("MergeStreams folded")
			}
			got = append(got, fmt.Sprintf("%d:%d-%d %v", d.Batch.CPU, d.Batch.Seq, d.Last, p.Members[k]))
		}
	}
	if want := []string{"0:1-2 [0 1]", "2:1-2 [4 5]"}; !slices.Equal(got, want) {
		t.Fatalf("MergeStreams = %v, want %v", got, want)
	}
}

// TestMergeFoldsLongWindowBatches: over a long publish window each CPU's
// batch holds most of the host's hot instructions, more than half a
// delta; the CPUs' batches still fold into one delta when their merged
// entries fit (a check of the summed lengths would send them apart).
func TestMergeFoldsLongWindowBatches(t *testing.T) {
	const shared, own = 600, 40 // entries every CPU has, and its own
	var in []*wire.Batch
	for cpu := range uint16(4) {
		b := &wire.Batch{Version: wire.Version, Host: "h", CPU: cpu, Seq: 1, Epoch: 1}
		for off := range uint64(shared) {
			b.Entries = append(b.Entries, wire.Entry{Image: wiretest.Key(1), Offset: 4 * off, Count: 1 + uint64(cpu)})
		}
		for off := range uint64(own) {
			b.Entries = append(b.Entries, wire.Entry{Image: wiretest.Key(2), Offset: 4 * (uint64(cpu)*own + off), Count: 1})
		}
		b.Normalize()
		in = append(in, b)
	}
	merged := shared + 4*own
	// Each CPU's batch is most of a delta (MaxDeltaEntries), as over a
	// long window: the fold still takes all four, up to a proposal.
	lim := Limits{MaxDeltaEntries: shared + own, MaxProposalEntries: merged, FoldHosts: true}
	ps := Merge(in, lim)
	if len(ps) != 1 || len(ps[0].Deltas) != 1 {
		t.Fatalf("%d proposals, the first of %d deltas; want the 4 CPUs in one fold", len(ps), len(ps[0].Deltas))
	}
	d := ps[0].Deltas[0]
	if len(d.Folded) != 3 || len(d.Batch.Entries) != merged {
		t.Fatalf("a fold of %d runs and %d entries; want 3 folded runs and %d entries", len(d.Folded), len(d.Batch.Entries), merged)
	}
	lim.MaxProposalEntries = merged - 1
	for _, p := range Merge(in, lim) {
		for _, d := range p.Deltas {
			if foldSize(d.Batch) > lim.MaxProposalEntries && len(d.Folded) > 0 {
				t.Fatalf("a fold of %d entries, over the limit %d", foldSize(d.Batch), lim.MaxProposalEntries)
			}
		}
	}
}
