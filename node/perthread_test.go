package node

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"dcpi/wire"
)

// threadedEvents are a process (PID 40, incarnation 5) running /bin/t,
// which starts threads 41 and 42 (incarnations 6 and 7); thread 41 ends.
func threadedEvents() []Event {
	return []Event{
		{Kind: EventExec, PID: 40, Incarnation: 5, Path: "/bin/t"},
		{Kind: EventMap, PID: 40, Incarnation: 5, Base: 0x120000000, Size: 1 << 16, ImageID: fmt.Sprintf("buildid:%040x", 9), Path: "/bin/t"},
		{Kind: EventThread, PID: 40, TID: 41, Incarnation: 6, ParentIncarnation: 5},
		{Kind: EventThread, PID: 40, TID: 42, Incarnation: 7, ParentIncarnation: 5},
		{Kind: EventThreadExit, PID: 40, TID: 41, Incarnation: 6, ParentIncarnation: 5},
	}
}

// TestPerThreadAttribution: a per-thread ledger puts each entry under the
// TID its key names (the process's incarnation naming its first thread,
// TID = PID), an ended thread's entries still drained after its exit; the
// same entries on a ledger that is not per-thread all go to the PID, the
// thread keys resolving to nothing (the driver never sees them there).
func TestPerThreadAttribution(t *testing.T) {
	entries := []Entry{
		{PID: 5, PC: 0x120000010, Count: 3},
		{PID: 6, PC: 0x120000010, Count: 4},
		{PID: 7, PC: 0x120000010, Count: 5},
		{PID: 7, PC: 0x120000020, Count: 6},
	}
	for _, perThread := range []bool{true, false} {
		im := NewImageMaps()
		cfg := DefaultConfig()
		cfg.PerProcess, cfg.PerThread = []string{"t"}, perThread
		l, err := NewLedger(cfg, 1, im)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range threadedEvents() {
			im.ProcessEvent(e)
		}
		b, _, err := l.Drained(0, entries, DriverStats{Samples: 18}, 100)
		if err != nil {
			t.Fatal(err)
		}
		got := map[uint32]uint64{}
		for _, e := range b.Entries {
			got[e.PID] += e.Count
		}
		var unknown uint64
		for _, u := range b.Unknown {
			unknown += u.Count
		}
		want, wantUnknown := map[uint32]uint64{40: 3, 41: 4, 42: 11}, uint64(0)
		if !perThread {
			want, wantUnknown = map[uint32]uint64{40: 3}, 15
		}
		if !maps.Equal(got, want) || unknown != wantUnknown {
			t.Errorf("per-thread %v: samples by pid %v and %d unknown, want %v and %d", perThread, got, unknown, want, wantUnknown)
		}
	}
}

// TestPerThreadMapsForgetEndedThreads: an ended thread resolves until the
// flush after the one it ended before, as an ended incarnation does.
func TestPerThreadMapsForgetEndedThreads(t *testing.T) {
	im := NewImageMaps()
	im.followThreads()
	for _, e := range threadedEvents() {
		im.ProcessEvent(e)
	}
	for flush, want := range []bool{true, true, false} {
		_, _, pid, tid, ok := im.ResolveThread(6, 0x120000010)
		if ok != want || ok && (pid != 40 || tid != 41) {
			t.Fatalf("after %d flushes: thread incarnation 6 resolves to pid %d tid %d, %v; want %v", flush, pid, tid, ok, want)
		}
		im.FlushCompleted()
	}
	if _, _, pid, tid, ok := im.ResolveThread(7, 0x120000010); !ok || pid != 40 || tid != 42 {
		t.Fatalf("live thread: pid %d tid %d %v", pid, tid, ok)
	}
}

// TestPerThreadRecords: a per-thread node's process book publishes a
// record per thread, naming the process, and the process's own names
// itself; a book that is not per-thread publishes the process's alone,
// of ProcessVersion, as before.
func TestPerThreadRecords(t *testing.T) {
	for _, perThread := range []bool{true, false} {
		b := newProcessBook(map[string]map[string]string{"t": {"role": "w"}})
		b.perThread = perThread
		for _, e := range threadedEvents() {
			b.ProcessEvent(e)
		}
		got := map[uint32]wire.ProcessRecord{}
		for _, r := range b.take(1, time.Unix(0, 0)) {
			if err := r.Validate(); err != nil {
				t.Fatal(err)
			}
			if r.Binary != "/bin/t" || r.Labels["role"] != "w" {
				t.Errorf("record %+v: want /bin/t's, with its labels", *r)
			}
			got[r.PID] = *r
		}
		if !perThread {
			if len(got) != 1 || got[40].Version != wire.ProcessVersion || got[40].Process != 0 {
				t.Errorf("records %v: want pid 40's alone, version 1", got)
			}
			continue
		}
		for tid := range uint32(3) {
			r := got[40+tid]
			if r.Version != wire.ProcessThreadVersion || r.Process != 40 {
				t.Errorf("tid %d's record %+v: want one naming process 40", 40+tid, r)
			}
		}
	}
}
