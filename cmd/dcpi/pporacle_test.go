package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/analysis/oracle"
)

// TestPPOracle runs hello: its output passes through (to stderr with
// --json), the report is labelled ground truth and names main's paths and
// the CCT, --json prints the report and --save writes its file
// (analysis/oracle's tests hold the two to each other).
func TestPPOracle(t *testing.T) {
	out, _, err := run(t, "pp", "oracle", "--top", "3", "--", "hello")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"hello, world from a simulated Alpha\n", "# " + oracle.Label, "hot paths (top 3", "paths per procedure:", "calling context tree (Table 3):", "_start > __libc_start_main", "0 inconsistencies"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	save := filepath.Join(t.TempDir(), "hello.oracle.json")
	out, stderr, err := run(t, "pp", "oracle", "--json", "--save", save, "--", "hello")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "hello, world") {
		t.Errorf("with --json the program's output goes to stderr; stderr %q", stderr)
	}
	var rep oracle.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if rep.Source != oracle.Label || len(rep.Images) != 1 {
		t.Fatalf("report: %+v", rep)
	}
	if _, err := os.Stat(save); err != nil {
		t.Errorf("--save: %v", err)
	}
}

// TestPPOracleExitStatus: the program's exit status is dcpi's (the
// bad-input cases are testdata/cli/pp.txt).
func TestPPOracleExitStatus(t *testing.T) {
	var exit exitError
	if _, _, err := run(t, "pp", "oracle", "--", "../../hwsim/testdata/sysprobe", "exit", "3"); !errors.As(err, &exit) || exit.code != 3 {
		t.Errorf("err %v, want the program's exit status 3", err)
	}
}
