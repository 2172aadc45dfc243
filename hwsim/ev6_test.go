package hwsim_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
	"testing"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/internal/longtest"
	"dcpi/workloads"
)

// ev6Machine is machineWithWorkloads on 21264 CPUs, timed by the
// out-of-order core.
func ev6Machine(t testing.TB, cpus int) hwsim.Config {
	cfg := machineWithWorkloads(t, cpus)
	cfg.Model = alpha.EV6
	return cfg
}

// TestEV6WorkloadsMatchNativeOutput runs every embedded workload on the
// 21264 core: the timing model must not change what the programs compute.
func TestEV6WorkloadsMatchNativeOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: every workload")
	}
	for _, w := range workloads.All() {
		// CI's subset: indirect calls, strings and syscalls, FP, cache
		// misses, recursion; the 21264 core runs sort and ptrchase in
		// TestEV6CyclesSamplesMatchGroundTruth, every dynamic build in
		// TestDynamicWorkloads (functional).
		if !longtest.Keep(w.Name, "interp", "strproc", "matmul", "missloop", "recurse") {
			continue
		}
		want, wantExit, err := workloads.Expected(w.Name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(w.Name, func(t *testing.T) {
			t.Parallel()
			r := runWorkload(t, ev6Machine(t, 2), w.Name, w.DefaultArgs...)
			if r.stdout != string(want) {
				t.Errorf("stdout differs from the native build:\n%s", firstDiff(r.stdout, string(want)))
			}
			if got := r.status >> 8; got != wantExit || r.status&0x7f != 0 {
				t.Errorf("exit status %#x, want exit %d; stderr:\n%s", r.status, wantExit, r.stderr)
			}
			checkImplemented(t, r)
		})
	}
}

// TestEV6CyclesSamplesMatchGroundTruth is DCPI's premise on the 21264
// core: a CYCLES interrupt is taken at the next instruction to retire
// (HRM §5.2.7, EXC_ADDR), so samples per instruction times the mean period
// estimate the cycles it was the oldest in flight — the ground truth's
// head cycles on this core — and the totals the run's cycles.
func TestEV6CyclesSamplesMatchGroundTruth(t *testing.T) {
	// Longer periods than the 21164's test (2,800-3,200): an interrupt
	// kills the instructions in flight, and misses they would have
	// overlapped with the interrupted one's are then taken after the
	// handler, where no sample can reach them. At 3,000-cycle periods that
	// cost ptrchase's second load 12% of its expected samples
	// (docs/timing-21264.md, "Not modelled yet").
	const lo, hi = 9000, 11000
	mean := float64(lo+hi) / 2
	for _, name := range []string{"sort", "ptrchase"} {
		if !longtest.Keep(name, "ptrchase") { // CI: the misses the periods above are about; the 21164's test runs sort
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			col := &collector{}
			prof := hwsim.ProfileConfig{Counters: []hwsim.CounterSpec{
				{Events: []alpha.Event{alpha.EvCycles}, PeriodMin: lo, PeriodMax: hi}}, InterruptCycles: 214}
			cfg := ev6Machine(t, 1)
			cfg.GroundTruth = true
			m, err := hwsim.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.StartProfiling(prof, col); err != nil {
				t.Fatal(err)
			}
			spawnDefault(t, m, name)
			m.Run(0)

			truth := m.GroundTruth()["/bin/"+name]
			checkSamplesAgainstHeadCycles(t, truth, col.samples, mean, 5)
			st := m.StageTruth()["/bin/"+name]
			var retired, executed uint64
			for _, e := range st.PCs {
				retired += e.Retired
			}
			for _, e := range truth.PCs {
				executed += e.Executed
			}
			if retired != executed {
				t.Errorf("stage truth retired %d, ground truth executed %d", retired, executed)
			}
		})
	}
}

// BenchmarkTimingModels runs one workload under each timing model in the
// same run: simulated instructions per second of host time, the 21164's
// in-order issue model beside the 21264's out-of-order core.
func BenchmarkTimingModels(b *testing.B) {
	for _, model := range []alpha.Model{alpha.EV5, alpha.EV6} {
		for _, name := range []string{"matmul", "sort"} {
			b.Run(fmt.Sprintf("%s/%s", model.Name, name), func(b *testing.B) {
				var insns uint64
				var cycles uint64
				for range b.N {
					cfg := machineWithWorkloads(b, 1)
					cfg.Model = model
					r := runWorkload(b, cfg, name, mustDefaults(name)...)
					for _, s := range r.m.CPUStats() {
						insns += s.Retired
						cycles += s.User + s.Kernel
					}
				}
				b.ReportMetric(float64(insns)/b.Elapsed().Seconds()/1e6, "Minsn/s")
				b.ReportMetric(float64(cycles)/float64(insns), "CPI")
			})
		}
	}
}

