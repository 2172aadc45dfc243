package main

import (
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"dcpi/internal/datadir"
	"dcpi/storage"
)

// TestSecondRoleOnADataDirSaysWhoHasIt: a role started on a data
// directory another process holds fails at once, naming the holder and
// what to do (a second coordinator used to wait on Raft's store; a second
// nats-server shared JetStream's files).
func TestSecondRoleOnADataDirSaysWhoHasIt(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	dir := filepath.Join(t.TempDir(), "c1")
	release, err := datadir.Lock(dir, "--data-dir", "dcpi coordinator c1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = datadir.Lock(dir, "--data-dir", "dcpi coordinator c1")
	if !errors.Is(err, datadir.ErrInUse) || !strings.Contains(err.Error(), "dcpi coordinator c1 pid") ||
		!strings.Contains(err.Error(), "give another --data-dir") {
		t.Fatalf("second lock: %v", err)
	}
	release()
	release, err = datadir.Lock(dir, "--data-dir", "dcpi coordinator c1")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	release()

	// The whole command, on a directory whose lock is held.
	hold, err := datadir.Lock(dir, "--dir", "dcpi nats-server")
	if err != nil {
		t.Fatal(err)
	}
	defer hold()
	_, _, err = run(t, "nats-server", "--dir", dir, "--port", "0")
	if !errors.Is(err, datadir.ErrInUse) {
		t.Fatalf("nats-server on a held directory: %v", err)
	}
}

// TestNodeOnADatabaseInUse: dcpi node --db on a database another process
// is writing says so in one line.
func TestNodeOnADatabaseInUse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	db, err := storage.Open(dir, storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, _, err = run(t, "node", "--db", dir, "--cpus", "1", "--seconds", "0.01", "--timing=false")
	if !errors.Is(err, datadir.ErrInUse) || strings.Count(err.Error(), "\n") > 0 || !strings.Contains(err.Error(), "stop it first") {
		t.Fatalf("err %v", err)
	}
}
