package hwsim_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
)

// runThreaded runs testdata/pthreads with args on a machine of model and
// cpus CPUs and returns the machine, its output and the exit status.
func runThreaded(t *testing.T, model alpha.Model, cpus int, timing bool, args ...string) (*hwsim.Machine, string, string, int) {
	t.Helper()
	data, err := os.ReadFile("testdata/pthreads")
	if err != nil {
		t.Fatal(err)
	}
	cfg := hwsim.DefaultConfig()
	cfg.CPUs, cfg.Model, cfg.Timing = cpus, model, timing
	cfg.Files = map[string][]byte{"/bin/pthreads": data}
	var out, errb bytes.Buffer
	cfg.Stdout, cfg.Stderr = &out, &errb
	if os.Getenv("HWSIM_TRACE") != "" {
		cfg.Trace = os.Stderr
	}
	m, err := hwsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.Spawn("/bin/pthreads", append([]string{"/bin/pthreads"}, args...), nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Run(20_000_000_000) {
		t.Fatalf("did not finish; output so far:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
	return m, out.String(), errb.String(), p.ExitStatus()
}

// TestThreadsMatchQemu runs a static pthreads program (a mutex-protected
// counter, an atomic one, per-thread libm work, a barrier, a condition
// variable, thread-local storage, join and stack reuse) on both cores with
// 1, 2 and 4 CPUs: its output must be qemu-alpha's (testdata/pthreads.out),
// with nothing unimplemented and no fault.
func TestThreadsMatchQemu(t *testing.T) {
	want, err := os.ReadFile("testdata/pthreads.out")
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range []alpha.Model{alpha.EV5, alpha.EV6} {
		for _, cpus := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%s/cpus=%d", model.Name, cpus), func(t *testing.T) {
				t.Parallel()
				m, out, stderr, status := runThreaded(t, model, cpus, true, threadedArgs...)
				if out != string(want) || status != 0 {
					t.Fatalf("status %#x, stderr %q, output:\n%s", status, stderr, firstDiff(out, string(want)))
				}
				if u := m.Unimplemented(); len(u) > 0 || len(m.Faults()) > 0 {
					t.Fatalf("unimplemented %v, faults %v", u, m.Faults())
				}
				if cpus > 1 {
					busy := 0
					for _, s := range m.CPUStats() {
						if s.User > 0 {
							busy++
						}
					}
					if busy < 2 {
						t.Errorf("threads ran on %d CPU(s) of %d", busy, cpus)
					}
				}
			})
		}
	}
}

// TestThreadsQemuReference checks the committed reference output against
// qemu-alpha itself, where it is installed.
func TestThreadsQemuReference(t *testing.T) {
	qemu, err := exec.LookPath("qemu-alpha")
	if err != nil {
		t.Skip("qemu-alpha not installed")
	}
	want, err := os.ReadFile("testdata/pthreads.out")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(qemu, append([]string{"testdata/pthreads"}, threadedArgs...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(want) {
		t.Fatalf("qemu-alpha's output differs from testdata/pthreads.out:\n%s", firstDiff(string(out), string(want)))
	}
}

var _ = strings.Contains

// threadedArgs keep the threaded program's runs short: 4 threads, 3000
// iterations of libm work each round (testdata/pthreads.out is qemu-alpha's
// output for them).
var threadedArgs = []string{"4", "3000"}
