package coordinator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
)

// faultFS is raft-wal's file system with fsync failures on demand: while
// armed, every Sync of a segment fails with EIO (what the kernel reports
// when writeback failed), and syncs counts the syncs attempted.
type faultFS struct {
	*fs.FS
	armed atomic.Bool
	syncs atomic.Int64
}

func (f *faultFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	w, err := f.FS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	return &faultFile{WritableFile: w, fs: f}, nil
}

func (f *faultFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	w, err := f.FS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	return &faultFile{WritableFile: w, fs: f}, nil
}

type faultFile struct {
	types.WritableFile
	fs *faultFS
}

func (f *faultFile) Sync() error {
	f.fs.syncs.Add(1)
	if f.fs.armed.Load() {
		return &os.PathError{Op: "fsync", Path: "segment", Err: syscall.EIO}
	}
	return f.WritableFile.Sync()
}

// openTestWAL opens raft-wal under dir with small segments, on vfs.
func openTestWAL(t *testing.T, dir string, vfs types.VFS) (*wal.WAL, func()) {
	t.Helper()
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(dir, wal.WithMetaStore(meta), wal.WithSegmentSize(4<<10), wal.WithSegmentFiler(segment.NewFiler(dir, vfs)))
	if err != nil {
		t.Fatal(err)
	}
	return w, func() { w.Close(); meta.Close() }
}

func testEntry(i uint64) *raft.Log {
	return &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: fmt.Appendf(nil, "entry-%04d-payload-%s", i, bytes.Repeat([]byte{'x'}, 200))}
}

// TestDurableLogChecksum: an entry whose bytes changed on disk is a clear
// ErrCorruptEntry naming its index, and the log fails for good; raft-wal
// alone hands the changed entry over as if nothing happened (the control),
// and the entries around it read back intact.
func TestDurableLogChecksum(t *testing.T) {
	dir := t.TempDir()
	w, closeWAL := openTestWAL(t, dir, fs.New())
	d := newDurableLog(w, nil)
	var logs []*raft.Log
	for i := uint64(1); i <= 60; i++ {
		logs = append(logs, testEntry(i))
	}
	for _, l := range logs { // one commit each, so the segments seal
		if err := d.StoreLogs([]*raft.Log{l}); err != nil {
			t.Fatal(err)
		}
	}
	if logs[0].Extensions != nil {
		t.Errorf("StoreLogs changed Raft's entry: Extensions %x", logs[0].Extensions)
	}
	closeWAL()

	// Flip one byte of entry 5's data in its segment (a sealed one: the
	// segments are 4 KiB).
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	flipped := false
	for _, e := range ents {
		if filepath.Ext(e.Name()) != ".wal" {
			continue
		}
		p := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(b, []byte("entry-0005-payload")); i >= 0 {
			b[i+len("entry-0005-payload")+3] ^= 0x01
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			flipped = true
		}
	}
	if !flipped {
		t.Fatal("entry 5 not found in any segment")
	}

	w, closeWAL = openTestWAL(t, dir, fs.New())
	defer closeWAL()
	var raw raft.Log
	if err := w.GetLog(5, &raw); err != nil || bytes.Equal(raw.Data, testEntry(5).Data) {
		t.Fatalf("control: raft-wal read entry 5 as err %v, data unchanged %v; want it read, changed", err, bytes.Equal(raw.Data, testEntry(5).Data))
	}
	var fatal error
	d = newDurableLog(w, func(err error) { fatal = err })
	var l raft.Log
	for _, i := range []uint64{4, 6, 60} {
		if err := d.GetLog(i, &l); err != nil || !bytes.Equal(l.Data, testEntry(i).Data) || l.Extensions != nil {
			t.Errorf("entry %d: err %v, data intact %v, extensions %x", i, err, bytes.Equal(l.Data, testEntry(i).Data), l.Extensions)
		}
	}
	err = d.GetLog(5, &l)
	if !errors.Is(err, ErrCorruptEntry) || !errors.Is(err, ErrReplicaFailed) || fatal == nil {
		t.Fatalf("corrupt entry 5: err %v, fatal %v; want ErrCorruptEntry, fatal", err, fatal)
	}
	t.Logf("corrupt entry: %v", err)
	if err := d.StoreLogs([]*raft.Log{testEntry(61)}); !errors.Is(err, ErrReplicaFailed) {
		t.Errorf("a write after the failure: %v, want ErrReplicaFailed", err)
	}
}

