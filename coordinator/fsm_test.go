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
	if r, err := f.DB().Image(t.Context(), imgKey(1)); err != nil || r.Path != "/bin/prog1" {
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
