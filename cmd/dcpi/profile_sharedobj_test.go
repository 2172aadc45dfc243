package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/analysis/report"
	"dcpi/hwsim"
	"dcpi/workloads"
)

// TestToolsOnASharedObject: the dynamically linked strproc spends much of
// its time in libc; the Alpha tools that read code — dcpi list and calc
// on the 21164's profile, dcpi me on the 21264's with ProfileMe, dcpi
// values with load latencies — each work on libc's hottest procedure,
// read from the sysroot's libc.so.6.1.
func TestToolsOnASharedObject(t *testing.T) {
	if _, err := os.Stat(filepath.Join(hwsim.DefaultSysroot, "lib", "libc.so.6.1")); err != nil {
		t.Skipf("no Alpha sysroot: %v", err)
	}
	data, err := workloads.DynamicBinary("strproc")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "strproc")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	hottest := func(db string) string {
		t.Helper()
		var prof report.ProfTable
		toolJSON(t, &prof, "prof", "--db", db, "--json", "--image", "libc.so.6.1", "--event", "cycles", "--limit", "1")
		if len(prof.Rows) == 0 || prof.Rows[0].Image != "/lib/libc.so.6.1" {
			t.Fatalf("no samples in libc: %+v", prof.Rows)
		}
		return prof.Rows[0].Procedure
	}
	ev5 := filepath.Join(dir, "ev5")
	if _, stderr, err := run(t, "profile", "-o", ev5, "--no-stacks", "--values", "loadlat", "--", bin, "200"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	proc := hottest(ev5)
	for _, c := range [][]string{
		{"list", "--db", ev5, "--image", "libc.so.6.1", proc},
		{"calc", "--db", ev5, "--image", "libc.so.6.1", proc},
		{"values", "--db", ev5, "--limit", "0"},
	} {
		out, stderr, err := run(t, c...)
		if err != nil || !strings.Contains(out, proc) || !strings.Contains(out, "libc.so.6.1") {
			t.Errorf("dcpi %s on libc's %s: %v\n%s%s", c[0], proc, err, out, stderr)
		}
	}
	ev6 := filepath.Join(dir, "ev6")
	if _, stderr, err := run(t, "profile", "-o", ev6, "--no-stacks", "--model", "ev6", "--profileme", "--", bin, "200"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	proc6 := hottest(ev6)
	out, stderr, err := run(t, "me", "--db", ev6, "--image", "libc.so.6.1", proc6)
	if err != nil || !strings.Contains(out, proc6+" (/lib/libc.so.6.1)") || strings.Contains(out, "  ?  ") {
		t.Errorf("dcpi me on libc's %s: %v\n%s%s", proc6, err, out, stderr)
	}
}
