package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"dcpi/internal/bincodec"
	"dcpi/internal/hotlist"
	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// retentionFill applies random batches of every kind (flat, stacks,
// ProfileMe with histories and address lists) and value records to epochs
// 1..epochs of db, over a few hosts and CPUs, and stores epoch records
// 1..epochs: sealed, an hour each from t0, except the last, which is
// closing.
func retentionFill(t *testing.T, r *rand.Rand, db *DB, epochs int, t0 time.Time) {
	t.Helper()
	images := wiretest.Keys(4)
	for _, host := range []string{"h1", "h2", "h3"} {
		vseq := uint64(0)
		for cpu := range uint16(2) {
			for seq := uint64(1); seq <= 12; seq++ {
				ep := 1 + uint64(r.IntN(epochs))
				b := wiretest.RandBatch(r, wiretest.Options{Host: host, CPU: cpu, Seq: seq, Epoch: ep, MaxEntries: 8, Images: images, MaxStacks: 3})
				if r.IntN(2) == 0 {
					wiretest.AddMe(r, b, images, 5, 6)
					wiretest.AddMeV2(r, b)
				}
				if _, err := db.ApplyBatch(b); err != nil {
					t.Fatal(err)
				}
				if r.IntN(3) == 0 {
					vseq++
					var l hotlist.List
					n := 1 + r.IntN(40)
					for range n {
						l.Offer(uint64(r.IntN(6)), r)
					}
					rec := &wire.ValuesRecord{Version: wire.ValuesVersion, Host: host, Epoch: ep, Seq: vseq, Module: []string{"loadlat", "branch"}[r.IntN(2)],
						Stats: wire.ValueStats{Interrupts: uint64(n), Completed: uint64(n), Values: uint64(n)},
						Lists: []wire.ValueList{{Image: images[r.IntN(2)], Offset: 4 * uint64(r.IntN(2)), Kind: 1, List: l}}}
					if _, err := db.ApplyValues(rec); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		for ep := 1; ep <= epochs; ep++ {
			if r.IntN(2) == 0 {
				a := EpochAck{Epoch: uint64(ep), Host: host, LastSeq: []uint64{uint64(r.IntN(20)), uint64(r.IntN(20))}, At: t0.Add(time.Duration(ep) * time.Hour)}
				if err := db.PutEpochAck(a); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for ep := 1; ep <= epochs; ep++ {
		e := Epoch{Number: uint64(ep), Start: t0.Add(time.Duration(ep-1) * time.Hour), End: t0.Add(time.Duration(ep) * time.Hour), State: EpochSealed}
		if ep == epochs {
			e.State = EpochClosing
		}
		if err := db.PutEpoch(e); err != nil {
			t.Fatal(err)
		}
	}
}

// dumpTable is every row of a table keyed by epoch: counters as numbers,
// hot lists as their N (the samples offered, which merges add), other
// records as their bytes.
func dumpTable(t *testing.T, db *DB, table byte) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	if err := db.use(false); err != nil {
		t.Fatal(err)
	}
	defer db.mu.RUnlock()
	err := db.scanRange([]byte{table}, []byte{table + 1}, func(k, v []byte) error {
		switch {
		case slices.Contains(counterEpochTables, table):
			n, err := decodeCount(k, v)
			out[string(k)] = n
			return err
		case slices.Contains(hotlistEpochTables, table):
			d := bincodec.NewDecoder(v, 0)
			l := hotlist.Decode(d)
			out[string(k)] = l.N
			return d.Err()
		}
		out[string(k)+"="+string(v)] = 1
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func dumpAll(t *testing.T, db *DB) map[byte]map[string]uint64 {
	out := map[byte]map[string]uint64{}
	for _, tb := range append(slices.Clone(epochTables), tExpired) {
		out[tb] = dumpTable(t, db, tb)
	}
	return out
}

func keyEpoch(k string) uint64 { return binary.BigEndian.Uint64([]byte(k)[offEpoch:]) }

// TestMergeEpochsKeepsEveryCount: on random databases of every table, a
// merge of a random run of sealed epochs leaves every counter and every
// hot list's sample count of the merged epoch equal to the sum of its
// parts', key by key, table by table; the epochs outside the run are
// untouched; the parts' numbers are gone; and the views' totals over the
// merged epoch are the parts' sums.
func TestMergeEpochsKeepsEveryCount(t *testing.T) {
	r := testRand(t)
	t0 := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	for round := range 6 {
		db, _ := openTest(t)
		epochs := 3 + r.IntN(5)
		retentionFill(t, r, db, epochs, t0)
		first := 1 + uint64(r.IntN(epochs-2))
		last := first + 1 + uint64(r.IntN(epochs-1-int(first)))
		var parts []uint64
		for e := first; e <= last; e++ {
			parts = append(parts, e)
		}
		before := dumpAll(t, db)
		bs, bu, bd, err := db.Totals(Query{Epochs: parts})
		if err != nil {
			t.Fatal(err)
		}
		bss, bsd, _ := db.StackTotals(Query{Epochs: parts})
		bms, bmu, bmd, _ := db.MeTotals(Query{Epochs: parts})
		_, bvs, _ := db.ValueTotals(t.Context(), ValueQuery{Epochs: parts})

		res, err := db.MergeEpochs(first, last, nil)
		if err != nil {
			t.Fatalf("round %d: merge %d..%d: %v", round, first, last, err)
		}
		if res.Parts != int(last-first+1) || res.Epoch.MergedThrough != last ||
			!res.Epoch.Start.Equal(t0.Add(time.Duration(first-1)*time.Hour)) || !res.Epoch.End.Equal(t0.Add(time.Duration(last)*time.Hour)) {
			t.Fatalf("round %d: merge %d..%d: %+v", round, first, last, res)
		}
		after := dumpAll(t, db)
		for _, tb := range append(counterEpochTables, hotlistEpochTables...) {
			want := map[string]uint64{}
			for k, n := range before[tb] {
				if e := keyEpoch(k); e >= first && e <= last {
					k = string(withEpoch([]byte(k), first))
				}
				want[k] += n
			}
			if !maps.Equal(want, after[tb]) {
				t.Fatalf("round %d: merge %d..%d: table %q: %d rows, want %d (sums of the parts)", round, first, last, tb, len(after[tb]), len(want))
			}
		}
		for _, tb := range recordEpochTables {
			for k := range after[tb] {
				if e := keyEpoch(k); e > first && e <= last {
					t.Fatalf("round %d: table %q still holds epoch %d", round, tb, e)
				}
			}
		}
		as, au, ad, _ := db.Totals(Query{Epochs: []uint64{first}})
		ass, asd, _ := db.StackTotals(Query{Epochs: []uint64{first}})
		ams, amu, amd, _ := db.MeTotals(Query{Epochs: []uint64{first}})
		_, avs, _ := db.ValueTotals(t.Context(), ValueQuery{Epochs: []uint64{first}})
		if as != bs || au != bu || !maps.Equal(ad, bd) || ass != bss || !maps.Equal(asd, bsd) ||
			ams != bms || amu != bmu || !maps.Equal(amd, bmd) || avs.Interrupts != bvs.Interrupts || avs.Values != bvs.Values {
			t.Fatalf("round %d: merged totals differ from the parts' sums", round)
		}
		if e, err := db.Epoch(first); err != nil || e.MergedThrough != last || e.State != EpochSealed {
			t.Fatalf("round %d: merged epoch %+v %v", round, e, err)
		}
		// A merged epoch merges again with the next sealed epoch.
		if last+1 < uint64(epochs) {
			res, err := db.MergeEpochs(first, last+1, nil)
			if err != nil || res.Epoch.MergedThrough != last+1 || res.Parts != 2 {
				t.Fatalf("round %d: merge again: %+v %v", round, res, err)
			}
		}
	}
}

// TestRetentionRefusesUnsealed: a merge or an expiry touching an epoch
// that is not sealed is refused and changes nothing.
func TestRetentionRefusesUnsealed(t *testing.T) {
	r := testRand(t)
	db, _ := openTest(t)
	retentionFill(t, r, db, 4, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)) // epoch 4 closing
	before := dumpAll(t, db)
	if _, err := db.MergeEpochs(3, 4, nil); !errors.Is(err, ErrUnsealed) {
		t.Fatalf("merge 3..4: %v, want ErrUnsealed", err)
	}
	if _, err := db.ExpireEpochs(4, nil); !errors.Is(err, ErrUnsealed) {
		t.Fatalf("expire through 4: %v, want ErrUnsealed", err)
	}
	if _, err := db.MergeEpochs(2, 2, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("merge 2..2: %v, want ErrInvalid", err)
	}
	for tb, rows := range dumpAll(t, db) {
		if !maps.Equal(rows, before[tb]) {
			t.Fatalf("table %q changed", tb)
		}
	}
}

// TestExpireEpochsAccounts: deleting epochs leaves nothing of them in any
// table keyed by epoch, leaves the later epochs as they were, and moves
// what they held into the expired counts per host and view, so stored +
// dropped + expired is what it was before, host by host and view by view.
func TestExpireEpochsAccounts(t *testing.T) {
	r := testRand(t)
	for round := range 4 {
		db, _ := openTest(t)
		epochs := 3 + r.IntN(4)
		retentionFill(t, r, db, epochs, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))
		through := 1 + uint64(r.IntN(epochs-1))
		type sums struct{ flat, stack, me uint64 }
		account := func(host string) sums {
			q := Query{}
			if host != "" {
				q.Hosts = []string{host}
			}
			s, u, d, err := db.Totals(q)
			if err != nil {
				t.Fatal(err)
			}
			ss, sd, _ := db.StackTotals(q)
			ms, mu, md, _ := db.MeTotals(q)
			x, err := db.ExpiredTotals(q)
			if err != nil {
				t.Fatal(err)
			}
			sum := func(m map[string]uint64) (n uint64) {
				for _, v := range m {
					n += v
				}
				return n
			}
			return sums{s + u + sum(d) + x.Samples, ss + sum(sd) + x.StackSamples, ms + mu + sum(md) + x.MeSamples}
		}
		hosts := []string{"", "h1", "h2", "h3"}
		want := map[string]sums{}
		for _, h := range hosts {
			want[h] = account(h)
		}
		before := dumpAll(t, db)
		res, err := db.ExpireEpochs(through, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Epochs != int(through) || res.Expired.Samples == 0 {
			t.Fatalf("round %d: expire through %d: %+v", round, through, res)
		}
		for _, h := range hosts {
			if got := account(h); got != want[h] {
				t.Fatalf("round %d: host %q: stored + dropped + expired %+v, was %+v", round, h, got, want[h])
			}
		}
		after := dumpAll(t, db)
		for _, tb := range epochTables {
			for k, n := range before[tb] {
				e := keyEpoch(k)
				if _, ok := after[tb][k]; e <= through && ok || e > through && after[tb][k] != n {
					t.Fatalf("round %d: table %q, epoch %d after expiring through %d: %d, was %d", round, tb, e, through, after[tb][k], n)
				}
			}
		}
		if x, _ := db.ExpiredTotals(Query{Epochs: []uint64{through + 1}}); x != (Expired{}) {
			t.Fatalf("a query naming epochs selected expired samples: %+v", x)
		}
	}
}

// TestExpireReclaimsSpace: a large epoch deleted and its range compacted
// gives its space back (most of it: a small epoch stays).
func TestExpireReclaimsSpace(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a large epoch")
	}
	r := testRand(t)
	db, dir := openTest(t)
	images := wiretest.Keys(64)
	for host := range 8 {
		for seq := uint64(1); seq <= 15; seq++ {
			b := wiretest.RandBatch(r, wiretest.Options{Host: fmt.Sprintf("host-%d", host), CPU: 0, Seq: seq, Epoch: 1,
				MinEntries: 2000, MaxEntries: 2000, Images: images, Offsets: 1 << 14, MaxStacks: 200})
			if _, err := db.ApplyBatch(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	small := wiretest.RandBatch(r, wiretest.Options{Host: "host-0", CPU: 9, Seq: 1, Epoch: 2, MaxEntries: 100, Images: images})
	if _, err := db.ApplyBatch(small); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	for _, e := range []Epoch{{Number: 1, Start: at, End: at.Add(time.Hour), State: EpochSealed}, {Number: 2, Start: at.Add(time.Hour), State: EpochOpen}} {
		if err := db.PutEpoch(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	// The tables' files on disk: what retention must give back. (The
	// WAL is recycled, not shrunk, and is the same with or without the
	// epoch; Pebble deletes obsolete tables in the background, so the
	// size after is read until it settles.)
	tables := func() (n int64) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if fi, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), ".sst") {
				n += fi.Size()
			}
		}
		return n
	}
	// settled is tables() once Pebble's deletion of obsolete files has
	// caught up (three equal reads).
	settled := func() int64 {
		n, same := tables(), 0
		for deadline := time.Now().Add(10 * time.Second); same < 3 && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
			if m := tables(); m == n {
				same++
			} else {
				n, same = m, 0
			}
		}
		return n
	}
	full := settled()
	if _, err := db.ExpireEpochs(1, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.CompactEpochs(0, 1); err != nil {
		t.Fatal(err)
	}
	left := settled()
	t.Logf("tables on disk: %d bytes with the large epoch, %d after expiring and compacting it (%.1f%%)", full, left, 100*float64(left)/float64(full))
	if left*4 > full {
		t.Fatalf("%d bytes of tables on disk after expiring the large epoch, was %d: want at most a quarter", left, full)
	}
	if n, _, _, _ := db.Totals(Query{Epochs: []uint64{2}}); n == 0 && len(small.Entries) > 0 {
		t.Fatal("the epoch after the expired one lost its samples")
	}
}

// TestMergeCoversEveryEpochTable: every table keyed by epoch is merged by
// exactly one rule, so a table added to the schema without one fails here
// rather than losing its rows in a merge.
func TestMergeCoversEveryEpochTable(t *testing.T) {
	got := slices.Concat(counterEpochTables, hotlistEpochTables, recordEpochTables)
	slices.Sort(got)
	want := slices.Clone(epochTables)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("tables merged %q, tables keyed by epoch %q", got, want)
	}
}
