package oracle

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/hwsim"
	"dcpi/workloads"
)

// TestRunReportSavesWhatItReports runs hello: its output goes to the
// machine's stdout, the report is labelled ground truth, and the save
// file holds the hot path and the tree's instructions as reported.
func TestRunReportSavesWhatItReports(t *testing.T) {
	data, err := workloads.Binary("hello")
	if err != nil {
		t.Fatal(err)
	}
	hc := hwsim.DefaultConfig()
	hc.CPUs = 1
	hc.Files = map[string][]byte{"/bin/hello": data}
	var stdout bytes.Buffer
	hc.Stdout, hc.Stderr = &stdout, &stdout
	save := filepath.Join(t.TempDir(), "hello.oracle.json")
	rep, err := RunReport(Options{Machine: hc, Path: "/bin/hello", Args: []string{"hello"}, Top: 3, Save: save})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "hello, world") {
		t.Errorf("program output %q", stdout.String())
	}
	if rep.Source != Label || len(rep.Images) != 1 || len(rep.Images[0].HotPaths) == 0 || rep.Counters.Inconsistent != 0 || rep.ExitCode() != 0 {
		t.Fatalf("report: %+v", rep)
	}
	if len(rep.Images[0].HotPaths) > 3 {
		t.Errorf("%d hot paths, top 3 asked", len(rep.Images[0].HotPaths))
	}
	saved, err := os.ReadFile(save)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ReadSaved(saved)
	if err != nil {
		t.Fatal(err)
	}
	hot := rep.Images[0].HotPaths[0]
	found := false
	for _, pr := range s.Paths.Images[0].Procs {
		for _, pc := range pr.Paths {
			if pr.Entry == hot.Entry && pc.ID == hot.ID {
				found = pc.Count == hot.Count && pc.Metrics[0] == hot.Instructions
			}
		}
	}
	if !found {
		t.Errorf("hot path %s/%d (count %d) not in the save file as reported", hot.Proc, hot.ID, hot.Count)
	}
	if got := s.Trees[0].Tree.Totals()[1]; got != rep.Images[0].Instructions {
		t.Errorf("saved tree has %d instructions, report %d", got, rep.Images[0].Instructions)
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil || !strings.Contains(js.String(), `"source": "`+Label+`"`) {
		t.Errorf("JSON: %v\n%s", err, js.String())
	}
}
