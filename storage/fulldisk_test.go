package storage

import (
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/wire"
)

// TestFullDiskIsAnError: on a file system that fills up, a commit that
// cannot be written is an error wrapping ErrWriteFailed that names the
// database (Pebble panics there), every later write returns it at once,
// Close returns it rather than hang on the locks Pebble's panic left, and
// the database's files, opened as a restarted process would on a freed
// disk, hold exactly a prefix of the batches whose commits succeeded
// (those NoSync's log buffer had written: the coordinator's Raft log
// replays the rest), nothing half-written. It needs a tmpfs mount (root,
// a mount namespace's rights); elsewhere it is skipped. (With synced
// commits Pebble ends the process on a failed log write instead: one line,
// pebbleLogger.Fatalf.)
func TestFullDiskIsAnError(t *testing.T) {
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("no tmpfs to fill (mount: %v: %s)", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	dir := filepath.Join(mnt, "db")
	db, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	// Ballast leaves a few MiB: the memtable's log fills them.
	ballast := filepath.Join(mnt, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 18<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	r := testRand(t)
	var committed []*wire.Batch
	var failed error
	for seq := uint64(1); seq < 100_000 && failed == nil; seq++ {
		b := streamBatch(r, "alpha", 0, seq, 400)
		if _, err := db.ApplyBatch(b); err != nil {
			failed = err
			break
		}
		committed = append(committed, b)
	}
	if !errors.Is(failed, ErrWriteFailed) || !strings.Contains(failed.Error(), dir) {
		t.Fatalf("the disk filled: %v, want an error wrapping ErrWriteFailed naming %s", failed, dir)
	}
	b := streamBatch(r, "alpha", 1, 1, 10)
	if _, err := db.ApplyBatch(b); !errors.Is(err, ErrWriteFailed) {
		t.Fatalf("a write after the failure: %v, want the same error", err)
	}
	if err := db.Close(); !errors.Is(err, ErrWriteFailed) {
		t.Fatalf("close: %v, want the write failure", err)
	}
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	// This process holds the failed database's lock until it exits: a
	// copy of its files is what a restarted process finds.
	restarted := filepath.Join(t.TempDir(), "db")
	if out, err := exec.Command("cp", "-a", dir, restarted).CombinedOutput(); err != nil {
		t.Fatalf("copy: %v: %s", err, out)
	}
	if err := os.Remove(filepath.Join(restarted, "LOCK")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	db, err = Open(restarted, Options{NoSync: true})
	if err != nil {
		t.Fatalf("reopen on the freed disk: %v", err)
	}
	defer db.Close()
	seq, err := db.Applied("alpha", 0)
	if err != nil || seq > uint64(len(committed)) {
		t.Fatalf("reopened at seq %d (%v), beyond the %d commits that succeeded", seq, err, len(committed))
	}
	m := newModel()
	for _, b := range committed[:seq] {
		m.apply(b)
	}
	samples, unknown, drops, err := db.Totals(Query{})
	if err != nil {
		t.Fatal(err)
	}
	ws, wu, wd := m.totals(Query{})
	if samples != ws || unknown != wu || !maps.Equal(drops, wd) {
		t.Fatalf("reopened at seq %d: %d samples, %d unknown, drops %v; batches 1-%d hold %d, %d, %v", seq, samples, unknown, drops, seq, ws, wu, wd)
	}
	t.Logf("reopened with batches 1-%d of %d committed, exactly: %v", seq, len(committed), failed)
}