// TestDurableLogFsyncFatal: a failed fsync of the Raft log is fatal at
// once: the write fails, onFatal runs once, and every later write fails
// without reaching the disk, even after the disk "recovers" — never the
// retry that could report as durable what the kernel dropped.
func TestDurableLogFsyncFatal(t *testing.T) {
	vfs := &faultFS{FS: fs.New()}
	w, closeWAL := openTestWAL(t, t.TempDir(), vfs)
	defer closeWAL()
	calls := 0
	d := newDurableLog(w, func(error) { calls++ })
	if err := d.StoreLogs([]*raft.Log{testEntry(1), testEntry(2)}); err != nil {
		t.Fatal(err)
	}
	vfs.armed.Store(true)
	err := d.StoreLogs([]*raft.Log{testEntry(3)})
	if !errors.Is(err, ErrReplicaFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("store with fsync failing: %v, want ErrReplicaFailed wrapping EIO", err)
	}
	vfs.armed.Store(false)
	syncs := vfs.syncs.Load()
	for _, op := range []func() error{
		func() error { return d.StoreLogs([]*raft.Log{testEntry(3)}) },
		func() error { return d.SetUint64([]byte("CurrentTerm"), 2) },
		func() error { return d.DeleteRange(1, 1) },
	} {
		if err := op(); !errors.Is(err, ErrReplicaFailed) {
			t.Errorf("write after the fsync failure: %v, want ErrReplicaFailed", err)
		}
	}
	if n := vfs.syncs.Load() - syncs; n != 0 || calls != 1 {
		t.Errorf("after the failure: %d more syncs reached the disk, onFatal ran %d times; want 0 and 1", n, calls)
	}
}

// TestReplicaFsyncFatal: a replica whose Raft log fails an fsync stops
// for good: the proposal fails, Failed is closed, Err and Ready say why,
// and a later proposal is refused rather than retried onto the disk.
func TestReplicaFsyncFatal(t *testing.T) {
	vfs := &faultFS{FS: fs.New()}
	c := newTunedCluster(t, 1, func(cfg *Config) { cfg.walVFS = vfs })
	c.leader()
	cl := NewClient(connect(t, c.url))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := newStreams(testRand(t))
	if _, err := cl.Propose(ctx, s.deltas(5, 10, 1, "alpha1"), nil); err != nil {
		t.Fatal(err)
	}
	r := c.reps[0]
	before := r.FSM().AppliedIndex()
	vfs.armed.Store(true)
	pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
	_, err := cl.Propose(pctx, s.deltas(5, 10, 1, "alpha1"), nil)
	pcancel()
	if err == nil {
		t.Fatal("a proposal succeeded with the log's fsync failing")
	}
	select {
	case <-r.Failed():
	case <-time.After(10 * time.Second):
		t.Fatal("the replica did not fail")
	}
	vfs.armed.Store(false)
	if !errors.Is(r.Err(), ErrReplicaFailed) || r.Ready() == nil {
		t.Errorf("Err %v, Ready %v; want ErrReplicaFailed and not ready", r.Err(), r.Ready())
	}
	syncs := vfs.syncs.Load()
	pctx, pcancel = context.WithTimeout(ctx, 2*time.Second)
	_, err = cl.Propose(pctx, s.deltas(5, 10, 1, "alpha1"), nil)
	pcancel()
	if err == nil || vfs.syncs.Load() != syncs || r.FSM().AppliedIndex() != before {
		t.Errorf("after the failure: proposal err %v, %d more syncs, applied %d -> %d; want refused, none, unchanged",
			err, vfs.syncs.Load()-syncs, before, r.FSM().AppliedIndex())
	}
	t.Logf("replica stopped: %v", r.Err())
}
