package coordinator

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"dcpi/storage"
)

// TestFSMApplyBatchMatchesApply: ApplyBatch of random runs of log entries —
// ingests with redeliveries, gaps and overlaps, malformed entries, epoch
// commands between them, replays below the applied index — gives the
// results, database and applied index that Apply of the same entries one
// at a time gives.
func TestFSMApplyBatchMatchesApply(t *testing.T) {
	r := testRand(t)
	one, batched := openTestFSM(t), openTestFSM(t)
	next := map[string]uint64{}
	var index uint64
	entry := func() *raft.Log {
		index++
		var c Command
		switch k := r.IntN(12); {
		case k == 0:
			return &raft.Log{Index: index, Type: raft.LogCommand, Data: []byte{commandVersion, kindIngest, 0xff}}
		case k == 1:
			return &raft.Log{Index: index, Type: raft.LogNoop}
		case k == 2:
			c = &CutEpoch{At: t0.Add(time.Duration(index) * time.Second)}
		case k == 3:
			c = &SealEpoch{Epoch: 1 + uint64(r.IntN(3)), At: t0.Add(time.Duration(index) * time.Second)}
		case k == 4:
			c = &StartEpochs{At: t0}
		default:
			in := &Ingest{}
			for range 1 + r.IntN(4) {
				host, cpu := fmt.Sprintf("h%d", r.IntN(2)), uint16(r.IntN(2))
				s := fmt.Sprintf("%s/%d", host, cpu)
				first := next[s] + 1
				switch r.IntN(6) {
				case 0:
					if first > 2 {
						first -= 2 // a redelivery or an overlap
					}
				case 1:
					first += 2 // a gap
				}
				last := first + uint64(r.IntN(3))
				in.Deltas = append(in.Deltas, randDelta(r, host, cpu, first, last, 1+uint64(r.IntN(2)), 1+r.IntN(30)))
				if first == next[s]+1 {
					next[s] = last
				}
			}
			if r.IntN(4) == 0 {
				in.Images = append(in.Images, imageRec(r.IntN(8)))
			}
			c = in
		}
		b, err := EncodeCommand(c)
		if err != nil {
			t.Fatal(err)
		}
		return &raft.Log{Index: index, Type: raft.LogCommand, Data: b}
	}
	var logs []*raft.Log
	for range 60 {
		logs = append(logs, entry())
	}
	for i := 0; i < len(logs); {
		n := 1 + r.IntN(12)
		run := logs[i:min(i+n, len(logs))]
		if i > 0 && r.IntN(5) == 0 {
			run = logs[i-1 : min(i+n, len(logs))] // the first is a replay
		}
		got := batched.ApplyBatch(run)
		for j, l := range run {
			want := one.Apply(l)
			if !reflect.DeepEqual(fmt.Sprint(got[j]), fmt.Sprint(want)) {
				t.Fatalf("entry %d: ApplyBatch result %v, Apply %v", l.Index, got[j], want)
			}
		}
		if a, b := batched.AppliedIndex(), one.AppliedIndex(); a != b {
			t.Fatalf("after entry %d: applied index %d batched, %d one at a time", run[len(run)-1].Index, a, b)
		}
		if a, b := mustLogIndex(t, batched), mustLogIndex(t, one); a != b {
			t.Fatalf("after entry %d: stored log index %d batched, %d one at a time", run[len(run)-1].Index, a, b)
		}
		i += n
	}
	if a, b := batched.AppliedIndex(), one.AppliedIndex(); a != b {
		t.Errorf("applied index %d batched, %d one at a time", a, b)
	}
	if a, b := dumpDB(t, batched.DB()), dumpDB(t, one.DB()); a != b {
		t.Errorf("databases differ:\n%s\nvs\n%s", a, b)
	}
	if i, err := batched.DB().LogIndex(); err != nil || i != one.AppliedIndex() {
		t.Errorf("stored log index %d %v, want %d", i, err, one.AppliedIndex())
	}
}

func mustLogIndex(t *testing.T, f *FSM) uint64 {
	t.Helper()
	i, err := f.DB().LogIndex()
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// TestFSMSealCompacts: applying a seal starts a background compaction that
// finishes on its own and leaves the database as it was; Close waits for
// (or cuts short) one still running.
func TestFSMSealCompacts(t *testing.T) {
	f := openTestFSM(t)
	r := testRand(t)
	mustApply(t, f, 1, &StartEpochs{At: t0})
	mustApply(t, f, 2, &Ingest{Deltas: []storage.Delta{randDelta(r, "h", 0, 1, 0, 1, 50)}})
	mustApply(t, f, 3, &CutEpoch{At: t0.Add(time.Minute)})
	before := dumpDB(t, f.DB())
	mustApply(t, f, 4, &SealEpoch{Epoch: 1, At: t0.Add(2 * time.Minute)})
	waitFor(t, "the compaction", 10*time.Second, func() bool {
		f.cmu.Lock()
		defer f.cmu.Unlock()
		return !f.compacting
	})
	after := dumpDB(t, f.DB())
	// The seal itself changed the epoch's state; nothing else changed.
	if dumpCounts(before) != dumpCounts(after) {
		t.Errorf("compaction changed the profile:\n%s\nvs\n%s", after, before)
	}
	mustApply(t, f, 5, &CutEpoch{At: t0.Add(3 * time.Minute)})
	mustApply(t, f, 6, &SealEpoch{Epoch: 2, At: t0.Add(4 * time.Minute)})
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// dumpCounts is dumpDB's lines about counts.
func dumpCounts(dump string) string {
	var b strings.Builder
	for line := range strings.Lines(dump) {
		if strings.HasPrefix(line, "rec ") || strings.HasPrefix(line, "prof ") || strings.HasPrefix(line, "totals ") {
			b.WriteString(line)
		}
	}
	return b.String()
}
