package main

import (
	"os"
	"strings"
	"testing"

	"dcpi/analysis/instrument"
	"dcpi/analysis/paths"
)

// TestPPCountsReadsAPathsDump: dcpi pp instrument --mode paths, a run on
// the simulated host, then dcpi pp counts prints the instrumented
// profile's hot paths (labelled as such, with blocks from --original) and
// --save writes a path profile the oracle's decoder reads.
func TestPPCountsReadsAPathsDump(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a workload")
	}
	t.Chdir(t.TempDir())
	if _, _, err := run(t, "pp", "instrument", "--mode", "paths", "-o", "recurse.paths", "recurse"); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "sim", "run", "--cpus", "1", "./recurse.paths", "1")
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := run(t, "sim", "run", "--cpus", "1", "recurse", "1")
	if out != want {
		t.Fatalf("instrumented output %q, original %q", out, want)
	}
	out, _, err = run(t, "pp", "counts", "--top", "3", "--original", "recurse", "--save", "p.json", "recurse.paths")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{ppPathsLabel, "hot paths (top 3 by count)", "\n      0x12", "0 lost"} {
		if !strings.Contains(out, s) {
			t.Errorf("report lacks %q:\n%s", s, out)
		}
	}
	b, err := os.ReadFile("p.json")
	if err != nil {
		t.Fatal(err)
	}
	p, err := paths.DecodeProfile(b)
	if err != nil {
		t.Fatal(err)
	}
	if p.Source != instrument.ProfileSource || len(p.Images) != 1 || len(p.Images[0].Procs) < 10 {
		t.Errorf("saved profile: source %q, %d images", p.Source, len(p.Images))
	}
	if _, _, err := run(t, "pp", "counts", "--save", "x.json", "recurse.paths", "p.json"); err == nil {
		t.Error("a file that is not a dump was read")
	}
}
