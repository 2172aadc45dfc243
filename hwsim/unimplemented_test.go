package hwsim_test

import (
	"strings"
	"testing"

	"dcpi/hwsim"
)

// checkImplemented fails t if the run met anything the simulated kernel
// does not implement: every committed program must run as on the real
// machine (the workload tests call it for every workload on both cores).
func checkImplemented(t *testing.T, r runResult) {
	t.Helper()
	if u := r.m.Unimplemented(); len(u) > 0 || strings.Contains(r.stderr, "hwsim: unimplemented") {
		t.Errorf("unimplemented: %v; stderr:\n%s", u, r.stderr)
	}
}

// TestUnimplementedStops: a system call the kernel lacks stops the program
// there with a one-line message naming it and SIGSYS, instead of an ENOSYS
// the real kernel would not return.
func TestUnimplementedStops(t *testing.T) {
	r := runFile(t, hwsim.DefaultConfig(), "sysprobe", "unimplemented")
	if r.stdout != "before\n" {
		t.Errorf("stdout %q, want the program stopped at the call", r.stdout)
	}
	if r.status&0x7f != 12 {
		t.Errorf("status %#x, want killed by SIGSYS (12)", r.status)
	}
	want := "hwsim: unimplemented system call socket (97) (pid 1)\n"
	if r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
	u := r.m.Unimplemented()
	if len(u) != 1 || u[0].What != "system call socket (97)" || u[0].PID != 1 {
		t.Errorf("Unimplemented() = %v", u)
	}
	if hwsim.ExitCode(r.status) == 0 {
		t.Error("exit code 0")
	}
}
