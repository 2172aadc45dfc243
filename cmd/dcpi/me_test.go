package main

import (
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"dcpi/storage"
)

var meConservationRE = regexp.MustCompile(`profileme: (\d+) instructions tagged = (\d+) stored \+ (\d+) dropped \([^)]*\): (\S+)`)

// checkMeConservation requires the ProfileMe line in out to balance, with
// something tagged, and the database at db to hold what it says.
func checkMeConservation(t *testing.T, out, db string) {
	t.Helper()
	m := meConservationRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no ProfileMe conservation line:\n%s", out)
	}
	tagged, _ := strconv.ParseUint(m[1], 10, 64)
	stored, _ := strconv.ParseUint(m[2], 10, 64)
	dropped, _ := strconv.ParseUint(m[3], 10, 64)
	if m[4] != "balanced" || tagged == 0 || stored == 0 || stored+dropped != tagged {
		t.Fatalf("ProfileMe conservation %s: %d tagged, %d stored, %d dropped", m[4], tagged, stored, dropped)
	}
	sdb, err := storage.Open(db, storage.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	s, u, drops, err := sdb.MeTotals(storage.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var d uint64
	for _, n := range drops {
		d += n
	}
	if s+u != stored || d != dropped {
		t.Fatalf("database holds %d ProfileMe samples and %d dropped; dcpi profile said %d and %d", s+u, d, stored, dropped)
	}
	rows := 0
	if err := sdb.MeProfile(storage.Query{}, func(*storage.MeRow) error { rows++; return nil }); err != nil || rows == 0 {
		t.Fatalf("%d ProfileMe rows stored (%v)", rows, err)
	}
}

// TestProfileMeEndToEnd: dcpi profile --profileme on two hosts stores
// every instruction the ProfileMe hardware tagged, or counts it dropped,
// in the profile database, beside the counter profile's own balance.
func TestProfileMeEndToEnd(t *testing.T) {
	db := filepath.Join(t.TempDir(), "me.db")
	_, stderr, err := run(t, "profile", "-o", db, "--profileme", "--hosts", "2", "--cpus", "2", "sort", ":", "ccdriver")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	checkConservation(t, stderr, db)
	checkMeConservation(t, stderr, db)
}

// TestDemoProfileMeBalances: the demo's cluster with --profileme carries
// every tagged instruction through NATS, the aggregators and Raft into
// the replicas' Pebble, or counts it dropped.
func TestDemoProfileMeBalances(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fleet")
	out, _, err := run(t, "demo", "--hosts", "2", "--cpus", "1", "--replicas", "1", "--aggregators", "1", "--seconds", "0.05",
		"--timing=false", "--stacks=false", "--profileme", "--dir", dir, "--limit", "3")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !regexp.MustCompile(`conservation: [1-9]\d* samples generated .*: balanced`).MatchString(out) {
		t.Fatalf("no balanced conservation line:\n%s", out)
	}
	m := meConservationRE.FindStringSubmatch(out)
	if m == nil || m[4] != "balanced" || m[1] == "0" || m[2] == "0" {
		t.Fatalf("no balanced ProfileMe conservation line with samples:\n%s", out)
	}
}
