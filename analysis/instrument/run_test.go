package instrument

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/analysis/paths"
	"dcpi/workloads"
)

// TestInstrumentFileAndWriteCounts: InstrumentFile names its output and
// dump after the image and mode, the summary says so, and WriteCounts
// reads the dump the program wrote by its manifest's mode: a paths-mode
// report with a saved profile, and the flags a mode does not take
// refused (before the original is read).
func TestInstrumentFileAndWriteCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a workload")
	}
	t.Chdir(t.TempDir())
	orig, err := workloads.Binary("recurse")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{ModePaths, ModePixie} {
		res, err := InstrumentFile(orig, FileOptions{Name: "/x/recurse", Options: Options{Mode: mode}})
		if err != nil {
			t.Fatal(err)
		}
		out := "recurse." + mode
		if res.Output != out || res.Manifest.DumpPath != out+".pp.out" {
			t.Fatalf("output %q dumping to %q", res.Output, res.Manifest.DumpPath)
		}
		var sum strings.Builder
		if err := res.WriteSummary(&sum); err != nil || !strings.HasPrefix(sum.String(), out+": "+mode+" mode, ") {
			t.Errorf("summary %q, %v", sum.String(), err)
		}
		dump := []byte("not read: the pixie refusals come first")
		if mode == ModePaths {
			elf, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			_, _, _, _, files := simRun(t, "recurse", elf, []string{"1"})
			dump = files[res.Manifest.DumpPath].Bytes()
		}
		if err := os.WriteFile(res.Manifest.DumpPath, dump, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	read := 0
	original := func() ([]byte, error) { read++; return orig, nil }
	var rep strings.Builder
	if err := WriteCounts(&rep, CountsOptions{Instrumented: "recurse.paths", Top: 3, Original: original, Save: "p.json"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.String(), PathsLabel) || !strings.Contains(rep.String(), "hot paths (top 3 by count)") || read != 1 {
		t.Errorf("original read %d times; report:\n%s", read, rep.String())
	}
	b, err := os.ReadFile("p.json")
	if err != nil {
		t.Fatal(err)
	}
	if p, err := paths.DecodeProfile(b); err != nil || p.Source != ProfileSource {
		t.Errorf("saved profile: %v", err)
	}

	for _, c := range []struct {
		opt  CountsOptions
		want string
	}{
		{CountsOptions{By: "calls"}, "--by is for a CCT-mode dump"},
		{CountsOptions{Original: original}, "are for a paths- or CCT-mode dump"},
		{CountsOptions{Save: "x.json"}, "are for a paths- or CCT-mode dump"},
		{CountsOptions{JSON: true}, "are for a paths- or CCT-mode dump"},
	} {
		c.opt.Instrumented = "recurse.pixie"
		if err := WriteCounts(&rep, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("pixie dump with %+v: %v", c.opt, err)
		}
	}
	if read != 1 {
		t.Errorf("original read for a refused pixie report")
	}
	if _, err := os.Stat("x.json"); err == nil {
		t.Error("a refused --save wrote its file")
	}
	if err := WriteCounts(&rep, CountsOptions{Instrumented: "recurse.pixie", Dump: filepath.Join("no", "such")}); err == nil {
		t.Error("a missing dump was read")
	}
}
