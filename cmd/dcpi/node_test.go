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
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--workloads", "nope"}, `no embedded workload "nope"`},
		{[]string{"--events", "bogus"}, `unknown event "bogus"`},
		{[]string{"--events", "cycles,imiss,dmiss,branchmp", "--workloads", "sort", "--cpus", "1", "--timing=false", "--seconds", "0.01"}, ""},
		{[]string{"--mux", "--workloads", "sort", "--cpus", "1", "--timing=false", "--seconds", "0.01"}, ""},
		{[]string{"--assoc", "5"}, "assoc"},
	} {
		_, _, err := run(t, append([]string{"node", "--db", filepath.Join(t.TempDir(), "x")}, tc.args...)...)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("dcpi node %v: err %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestNodeRunsAccumulate: a second run into the same database, as the
// same host or another, adds to it rather than being taken for a replay.
func TestNodeRunsAccumulate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	total := func() uint64 {
		db, err := storage.Open(dir, storage.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		s, u, _, err := db.Totals(storage.Query{})
		if err != nil {
			t.Fatal(err)
		}
		return s + u
	}
	args := []string{"node", "--workloads", "sort", "--cpus", "1", "--timing=false", "--db", dir}
	var last uint64
	for i, host := range []string{"alpha0", "alpha0", "beta"} {
		if _, _, err := run(t, append(args, "--host", host)...); err != nil {
			t.Fatal(err)
		}
		now := total()
		if now <= last {
			t.Fatalf("run %d (host %s): database holds %d samples, %d before", i+1, host, now, last)
		}
		last = now
	}
	db, err := storage.Open(dir, storage.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if hosts, _ := db.Hosts(); len(hosts) != 2 {
		t.Fatalf("hosts %v, want alpha0 and beta", hosts)
	}
}
