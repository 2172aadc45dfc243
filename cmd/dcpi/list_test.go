package main

import (
	"encoding/json"
	"strings"
	"testing"

	"dcpi/analysis/report"
)

func TestListCommand(t *testing.T) {
	db := nodeDB(t)
	out, _, err := run(t, "list", "--db", db, "--source-dir", "../../workloads", "sift")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Procedure sift in /bin/sort (buildid:", "disassembled from embedded /bin/sort",
		"src/sort.c:", "uint64_t child = 2 * root + 1;", "  address  cycles  instruction"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	js, _, err := run(t, "list", "--db", db, "--json", "--source=false", "--image", "/vmunix", "cpu_idle")
	if err != nil {
		t.Fatal(err)
	}
	var l report.Listing
	if err := json.Unmarshal([]byte(js), &l); err != nil {
		t.Fatal(err)
	}
	p := l.Procedures[0]
	var sum uint64
	for _, ln := range p.Lines {
		if ln.File != "" && ln.Text != "" {
			t.Errorf("--source=false shows text %q", ln.Text)
		}
		if ln.File == "" {
			sum += ln.Counts[0]
		}
	}
	if p.Image != "/vmunix" || sum != p.Counts[0] || sum == 0 {
		t.Errorf("cpu_idle: %d samples on instructions, %d in the procedure", sum, p.Counts[0])
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "requires at least 1 arg"},
		{[]string{"no_such_procedure"}, "no samples in procedure no_such_procedure"},
		{[]string{"--host", "nobody", "sift"}, "no samples in procedure sift"},
		{[]string{"unknown_rtn"}, "no instructions"},
	} {
		_, _, err := run(t, append([]string{"list", "--db", db}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("dcpi list %v: err %v, want %q", tc.args, err, tc.want)
		}
	}
}
