package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"dcpi/analysis/cct"
	"dcpi/analysis/instrument"
)

// TestPPCountsReadsACCTDump: dcpi pp instrument --mode cct, a run on the
// simulated host with the original's output, then dcpi pp counts prints
// the tree the program built (labelled as such, with Table 3 and the
// counters of what it left out); --save writes a tree dcpi pp upload
// takes as instrumented data, and dcpi pp fleet shows two hosts' uploads
// merged: twice one host's calls, the same records.
func TestPPCountsReadsACCTDump(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a workload")
	}
	t.Chdir(t.TempDir())
	if _, _, err := run(t, "pp", "instrument", "--mode", "cct", "-o", "recurse.cct", "recurse"); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "sim", "run", "--cpus", "1", "./recurse.cct", "1")
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := run(t, "sim", "run", "--cpus", "1", "recurse", "1")
	if out != want {
		t.Fatalf("instrumented output %q, original %q", out, want)
	}
	out, _, err = run(t, "pp", "counts", "--top", "3", "--save", "c.json", "recurse.cct")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{ppCCTLabel, "calling context tree (Table 3): ", "\nT calls=0 incl.calls=", "  main @0x", "(recursion)", "0 activations lost"} {
		if !strings.Contains(out, s) {
			t.Errorf("report lacks %q:\n%s", s, out)
		}
	}
	m := regexp.MustCompile(`(\d+) contexts, (\d+) calls;`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no totals in:\n%s", out)
	}
	contexts, calls := atoi(t, m[1]), atoi(t, m[2])
	if contexts < 50 || calls < 1000 {
		t.Errorf("%d contexts, %d calls: the tree is not being built", contexts, calls)
	}
	b, err := os.ReadFile("c.json")
	if err != nil {
		t.Fatal(err)
	}
	id, tree, err := instrument.ReadSavedCCT(b)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(id, "buildid:") || tree.Stats(cct.Layout{}).Nodes != contexts {
		t.Errorf("saved tree: image %q, %d records, want %d", id, tree.Stats(cct.Layout{}).Nodes, contexts)
	}
	if _, _, err := run(t, "pp", "counts", "--original", "recurse", "recurse.cct"); err == nil {
		t.Error("--original accepted for a CCT dump")
	}

	for _, h := range []string{"alpha0", "alpha1", "alpha0"} {
		if out, _, err := run(t, "pp", "upload", "--db", "db", "--host", h, "c.json"); err != nil || !strings.Contains(out, " instrumented as "+h+"/") {
			t.Fatalf("upload as %s: %v\n%s", h, err, out)
		}
	}
	treeLine := regexp.MustCompile(`calling context tree: (\d+) records; metric totals calls=(\d+)`)
	one, _, err := run(t, "pp", "fleet", "--db", "db", "--host", "alpha1", "--top", "3")
	if err != nil {
		t.Fatal(err)
	}
	both, _, err := run(t, "pp", "fleet", "--db", "db", "--top", "3")
	if err != nil {
		t.Fatal(err)
	}
	m1, m2 := treeLine.FindStringSubmatch(one), treeLine.FindStringSubmatch(both)
	if m1 == nil || m2 == nil {
		t.Fatalf("no tree in the fleet's view:\n%s\n---\n%s", one, both)
	}
	if atoi(t, m1[1]) != contexts || atoi(t, m1[2]) != calls {
		t.Errorf("one host: %s records, %s calls; uploaded %d, %d", m1[1], m1[2], contexts, calls)
	}
	if atoi(t, m2[1]) != contexts || atoi(t, m2[2]) != 2*calls {
		t.Errorf("two hosts: %s records, %s calls; want %d, %d", m2[1], m2[2], contexts, 2*calls)
	}
}
