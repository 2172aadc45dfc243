package storage

import (
	"path/filepath"
	"reflect"
	"testing"
)

// TestRunInfo: a database without a run record says so; one put is read
// back whole, after a reopen too.
func TestRunInfo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	db, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := db.RunInfo(); ok || err != nil {
		t.Fatalf("a new database: ok %v, %v", ok, err)
	}
	want := RunInfo{Model: "ev5", Events: []string{"cycles", "imiss"}, Stacks: true, MeInterval: 4096, MePairWindow: 16, MeIssueWidth: 4, Programs: []string{"./my 3"}}
	if err := db.PutRunInfo(want); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if db, err = Open(dir, Options{ReadOnly: true}); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, ok, err := db.RunInfo()
	if !ok || err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v %v %v, want %+v", got, ok, err, want)
	}
}
