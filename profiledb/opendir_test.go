package profiledb

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/storage"
	"dcpi/wire"
)

// writeDB writes a profile database at dir holding count cycles samples
// of one image on host h.
func writeDB(t *testing.T, dir string, count uint64) {
	t.Helper()
	db, err := storage.Open(dir, storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	k := wire.MustParseImageKey("buildid:0101")
	b := &wire.Batch{Version: wire.Version, Host: "h", Seq: 1, Epoch: 1, Entries: []wire.Entry{{Image: k, Offset: 0x10, Count: count}}}
	b.Normalize()
	if _, err := db.ApplyBatch(b); err != nil {
		t.Fatal(err)
	}
}

// replicaDir lays out dir as a stopped coordinator replica's data
// directory whose current generation holds count samples.
func replicaDir(t *testing.T, dir string, count uint64) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "db"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "db", "GENERATION"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeDB(t, filepath.Join(dir, "db", "gen-000001"), count)
}

// TestOpenDir: --db opens a node's database and a replica's data
// directory read-only, and refuses everything else with an error that
// says what the directory is and, for a fleet's directory, which replica
// to give.
func TestOpenDir(t *testing.T) {
	tmp := t.TempDir()
	samples := func(dir string) uint64 {
		t.Helper()
		db, err := OpenDir(dir)
		if err != nil {
			t.Fatalf("OpenDir(%s): %v", dir, err)
		}
		defer db.Close()
		n, _, _, err := db.Totals(storage.Query{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	node := filepath.Join(tmp, "node")
	writeDB(t, node, 7)
	if n := samples(node); n != 7 {
		t.Errorf("node database: %d samples, want 7", n)
	}
	fleet := filepath.Join(tmp, "fleet")
	replicaDir(t, filepath.Join(fleet, "c1"), 11)
	replicaDir(t, filepath.Join(fleet, "c2"), 11)
	if n := samples(filepath.Join(fleet, "c2")); n != 11 {
		t.Errorf("replica c2: %d samples, want 11", n)
	}
	// Read-only: the database refuses writes.
	db, err := OpenDir(node)
	if err != nil {
		t.Fatal(err)
	}
	b := &wire.Batch{Version: wire.Version, Host: "h", Seq: 2, Epoch: 1, Entries: []wire.Entry{{Image: wire.MustParseImageKey("buildid:0101"), Count: 1}}}
	b.Normalize()
	if _, err := db.ApplyBatch(b); err == nil {
		t.Error("a database opened by OpenDir took a write")
	}
	db.Close()

	file := filepath.Join(tmp, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	os.MkdirAll(filepath.Join(tmp, "empty"), 0o755)
	os.MkdirAll(filepath.Join(tmp, "sub"), 0o755)
	os.WriteFile(filepath.Join(tmp, "sub", "junk"), []byte("x"), 0o644)
	for _, tc := range []struct{ dir, want string }{
		{filepath.Join(tmp, "missing"), "--db " + filepath.Join(tmp, "missing") + ": no such directory (profile a program into it with: dcpi profile -o "},
		{file, "--db " + file + ": not a directory"},
		{filepath.Join(tmp, "empty"), "empty directory, not a profile database"},
		{filepath.Join(tmp, "sub"), "cannot read a profile database there"},
		{fleet, "--db " + fleet + " holds a fleet's coordinator replicas (c1, c2), each with its own copy of the database; use --db " + filepath.Join(fleet, "c1")},
	} {
		db, err := OpenDir(tc.dir)
		if err == nil {
			db.Close()
			t.Errorf("OpenDir(%s) opened it", tc.dir)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("OpenDir(%s): %v, want %q", tc.dir, err, tc.want)
		}
	}
}
