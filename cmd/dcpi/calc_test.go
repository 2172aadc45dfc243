package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestCalcCommand profiles an embedded workload into a temporary database
// and runs dcpi calc on it: the listing's and the summary's shape, the
// JSON's, and the errors. The numbers belong to the estimator (package
// analysis/calc), whose own tests judge them.
func TestCalcCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "db")
	if _, _, err := run(t, "profile", "-o", db, "--seconds", "0.02", "--", "stream"); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "calc", "--db", db, "--top", "3", "--source-dir", "../../workloads")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "\nProcedure "); n != 3 {
		t.Errorf("--top 3 printed %d procedures:\n%s", n, out)
	}
	for _, want := range []string{"dcpicalc: 3 procedure(s)", "d = D-cache miss", "s = Slotting", "*** Block 0x", "*** Best-case ",
		"Addr  Instruction", "Samples", "CPI  Culprit", "(dual issue)", "src/stream.c:", "cy?", "*** LOW CONFIDENCE for ", "*** culprits withheld",
		"% of all samples)", "in /bin/stream (buildid:"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	sum, _, err := run(t, "calc", "--db", db, "--summary")
	if err != nil {
		t.Fatal(err)
	}
	// A 0.02 s run leaves every block a few samples: the summary says so
	// and withholds its culprit rows (the rows' shape is
	// analysis/calc's golden calc_hand.txt).
	if strings.Contains(sum, "*** Block") || !strings.Contains(sum, "*** culprits withheld") || strings.Contains(sum, "*** D-cache miss") ||
		strings.Count(sum, "\nProcedure ") != 1 {
		t.Errorf("--summary (default --top 1):\n%s", sum)
	}
	js, _, err := run(t, "calc", "--db", db, "--top", "3", "--json", "--isolated")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		CyclesSamples uint64 `json:"cycles_samples"`
		Procedures    []struct {
			Procedure string
			Image     string
			Periods   map[string]float64
			Samples   map[string]float64
			Blocks    []struct{ Start, End uint64 }
			Insns     []struct {
				Addr    uint64
				Insn    string
				Samples float64
			} `json:"instructions"`
			Summary struct {
				Dynamic []struct {
					Cause  string
					Lo, Hi float64
				}
				TotalTallied float64 `json:"total_tallied"`
			}
		}
	}
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Procedures) != 3 || r.CyclesSamples == 0 {
		t.Fatalf("json: %d procedures, %d samples", len(r.Procedures), r.CyclesSamples)
	}
	for _, p := range r.Procedures {
		var s float64
		for i, in := range p.Insns {
			s += in.Samples
			if in.Insn == "" || i > 0 && in.Addr != p.Insns[i-1].Addr+4 {
				t.Errorf("%s: instruction %d: %+v", p.Procedure, i, in)
			}
		}
		if p.Periods["cycles"] <= 0 || s != p.Samples["cycles"] || s == 0 || len(p.Blocks) == 0 || len(p.Summary.Dynamic) != 10 {
			t.Errorf("%s: period %v, %v samples on instructions of %v, %d blocks, %d dynamic rows",
				p.Procedure, p.Periods, s, p.Samples, len(p.Blocks), len(p.Summary.Dynamic))
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"no_such_procedure"}, "no procedure no_such_procedure in the images with samples"},
		{[]string{"triad"}, "close names: triad.constprop.0"},
		{[]string{"--top", "0"}, "--top 0"},
		{[]string{"--top", "2", "main"}, "not several"},
		{[]string{"--event", "imiss"}, "reads every event"},
		{[]string{"--host", "nobody"}, "no samples for host nobody"},
		{[]string{"--period", "cycles"}, "want EVENT=N"},
	} {
		_, _, err := run(t, append([]string{"calc", "--db", db}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("dcpi calc %v: err %v, want %q", tc.args, err, tc.want)
		}
	}
}
