package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/analysis/calc"
	"dcpi/internal/longtest"
)

// calcTruth profiles workload args on hosts hosts with the mux
// configuration and ground truth, and returns dcpi calc --truth's JSON
// report over its image. It profiles without call stacks to keep the
// draws the floors pin: the stack walk's cycles move where every later
// sample lands, another draw of the same accuracy (docs/dcpicalc.md,
// Accuracy: "Call stacks do not perturb what dcpicalc reads").
func calcTruth(t *testing.T, dir string, hosts int, workload string, args ...string) calc.ReportAccuracyJSON {
	t.Helper()
	db := filepath.Join(dir, fmt.Sprintf("%s-%d", workload, hosts))
	truth := db + ".truth"
	pargs := append([]string{"profile", "--no-stacks", "-o", db, "--mux", "--hosts", fmt.Sprint(hosts), "--truth", truth, "--", workload}, args...)
	if _, stderr, err := run(t, pargs...); err != nil {
		t.Fatalf("dcpi %v: %v\n%s", pargs, err, stderr)
	}
	out, stderr, err := run(t, "calc", "--db", db, "--image", workload, "--all", "--truth", truth, "--json")
	if err != nil {
		t.Fatalf("calc --truth: %v\n%s", err, stderr)
	}
	var a calc.ReportAccuracyJSON
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
// two workloads, one host and a fleet of 3 (stream's fleet with
// DCPI_LONG=1), and pins floors on the
// accuracy report (docs/dcpicalc.md, Accuracy, has the whole table).
// DCPI_CALC_TRUTH=1 adds longer runs, logged only.
func TestCalcTruthFloors(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator")
	}
	floors := []truthFloor{
		// A host's run is now a function of its seeds (node/lockstep.go),
		// so these are one draw each, pinned a little below what it
		// measures: matmul 1 host 98.7% within 15%, edges 94.2%,
		// culprits 72.9%; 3 hosts 96.8%, 94.2%, 95.3%; stream 1 host
		// 37.1%, 17.6%, 77.0%; 3 hosts 37.9%, 47.1%, 56.0%. Stream's
		// estimates swing with the draw (seeds 1-5 on 1 host: 37-88%
		// within 15%, edges 18-92%, culprits 38-77%: a few samples move
		// a hot loop's frequency class, and every block equivalent to it
		// moves too), so its floors pin this draw, not the estimator's
		// typical accuracy (docs/dcpicalc.md, Accuracy).
		{"matmul", nil, 1, 0.55, 0.40, 0.60},
		{"matmul", nil, 3, 0.90, 0.90, 0.85},
		{"stream", nil, 1, 0.33, 0.15, 0.70},
		{"stream", nil, 3, 0.33, 0.42, 0.50},
	}
	if !longtest.Enabled() {
		floors = floors[:3] // stream on 3 hosts, the longest (9 s), with DCPI_LONG=1
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
