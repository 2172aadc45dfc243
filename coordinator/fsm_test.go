package coordinator

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"dcpi/storage"
	"dcpi/wire"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func TestFSMEpochLifecycle(t *testing.T) {
	f := openTestFSM(t)
	db := f.DB()
	idx := uint64(0)
	next := func() uint64 { idx++; return idx }

	mustApply(t, f, next(), &StartEpochs{At: t0})
	mustApply(t, f, next(), &StartEpochs{At: t0.Add(time.Hour)}) // no-op: epoch 1 exists
	mustApply(t, f, next(), &RegisterNode{Host: "a", CPUs: 2, Labels: map[string]string{"rack": "1"}, At: t0})
	mustApply(t, f, next(), &RegisterNode{Host: "b", CPUs: 1, At: t0})
	mustApply(t, f, next(), &RegisterNode{Host: "a", CPUs: 2, Labels: map[string]string{"rack": "2"}, At: t0.Add(time.Second)})
	if n, _ := db.Node("a"); n.Labels["rack"] != "2" || !n.Registered.Equal(t0) || !n.Updated.Equal(t0.Add(time.Second)) {
		t.Errorf("re-registration: %+v", n)
	}

	// An ack of the open epoch is refused.
	b, _ := EncodeCommand(&AckEpoch{Host: "a", Epoch: 1, At: t0})
	if err, _ := f.ApplyCommand(next(), b).(error); !errors.Is(err, ErrBadCommand) {
		t.Errorf("ack of an open epoch: %v", err)
	}
	if got := mustApply(t, f, next(), &CutEpoch{At: t0.Add(time.Minute)}); got != uint64(2) {
		t.Fatalf("cut returned %v, want 2", got)
	}
	eps, _ := db.Epochs()
	want := []storage.Epoch{
		{Number: 1, Start: t0, End: t0.Add(time.Minute), State: storage.EpochClosing},
		{Number: 2, Start: t0.Add(time.Minute), State: storage.EpochOpen},
	}
	if !slices.Equal(eps, want) {
		t.Fatalf("epochs after cut: %+v", eps)
	}
	// Acks: an unregistered host and too many streams are refused.
	for _, c := range []*AckEpoch{
		{Host: "ghost", Epoch: 1, At: t0},
		{Host: "b", Epoch: 1, LastSeq: []uint64{1, 2, 3}, At: t0},
		{Host: "b", Epoch: 9, At: t0},
	} {
		b, _ := EncodeCommand(c)
		if err, _ := f.ApplyCommand(next(), b).(error); !errors.Is(err, ErrBadCommand) {
			t.Errorf("ack %+v: %v", c, err)
		}
	}
	if r := mustApply(t, f, next(), &AckEpoch{Host: "a", Epoch: 1, LastSeq: []uint64{0, 0, 0}, At: t0}); r != (AckResult{}) {
		t.Errorf("ack result %v", r)
	}
	live := func(string) bool { return true }
	if due, _ := f.DueSeals(live); len(due) != 0 {
		t.Errorf("due %v before b acked", due)
	}
	if due, _ := f.DueSeals(func(h string) bool { return h != "b" }); !slices.Equal(due, []uint64{1}) {
		t.Errorf("due %v with b dead, want [1]", due)
	}
	mustApply(t, f, next(), &SealEpoch{Epoch: 1, At: t0.Add(2 * time.Minute)})
	mustApply(t, f, next(), &SealEpoch{Epoch: 1, At: t0.Add(3 * time.Minute)}) // idempotent
	if e, _ := db.Epoch(1); e.State != storage.EpochSealed {
		t.Errorf("epoch 1 %v after seal", e.State)
	}
	// b comes back: its ack is late, and its batch still lands in epoch 1.
	if r := mustApply(t, f, next(), &AckEpoch{Host: "b", Epoch: 1, LastSeq: []uint64{1}, At: t0.Add(time.Hour)}); r != (AckResult{Late: true}) {
		t.Errorf("late ack result %v", r)
	}
	d := randDelta(testRand(t), "b", 0, 1, 0, 1, 5)
	if o := outcomes(mustApply(t, f, next(), &Ingest{Deltas: []storage.Delta{d}})); !slices.Equal(o, []storage.Outcome{storage.Applied}) {
		t.Errorf("late batch: %v", o)
	}
	if a, _ := db.EpochAck(1, "b"); !a.Late {
		t.Errorf("ack not recorded late: %+v", a)
	}
	if s, _, _, _ := db.Totals(storage.Query{Epochs: []uint64{1}, Hosts: []string{"b"}}); s != d.Batch.Total()-unknownTotal(d.Batch) {
		t.Errorf("late samples in epoch 1: %d", s)
	}
	// A seal of the open epoch is refused.
	b, _ = EncodeCommand(&SealEpoch{Epoch: 2, At: t0})
	if err, _ := f.ApplyCommand(next(), b).(error); !errors.Is(err, ErrBadCommand) {
		t.Errorf("seal of an open epoch: %v", err)
	}
}

