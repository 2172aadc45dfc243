package main

import (
	"regexp"
	"strings"
	"testing"

	"dcpi/analysis/instrument"
)

// instrumentRecurse instruments the recurse workload in mode into file
// (in the current directory) and requires the instrumented program, run
// on the simulated host, to print what the original prints.
func instrumentRecurse(t *testing.T, mode, file string) {
	t.Helper()
	if _, _, err := run(t, "pp", "instrument", "--mode", mode, "-o", file, "recurse"); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "sim", "run", "--cpus", "1", "./"+file, "1")
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := run(t, "sim", "run", "--cpus", "1", "recurse", "1")
	if out != want {
		t.Fatalf("instrumented output %q, original %q", out, want)
	}
}

// uploadTwoHosts uploads the saved instrumented data in file to the
// database db as alpha0, alpha1 and alpha0 again, and returns dcpi pp
// fleet's top 3 for alpha1 alone and for both hosts.
func uploadTwoHosts(t *testing.T, file string) (one, both string) {
	t.Helper()
	for _, h := range []string{"alpha0", "alpha1", "alpha0"} {
		if out, _, err := run(t, "pp", "upload", "--db", "db", "--host", h, file); err != nil || !strings.Contains(out, " instrumented as "+h+"/") {
			t.Fatalf("upload as %s: %v\n%s", h, err, out)
		}
	}
	one, _, err := run(t, "pp", "fleet", "--db", "db", "--host", "alpha1", "--top", "3")
	if err != nil {
		t.Fatal(err)
	}
	both, _, err = run(t, "pp", "fleet", "--db", "db", "--top", "3")
	if err != nil {
		t.Fatal(err)
	}
	return one, both
}

// TestPPCountsReadsAPathsDump: dcpi pp instrument --mode paths, a run on
// the simulated host, then dcpi pp counts prints the instrumented
// profile's hot paths (labelled as such, with blocks from --original) and
// --save writes a path profile dcpi pp upload takes (analysis/instrument's
// tests decode it).
func TestPPCountsReadsAPathsDump(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a workload")
	}
	t.Chdir(t.TempDir())
	instrumentRecurse(t, "paths", "recurse.paths")
	out, _, err := run(t, "pp", "counts", "--top", "3", "--original", "recurse", "--save", "p.json", "recurse.paths")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{instrument.PathsLabel, "hot paths (top 3 by count)", "\n      0x12", "0 lost"} {
		if !strings.Contains(out, s) {
			t.Errorf("report lacks %q:\n%s", s, out)
		}
	}
	if _, _, err := run(t, "pp", "counts", "--save", "x.json", "recurse.paths", "p.json"); err == nil {
		t.Error("a file that is not a dump was read")
	}

	// The saved profile uploads as instrumented data: two hosts' uploads
	// merge to twice one host's counts, and the oracle source has none.
	one, both := uploadTwoHosts(t, "p.json")
	m1 := regexp.MustCompile(`(?m)^  (\S+)\s+(\d+)\s+(\d+)$`).FindStringSubmatch(one)
	if m1 == nil {
		t.Fatalf("no hot path in:\n%s", one)
	}
	if got := hotPathCount(t, both, m1[1], m1[2]); atoi(t, got) != 2*atoi(t, m1[3]) {
		t.Errorf("path %s of %s: one host %s, both %s (want twice)", m1[2], m1[1], m1[3], got)
	}
	if _, _, err := run(t, "pp", "fleet", "--db", "db", "--source", "oracle"); err == nil {
		t.Error("instrumented uploads answered an oracle query")
	}
}
