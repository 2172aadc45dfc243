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
// takes as instrumented data (analysis/instrument's tests hold the file
// to the report), and dcpi pp fleet shows two hosts' uploads merged:
// twice one host's calls, the same records.
func TestPPCountsReadsACCTDump(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a workload")
	}
	t.Chdir(t.TempDir())
	instrumentRecurse(t, "cct", "recurse.cct")
	out, _, err := run(t, "pp", "counts", "--top", "3", "--save", "c.json", "recurse.cct")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{instrument.CCTLabel, "calling context tree (Table 3): ", "\nT calls=0 incl.calls=", "  main @0x", "(recursion)", "0 activations lost"} {
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
	if _, _, err := run(t, "pp", "counts", "--original", "recurse", "recurse.cct"); err == nil {
		t.Error("--original accepted for a CCT dump")
	}

	treeLine := regexp.MustCompile(`calling context tree: (\d+) records; metric totals calls=(\d+)`)
	one, both := uploadTwoHosts(t, "c.json")
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

// TestPPCountsCCTMetrics: dcpi pp instrument --mode cct --metrics, a run
// on the simulated host, then dcpi pp counts shows every context's own
// cycles and events with their totals, orders the tree by the --by
// metric (chase, which takes ptrchase's misses, first under main), refuses
// a metric the tree lacks, and --save and dcpi pp upload carry the
// metrics to the fleet's tree.
func TestPPCountsCCTMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a workload")
	}
	t.Chdir(t.TempDir())
	if _, _, err := run(t, "pp", "instrument", "--mode", "cct", "--metrics", "-o", "ptrchase.cct", "ptrchase"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, "sim", "run", "--cpus", "1", "./ptrchase.cct", "16384", "20000"); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "pp", "counts", "--by", "dmiss", "--top", "1", "--save", "c.json", "ptrchase.cct")
	if err != nil {
		t.Fatal(err)
	}
	tot := regexp.MustCompile(`totals calls=(\d+) cycles=(\d+) dmiss=(\d+) imiss=(\d+)\n`).FindStringSubmatch(out)
	if tot == nil {
		t.Fatalf("no metric totals in:\n%s", out)
	}
	if dmiss := atoi(t, tot[3]); dmiss < 20000 {
		t.Errorf("%d D-cache misses in all: ptrchase's chase alone takes 20000", dmiss)
	}
	for _, s := range []string{"children by inclusive dmiss, top 1 per record", "\nT calls=0 cycles=0 dmiss=0 imiss=0 incl.dmiss=" + tot[3] + "\n"} {
		if !strings.Contains(out, s) {
			t.Errorf("report lacks %q:\n%s", s, out)
		}
	}
	if !regexp.MustCompile(`\n +main @0x[0-9a-f]+ calls=1 cycles=\d+ dmiss=\d+ imiss=\d+ incl\.dmiss=\d+\n +chase @0x`).MatchString(out) {
		t.Errorf("chase is not main's first child by D-cache misses:\n%s", out)
	}
	if _, _, err := run(t, "pp", "counts", "--by", "nosuch", "ptrchase.cct"); err == nil || !strings.Contains(err.Error(), "calls, cycles, dmiss, imiss") {
		t.Errorf("--by nosuch: %v", err)
	}
	b, err := os.ReadFile("c.json")
	if err != nil {
		t.Fatal(err)
	}
	_, tree, err := instrument.ReadSavedCCT(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := tree.Totals(); len(got) != 4 || got[2] != uint64(atoi(t, tot[3])) {
		t.Errorf("saved tree: metrics %v totals %v, the report's dmiss %s", tree.Metrics, got, tot[3])
	}
	if out, _, err := run(t, "pp", "upload", "--db", "db", "--host", "alpha0", "c.json"); err != nil {
		t.Fatalf("upload: %v\n%s", err, out)
	}
	fleet, _, err := run(t, "pp", "fleet", "--db", "db", "--top", "1")
	if err != nil {
		t.Fatal(err)
	}
	if want := "metric totals calls=" + tot[1] + " cycles=" + tot[2] + " dmiss=" + tot[3] + " imiss=" + tot[4]; !strings.Contains(fleet, want) {
		t.Errorf("the fleet's view lacks %q:\n%s", want, fleet)
	}
}

// TestPPCountsReadsAContextFlowDump: dcpi pp instrument --mode cct
// --paths, a run with the original's output, and dcpi pp counts prints
// the paths per context (their total equal to the saved tree's) and,
// with --original, Table 3's One Path column (at most the call sites
// used, and some: sort's main calls each sort once).
func TestPPCountsReadsAContextFlowDump(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a workload")
	}
	t.Chdir(t.TempDir())
	if _, _, err := run(t, "pp", "instrument", "--mode", "cct", "--paths", "-o", "sort.cf", "sort"); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "sim", "run", "--cpus", "1", "./sort.cf", "500")
	if err != nil {
		t.Fatal(err)
	}
	if want, _, _ := run(t, "sim", "run", "--cpus", "1", "sort", "500"); out != want {
		t.Fatalf("instrumented output %q, original %q", out, want)
	}
	if _, _, err := run(t, "pp", "counts", "--original", "hello", "sort.cf"); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("another original: err %v, want a SHA-256 mismatch", err)
	}
	out, _, err = run(t, "pp", "counts", "--top", "5", "--original", "sort", "--save", "cf.json", "sort.cf")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`\(One Path\): (\d+) of (\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no One Path in:\n%s", out)
	}
	if one, used := atoi(t, m[1]), atoi(t, m[2]); one == 0 || one > used {
		t.Errorf("One Path %d of %d call sites used", one, used)
	}
	m = regexp.MustCompile(`Context\+Flow\): (\d+) paths run, (\d+) \(context, path\) pairs`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no paths per context in:\n%s", out)
	}
	b, err := os.ReadFile("cf.json")
	if err != nil {
		t.Fatal(err)
	}
	_, tree, err := instrument.ReadSavedCCT(b)
	if err != nil {
		t.Fatal(err)
	}
	var runs, pairs int
	tree.Walk(func(n *cct.Node) {
		for _, c := range n.Paths {
			runs += int(c)
			pairs++
		}
	})
	if runs == 0 || runs != atoi(t, m[1]) || pairs != atoi(t, m[2]) {
		t.Errorf("report: %s paths in %s pairs; saved tree: %d in %d", m[1], m[2], runs, pairs)
	}
	if !strings.Contains(out, "  path ") || !strings.Contains(out, "/main/") {
		t.Errorf("no hot (context, path) lines:\n%s", out)
	}
}
