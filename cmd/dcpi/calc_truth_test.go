package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/analysis"
)

// calcTruth profiles workload args on hosts hosts with the mux
// configuration and ground truth, and returns dcpi calc --truth's JSON
// report over its image.
func calcTruth(t *testing.T, dir string, hosts int, workload string, args ...string) analysis.CalcAccuracyJSON {
	t.Helper()
	db := filepath.Join(dir, fmt.Sprintf("%s-%d", workload, hosts))
	truth := db + ".truth"
	pargs := append([]string{"profile", "-o", db, "--mux", "--hosts", fmt.Sprint(hosts), "--truth", truth, "--", workload}, args...)
	if _, stderr, err := run(t, pargs...); err != nil {
		t.Fatalf("dcpi %v: %v\n%s", pargs, err, stderr)
	}
	out, stderr, err := run(t, "calc", "--db", db, "--image", workload, "--all", "--truth", truth, "--json")
	if err != nil {
		t.Fatalf("calc --truth: %v\n%s", err, stderr)
	}
	var a analysis.CalcAccuracyJSON
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("calc --truth --json: %v\n%s", err, out)
	}
	return a
}

// truthFloor is a workload run whose accuracy is pinned: floors a little
// below what was measured (see each entry), so that a change to the
// estimator that makes it worse fails here.
type truthFloor struct {
	workload string
	args     []string
	hosts    int
	// within15 (instructions, by samples), edge10 (edges within 10%, by
	// executions), culprit (the culprit score).
	within15, edge10, culprit float64
}

// TestCalcTruthFloors runs dcpi profile --truth and dcpi calc --truth on
// two workloads, one host and a fleet of 3, and pins floors on the
// accuracy report (docs/dcpicalc.md, Accuracy, has the whole table).
// DCPI_CALC_TRUTH=1 adds longer runs, logged only.
func TestCalcTruthFloors(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator")
	}
	floors := []truthFloor{
		// Measured (three runs; stream's vary from run to run, a sample
		// more or less moving a class's estimate across a bucket, so its
		// floors are loose): matmul 1 host 65.1% within 15%, edges
		// 47.6%, culprits 48.6%; 3 hosts 95.8%, 95.3%, 81.2%; stream 1
		// host 41.8-67.2%, 51.0-58.8%, 24.7-41.2%; 3 hosts 76.1-88.7%,
		// 47.1-70.6%, 11.5-27.2%. Since the mux configuration turns by
		// time, the culprit scores are matmul 72.9% (1 host), 95.3% (3),
		// stream 62.2%, 59.7%; overflow-driven turns gave stream's
		// culprits under 45%, which these floors refuse. Stream on 3
		// hosts has since measured 59.4% within 15% on a loaded machine
		// (the runs are not sample-identical: see docs/dcpicalc.md), so
		// its floor is 50%.
		{"matmul", nil, 1, 0.55, 0.40, 0.60},
		{"matmul", nil, 3, 0.90, 0.90, 0.85},
		{"stream", nil, 1, 0.30, 0.35, 0.45},
		{"stream", nil, 3, 0.50, 0.35, 0.45},
	}
	if os.Getenv("DCPI_CALC_TRUTH") != "" {
		for _, w := range []string{"sort", "hashdb", "interp", "ptrchase"} {
			floors = append(floors, truthFloor{workload: w, hosts: 1}, truthFloor{workload: w, hosts: 4})
		}
	}
	dir := t.TempDir()
	for _, f := range floors {
		a := calcTruth(t, dir, f.hosts, f.workload, f.args...)
		t.Logf("%s %v on %d host(s): %.0f samples, within 5/10/15%% %.1f/%.1f/%.1f%%, edges within 10%% %.1f%%, culprit score %.1f%%, unexplained max %.1f%% overall %.1f%%",
			f.workload, f.args, f.hosts, a.Samples, 100*a.Insns.Within5, 100*a.Insns.Within10, 100*a.Insns.Within15,
			100*a.Edges.Within10, 100*a.CulpritScore, 100*a.MaxUnexplained.Share, 100*a.OverallUnexplained)
		if a.Procedures == 0 || a.Samples == 0 || len(a.Insns.Weight) != 20 {
			t.Errorf("%s: empty report %+v", f.workload, a)
		}
		for _, c := range []struct {
			what       string
			got, floor float64
		}{{"instructions within 15%", a.Insns.Within15, f.within15}, {"edges within 10%", a.Edges.Within10, f.edge10}, {"culprit score", a.CulpritScore, f.culprit}} {
			if c.got < c.floor {
				t.Errorf("%s on %d host(s): %s %.3f, floor %.3f", f.workload, f.hosts, c.what, c.got, c.floor)
			}
		}
	}
}

// TestCalcTruthErrors: a truth file that is malformed, of another
// program, or missing; and --summary with --truth.
func TestCalcTruthErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "db")
	truth := filepath.Join(dir, "truth")
	if _, stderr, err := run(t, "profile", "-o", db, "--seconds", "0.02", "--truth", truth, "--", "stream"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	other := filepath.Join(dir, "other")
	if _, stderr, err := run(t, "profile", "-o", filepath.Join(dir, "db2"), "--truth", other, "--", "tiny"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	good, err := os.ReadFile(truth)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(good), "\n")
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte(strings.Join(lines[:4], "")+"/bin/stream\tnot-an-address\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _, err := run(t, "calc", "--db", db, "--image", "stream", "--all", "--truth", truth); err != nil || !strings.Contains(out, "dcpicalc against the ground truth") {
		t.Errorf("calc --truth on its own run: %v\n%s", err, out)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--truth", bad}, []string{"--truth " + bad, "line 5"}},
		{[]string{"--truth", other}, []string{"--truth " + other, "the truth holds no image analyzed (/bin/stream)", "/bin/tiny"}},
		{[]string{"--truth", filepath.Join(dir, "nowhere")}, []string{"--truth", "no such file"}},
		{[]string{"--truth", truth, "--summary"}, []string{"--summary does not apply"}},
	} {
		args := append([]string{"calc", "--db", db, "--image", "stream", "--all"}, c.args...)
		_, _, err := run(t, args...)
		if err == nil {
			t.Errorf("dcpi %v: no error", args)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("dcpi %v: error %q, want %q in it", args, err, w)
			}
		}
	}
}