func unknownTotal(b *wire.Batch) (n uint64) {
	for _, u := range b.Unknown {
		n += u.Count
	}
	return n
}

// TestFSMIngestReplay: outcomes, images, and a replay of entries the
// database already holds (a restart) changing nothing.
func TestFSMIngestReplay(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fsm")
	f, err := OpenFSM(dir, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	r := testRand(t)
	d1 := randDelta(r, "h", 0, 1, 3, 1, 10)
	d2 := randDelta(r, "h", 0, 4, 0, 1, 10)
	gap := randDelta(r, "h", 1, 2, 0, 1, 10)
	c1 := &Ingest{Deltas: []storage.Delta{d1, d2, gap}, Images: []*wire.ImageRecord{imageRec(1)}}
	if o := outcomes(mustApply(t, f, 1, c1)); !slices.Equal(o, []storage.Outcome{storage.Applied, storage.Applied, storage.Gap}) {
		t.Fatalf("outcomes %v", o)
	}
	before := dumpDB(t, f.DB())
	// Redelivered in a new entry: duplicates, nothing changes.
	if o := outcomes(mustApply(t, f, 2, c1)); !slices.Equal(o, []storage.Outcome{storage.Duplicate, storage.Duplicate, storage.Gap}) {
		t.Fatalf("redelivery outcomes %v", o)
	}
	if after := dumpDB(t, f.DB()); after != before {
		t.Fatalf("redelivery changed the database")
	}
	// Replay after a restart: entries at or below the log index are skipped.
	f.Close()
	if f, err = OpenFSM(dir, t.Logf); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.AppliedIndex() != 2 {
		t.Errorf("applied index %d after reopen, want 2", f.AppliedIndex())
	}
	b, _ := EncodeCommand(&CutEpoch{At: t0})
	if res := f.ApplyCommand(2, b); res != nil {
		t.Errorf("replayed entry 2 returned %v", res)
	}
	if eps, _ := f.DB().Epochs(); len(eps) != 0 {
		t.Errorf("replayed entry applied: %+v", eps)
	}
	if r, err := f.DB().Image(imgKey(1)); err != nil || r.Path != "/bin/prog1" {
		t.Errorf("image: %+v %v", r, err)
	}
}

// TestFSMRejectsMalformed: a malformed entry is an error result and
// changes nothing, not even the log index.
func TestFSMRejectsMalformed(t *testing.T) {
	f := openTestFSM(t)
	mustApply(t, f, 1, &StartEpochs{At: t0})
	before := dumpDB(t, f.DB())
	good, _ := EncodeCommand(&Ingest{Deltas: []storage.Delta{randDelta(testRand(t), "h", 0, 1, 0, 1, 10)}})
	corrupt := bytes.Clone(good)
	corrupt[len(corrupt)/2] ^= 0xff // breaks the batch's CRC
	for i, b := range [][]byte{nil, {1}, {1, 200}, {9, 1}, good[:len(good)-1], corrupt, append(bytes.Clone(good), 0)} {
		res := f.ApplyCommand(uint64(2+i), b)
		if err, ok := res.(error); !ok || !errors.Is(err, ErrBadCommand) {
			t.Errorf("entry %x: result %v", b, res)
		}
	}
	if after := dumpDB(t, f.DB()); after != before {
		t.Errorf("malformed entries changed the database:\n%s\nvs\n%s", after, before)
	}
	if f.AppliedIndex() != 1 {
		t.Errorf("applied index %d, want 1", f.AppliedIndex())
	}
}

// memSink is a raft.SnapshotSink in memory.
type memSink struct {
	bytes.Buffer
	cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { return nil }

// TestSnapshotRestore: a snapshot restored into another replica (one with
// different contents) gives identical query results; writes after the
// snapshot are not in it; the restored replica reopens on the new
// generation and has removed the old one.
func TestSnapshotRestore(t *testing.T) {
	r := testRand(t)
	src := openTestFSM(t)
	idx := uint64(0)
	apply := func(f *FSM, c Command) { idx++; mustApply(t, f, idx, c) }
	apply(src, &StartEpochs{At: t0})
	apply(src, &RegisterNode{Host: "h0", CPUs: 2, Labels: map[string]string{"k": "v"}, At: t0})
	for s := uint64(1); s <= 20; s++ {
		apply(src, &Ingest{Deltas: []storage.Delta{randDelta(r, "h0", uint16(s%2), (s+1)/2, 0, 1, 50)}, Images: []*wire.ImageRecord{imageRec(int(s % 4))}})
	}
	apply(src, &CutEpoch{At: t0.Add(time.Minute)})
	apply(src, &AckEpoch{Host: "h0", Epoch: 1, LastSeq: []uint64{10, 10}, At: t0.Add(time.Minute)})
	want := dumpDB(t, src.DB())
	snapIdx := idx

	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	apply(src, &Ingest{Deltas: []storage.Delta{randDelta(r, "h9", 0, 1, 0, 2, 50)}}) // after the snapshot
	var sink memSink
	if err := snap.Persist(&sink); err != nil || sink.cancelled {
		t.Fatalf("persist: %v (cancelled %v)", err, sink.cancelled)
	}
	snap.Release()

	dir := filepath.Join(t.TempDir(), "dst")
	dst, err := OpenFSM(dir, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, dst, 1, &Ingest{Deltas: []storage.Delta{randDelta(r, "other", 0, 1, 0, 7, 10)}})
	old := dst.DB()
	if err := dst.Restore(readCloser{bytes.NewReader(sink.Bytes())}); err != nil {
		t.Fatal(err)
	}
	if got := dumpDB(t, dst.DB()); got != want {
		t.Fatalf("restored database differs:\n%s\nwant\n%s", got, want)
	}
	if _, err := old.Epochs(); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("replaced database still open: %v", err)
	}
	if dst.AppliedIndex() != snapIdx {
		t.Errorf("applied index %d after restore, want %d", dst.AppliedIndex(), snapIdx)
	}
	if _, err := os.Stat(genDir(dir, 1)); !os.IsNotExist(err) {
		t.Errorf("old generation not removed: %v", err)
	}
	dst.Close()
	dst, err = OpenFSM(dir, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if got := dumpDB(t, dst.DB()); got != want {
		t.Fatalf("reopened restored database differs")
	}

	// A snapshot stream that tries to escape its directory is refused and
	// the live database is kept.
	var evil bytes.Buffer
	writeEvilTar(t, &evil)
	if err := dst.Restore(readCloser{&evil}); err == nil {
		t.Fatal("restore of a tar with ../ succeeded")
	}
	if got := dumpDB(t, dst.DB()); got != want {
		t.Fatalf("failed restore changed the database")
	}
}

type readCloser struct {
	r interface{ Read([]byte) (int, error) }
}

func (r readCloser) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r readCloser) Close() error               { return nil }

var _ raft.SnapshotSink = (*memSink)(nil)

func writeEvilTar(t *testing.T, w *bytes.Buffer) {
	tw := tar.NewWriter(w)
	body := []byte("x")
	if err := tw.WriteHeader(&tar.Header{Name: "../escape", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	tw.Write(body)
	tw.Close()
}
