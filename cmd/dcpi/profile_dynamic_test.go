package main

import (
	"os"
	"path/filepath"
	"testing"

	"dcpi/analysis/report"
	"dcpi/hwsim"
)

// TestProfileDynamicThreaded profiles a program as the cross compiler
// builds it by default — dynamically linked, four pthreads sharing a
// mutex-protected counter, per-thread libm work — on four CPUs of both
// timing models: its output is qemu-alpha's (hwsim/testdata/pthreads.out,
// made by qemu-alpha -L from the static build, which the dynamic build's
// qemu output equals), every sample is stored, and the samples land in
// the program, libc and libm as images of their own.
func TestProfileDynamicThreaded(t *testing.T) {
	if _, err := os.Stat(filepath.Join(hwsim.DefaultSysroot, "lib", "libpthread.so.0")); err != nil {
		t.Skipf("no Alpha sysroot: %v", err)
	}
	want, err := os.ReadFile("../../hwsim/testdata/pthreads.out")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := filepath.Abs("../../hwsim/testdata/pthreads-dyn")
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{"ev5", "ev6"} {
		t.Run(model, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "db")
			out, stderr, err := run(t, "profile", "-o", db, "--model", model, "--cpus", "4", "--", bin, "4", "3000")
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			if out != string(want) {
				t.Errorf("output:\n%s\nqemu-alpha's:\n%s", out, want)
			}
			checkConservation(t, stderr, db)
			var prof report.ProfTable
			toolJSON(t, &prof, "prof", "--db", db, "--json", "--by", "image", "--event", "cycles")
			got := map[string]uint64{}
			for _, r := range prof.Rows {
				got[r.Image] = r.Counts[0]
			}
			for _, im := range []string{bin, "/lib/libc.so.6.1", "/lib/libm.so.6.1"} {
				if got[im] == 0 {
					t.Errorf("no samples in %s: %v", im, got)
				}
			}
		})
	}
}
