package main

import (
	"path/filepath"
	"strings"
	"testing"

	"dcpi/storage"
)

func TestNodeCommandProfilesIntoPebble(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	out, _, err := run(t, "node", "--workloads", "sort,ccdriver", "--cpus", "2", "--timing=false", "--db", dir, "--stats")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"hash table miss rate", "aggregation factor", "handler cost", "0 dropped"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	db, err := storage.Open(dir, storage.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	samples, _, _, err := db.Totals(storage.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if samples == 0 || !strings.Contains(out, "published") {
		t.Fatalf("database holds %d samples", samples)
	}
	if _, _, err := run(t, "node", "--workloads", "nope", "--db", dir); err == nil || !strings.Contains(err.Error(), `no embedded workload "nope"`) {
		t.Fatalf("bad workload: %v", err)
	}
}
