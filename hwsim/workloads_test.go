package hwsim_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/internal/longtest"
	"dcpi/workloads"
)

// machineWithWorkloads returns a machine config with every embedded
// workload at /bin/NAME.
func machineWithWorkloads(t testing.TB, cpus int) hwsim.Config {
	t.Helper()
	cfg := hwsim.DefaultConfig()
	cfg.CPUs = cpus
	cfg.Files = map[string][]byte{}
	for _, w := range workloads.All() {
		data, err := workloads.Binary(w.Name)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Files["/bin/"+w.Name] = data
	}
	return cfg
}

type runResult struct {
	stdout, stderr string
	status         int
	m              *hwsim.Machine
	events         []hwsim.Event
}

func runWorkload(t testing.TB, cfg hwsim.Config, name string, args ...string) runResult {
	t.Helper()
	var out, errb bytes.Buffer
	cfg.Stdout, cfg.Stderr = &out, &errb
	m, err := hwsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var events []hwsim.Event
	m.Subscribe(hwsim.EventFunc(func(e hwsim.Event) { events = append(events, e) }))
	path := "/bin/" + name
	p, err := m.Spawn(path, append([]string{path}, args...), []string{"PATH=/bin"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Run(200_000_000_000) {
		t.Fatalf("%s did not finish", name)
	}
	return runResult{stdout: out.String(), stderr: errb.String(), status: p.ExitStatus(), m: m, events: events}
}

// TestWorkloadsMatchNativeOutput runs every embedded workload with its
// default arguments on 1 and on 4 CPUs and compares its output with the
// same source compiled for the host (workloads/expected).
func TestWorkloadsMatchNativeOutput(t *testing.T) {
	for _, w := range workloads.All() {
		want, wantExit, err := workloads.Expected(w.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, cpus := range []int{1, 4} {
			// Four CPUs in CI for the programs that run processes or
			// threads of their own; every one with DCPI_LONG=1.
			if cpus == 4 && !longtest.Keep(w.Name, "ccdriver", "server", "hashdb", "sort") {
				continue
			}
			t.Run(fmt.Sprintf("%s/cpus=%d", w.Name, cpus), func(t *testing.T) {
				t.Parallel()
				r := runWorkload(t, machineWithWorkloads(t, cpus), w.Name, w.DefaultArgs...)
				if r.stdout != string(want) {
					t.Errorf("stdout differs from the native build:\n%s", firstDiff(r.stdout, string(want)))
				}
				if got := r.status >> 8; got != wantExit || r.status&0x7f != 0 {
					t.Errorf("exit status %#x, want exit %d; stderr:\n%s", r.status, wantExit, r.stderr)
				}
				if faults := r.m.Faults(); len(faults) > 0 {
					t.Errorf("faults: %v", faults)
				}
				checkImplemented(t, r)
			})
		}
	}
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n  got  %q\n  want %q", i+1, gl, wl)
		}
	}
	return "(identical lines; lengths differ)"
}

// BenchmarkMachine runs whole workloads through the machine — interpreter,
// vmunix, page faults, scheduling — functionally (one cycle per
// instruction), with the 21164 timing model and with the 21264's
// out-of-order core (core=ev6), and reports simulated instructions per
// second of host time. README's whole-machine rows are these.
func BenchmarkMachine(b *testing.B) {
	for _, mode := range []string{"timing=false", "timing=true", "core=ev6"} {
		for _, name := range []string{"matmul", "hashdb", "ccdriver"} {
			b.Run(name+"/"+mode, func(b *testing.B) {
				cfg := machineWithWorkloads(b, 1)
				cfg.Timing = mode != "timing=false"
				if mode == "core=ev6" {
					cfg.Model = alpha.EV6
				}
				args, _ := workloadDefaults(name)
				b.ReportAllocs()
				var insns uint64
				for i := 0; i < b.N; i++ {
					r := runWorkload(b, cfg, name, args...)
					for _, c := range r.m.CPUStats() {
						insns += c.Retired
					}
				}
				b.ReportMetric(float64(insns)/b.Elapsed().Seconds()/1e6, "Minsn/s")
			})
		}
	}
}
