package main

import (
	"encoding/json"
	"strings"
	"testing"

	"dcpi/profiledb"
)

// TestTotalsCommand: dcpi totals --db prints the line (the sums are
// profiledb.TestReadTotals'), --json the object on standard output with
// the hint on standard error, and refuses --db with --nats.
func TestTotalsCommand(t *testing.T) {
	dir := stacksDB(t)
	out, _, err := run(t, "totals", "--db", dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := "100 samples stored, 0 unknown, 0 dropped (no drop counter is nonzero); 100 in all\n"; out != want {
		t.Errorf("got %q, want %q", out, want)
	}
	out, errOut, err := run(t, "totals", "--db", dir, "--host", "nosuch", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var tot profiledb.Totals
	if err := json.Unmarshal([]byte(out), &tot); err != nil || tot.Total != 0 {
		t.Errorf("--json %v: %q", err, out)
	}
	if !strings.Contains(errOut, "no samples for host nosuch") {
		t.Errorf("stderr %q", errOut)
	}
	if _, _, err := run(t, "totals", "--db", dir, "--nats", "nats://127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "none of the others can be") {
		t.Errorf("--db with --nats: %v", err)
	}
}