func mustDefaults(name string) []string {
	args, _ := workloadDefaults(name)
	return args
}

// TestEV6TestBinariesMatch runs the test suite's own Alpha binaries (the
// kernel probes, the BWX program, elfimage's freestanding image) on a
// 21264 host timed by the out-of-order core, and requires what they print
// and their exit status to be the same as on a 21164 host (a 21164A for
// the BWX program, which a 21164 cannot run) and, for those whose output
// does not name the simulated machine, as under qemu-alpha. picprobe is
// left out: it prints the counters' own values, which differ by design.
func TestEV6TestBinariesMatch(t *testing.T) {
	for _, tc := range []struct {
		file string
		args []string
		ref  alpha.Model
		qemu bool
	}{
		{"testdata/sysprobe", []string{"syscalls"}, alpha.EV5, false},
		{"testdata/sysprobe", []string{"fork"}, alpha.EV5, false},
		{"testdata/sysprobe", []string{"exit", "42"}, alpha.EV5, true},
		{"testdata/sysprobe", []string{"segv"}, alpha.EV5, false},
		{"testdata/sysprobe", []string{"divzero"}, alpha.EV5, false},
		{"testdata/bwx", nil, alpha.EV56, true},
		{"elfimage/testdata/free", nil, alpha.EV5, true},
	} {
		name := path.Base(tc.file)
		t.Run(strings.Join(append([]string{name}, tc.args...), "_"), func(t *testing.T) {
			data, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			on := func(model alpha.Model) runResult {
				cfg := hwsim.DefaultConfig()
				cfg.CPUs, cfg.Model = 2, model
				cfg.Files = map[string][]byte{"/bin/" + name: data}
				return runWorkload(t, cfg, name, tc.args...)
			}
			want, got := on(tc.ref), on(alpha.EV6)
			if got.stdout != want.stdout || got.status != want.status {
				t.Errorf("on ev6: status %#x, stdout:\n%s\non %v: status %#x, stdout:\n%s", got.status, got.stdout, tc.ref, want.status, want.stdout)
			}
			if !tc.qemu {
				return
			}
			q, err := exec.LookPath("qemu-alpha")
			if err != nil {
				return // the simulators agree; qemu is not installed
			}
			var out bytes.Buffer
			cmd := exec.Command(q, append([]string{tc.file}, tc.args...)...)
			cmd.Stdout = &out
			err = cmd.Run()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if out.String() != got.stdout || code != got.status>>8 {
				t.Errorf("on ev6: exit %d, stdout %q; qemu-alpha: exit %d, stdout %q", got.status>>8, got.stdout, code, out.String())
			}
		})
	}
}

// TestEV6IPCSeries checks each 21264 CPU's IPC over time: its windows
// add up to the CPU's retired instructions, and they follow the program's
// phases — micro's execution loops run above one instruction a cycle, its
// M-M loop (2.7 M cycles at scale 2, a memory latency per load) far
// below.
func TestEV6IPCSeries(t *testing.T) {
	r := runWorkload(t, ev6Machine(t, 1), "micro", "2")
	series := r.m.IPC()
	if len(series) != 1 || series[0].Window == 0 {
		t.Fatalf("IPC series %v, want one CPU's", series)
	}
	s := series[0]
	var sum uint64
	lo, hi := 1e9, 0.0
	for i, n := range s.Retired {
		sum += n
		if i < len(s.Retired)-1 { // the last window is partial
			ipc := float64(n) / float64(s.Window)
			lo, hi = min(lo, ipc), max(hi, ipc)
		}
	}
	if got := r.m.CPUStats()[0].Retired; sum != got {
		t.Errorf("the series counts %d retires, the CPU %d", sum, got)
	}
	if hi < 1 || lo > 0.1 {
		t.Errorf("IPC per window from %.3f to %.3f: want a window above 1 and one below 0.1", lo, hi)
	}
}
