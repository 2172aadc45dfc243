package main

import (
	"encoding/json"
	"strings"
	"testing"

	"dcpi/analysis/pptables/reproduce"
)

// TestPPTables: dcpi pp tables prints the four tables, --json their rows
// (analysis/pptables/reproduce's tests hold the rows to the paper's
// arithmetic), and refuses an unknown workload.
func TestPPTables(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a workload five times")
	}
	text, _, err := run(t, "pp", "tables", "ptrchase:512,100")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Table 1:", "context+HW", "Table 2:", "cycles F", "Table 4:", "Table 5:", "ptrchase"} {
		if !strings.Contains(text, s) {
			t.Errorf("the report lacks %q:\n%s", s, text)
		}
	}
	out, _, err := run(t, "pp", "tables", "--json", "ptrchase:512,100")
	if err != nil {
		t.Fatal(err)
	}
	var rows []reproduce.Row
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 1 || rows[0].Workload != "ptrchase" {
		t.Errorf("--json: %v\n%s", err, out)
	}
	if _, _, err := run(t, "pp", "tables", "nosuch"); err == nil || !strings.Contains(err.Error(), "no workload") {
		t.Errorf("an unknown workload: %v", err)
	}
}
