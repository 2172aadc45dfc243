package instrument

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/analysis/cct"
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

// TestWriteCountsCCT: a CCT-mode dump's report as JSON agrees with the
// tree --save writes; --original (without --paths) and a metric the tree
// lacks are refused, the original unread and nothing saved.
func TestWriteCountsCCT(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a workload")
	}
	t.Chdir(t.TempDir())
	orig, err := workloads.Binary("recurse")
	if err != nil {
		t.Fatal(err)
	}
	res, err := InstrumentFile(orig, FileOptions{Name: "recurse", Options: Options{Mode: ModeCCT}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, _, files := simRun(t, "recurse", res.ELF, []string{"1"})
	if err := os.WriteFile(res.Manifest.DumpPath, files[res.Manifest.DumpPath].Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	read := 0
	original := func() ([]byte, error) { read++; return orig, nil }
	for _, c := range []struct {
		opt  CountsOptions
		want string
	}{
		{CountsOptions{Original: original, Save: "x.json"}, "--original is for a paths-mode dump"},
		{CountsOptions{By: "nosuch", Save: "x.json"}, "the tree's metrics are calls"},
	} {
		c.opt.Instrumented = res.Output
		if err := WriteCounts(io.Discard, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.opt, err, c.want)
		}
	}
	if _, err := os.Stat("x.json"); read != 0 || err == nil {
		t.Errorf("refused reports read the original %d times, saved: %v", read, err == nil)
	}

	var out bytes.Buffer
	if err := WriteCounts(&out, CountsOptions{Instrumented: res.Output, Top: 2, Save: "c.json", JSON: true}); err != nil {
		t.Fatal(err)
	}
	var rep CCTReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Source != CCTLabel {
		t.Fatalf("JSON report: %v\n%s", err, out.String())
	}
	b, err := os.ReadFile("c.json")
	if err != nil {
		t.Fatal(err)
	}
	id, tree, err := ReadSavedCCT(b)
	if err != nil {
		t.Fatal(err)
	}
	if id != rep.ID || tree.Stats(cct.Layout{}).Nodes != rep.Contexts || tree.Totals()[0] != rep.Calls {
		t.Errorf("saved tree %s: %d records, %d calls; report %s: %d contexts, %d calls", id, tree.Stats(cct.Layout{}).Nodes, tree.Totals()[0], rep.ID, rep.Contexts, rep.Calls)
	}
}
