package hwsim_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/vmunix"
	"dcpi/workloads"
)

// runFile runs testdata/NAME (built by testdata/Makefile) with args.
func runFile(t *testing.T, cfg hwsim.Config, name string, args ...string) runResult {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Files == nil {
		cfg.Files = map[string][]byte{}
	}
	cfg.Files["/bin/"+name] = data
	return runWorkload(t, cfg, name, args...)
}

func TestSystemCalls(t *testing.T) {
	cfg := hwsim.DefaultConfig()
	cfg.CPUs = 1
	r := runFile(t, cfg, "sysprobe", "syscalls")
	want := `uname Linux alpha0 alpha
pid 1 ppid 1
mmap ok sum 97920 zero 0
munmap 0
sbrk grew 1048576
clock advances 1
slept at least 5ms 1
read stdout fails -1 9
badfd -1 9
`
	if r.stdout != want {
		t.Errorf("sysprobe printed:\n%s\nwant:\n%s", r.stdout, want)
	}
	if r.status != 0 {
		t.Errorf("status %#x, want 0", r.status)
	}
}

func TestForkAndWait(t *testing.T) {
	r := runFile(t, hwsim.DefaultConfig(), "sysprobe", "fork")
	want := "child running\nwaited same 1 exited 1 status 7\nno children -1 10\n"
	if r.stdout != want {
		t.Errorf("got:\n%s\nwant:\n%s", r.stdout, want)
	}
	var kinds []string
	for _, e := range r.events {
		kinds = append(kinds, e.Kind.String())
	}
	// vmunix's map at boot, exec+map of the parent, fork of the child,
	// the child's exit, then the parent's.
	if got := strings.Join(kinds, " "); got != "map exec map fork exit exit" {
		t.Errorf("events %q, want %q", got, "map exec map fork exit exit")
	}
	if b := r.events[0]; b.Path != vmunix.Path || b.PID != 0 || b.Incarnation != 0 || b.Base < alpha.KernelBase || b.Size == 0 ||
		!strings.HasPrefix(b.ImageID, "buildid:") && !strings.HasPrefix(b.ImageID, "sha256:") {
		t.Errorf("boot event %+v, want vmunix mapped from alpha.KernelBase up, with its identity", b)
	}
}

func TestFatalSignals(t *testing.T) {
	for _, tc := range []struct {
		mode   string
		signal int
		trap   alpha.TrapKind
	}{
		{"segv", 11, alpha.TrapSegv},
		{"divzero", 8, alpha.TrapGentrap},
		{"abort", 6, alpha.TrapNone},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			r := runFile(t, hwsim.DefaultConfig(), "sysprobe", tc.mode)
			if r.status&0x7f != tc.signal {
				t.Fatalf("status %#x, want killed by signal %d", r.status, tc.signal)
			}
			faults := r.m.Faults()
			if tc.trap == alpha.TrapNone {
				if len(faults) != 0 {
					t.Fatalf("faults %v, want none for a signal the program sent itself", faults)
				}
				return
			}
			if len(faults) != 1 || faults[0].Trap.Kind != tc.trap {
				t.Fatalf("faults %v, want one %v", faults, tc.trap)
			}
		})
	}
}

func TestExitStatus(t *testing.T) {
	r := runFile(t, hwsim.DefaultConfig(), "sysprobe", "exit", "42")
	if r.status != 42<<8 {
		t.Fatalf("status %#x, want exit 42", r.status)
	}
}

// TestMissingExtensionRaisesSIGILL runs a BWX program on a 21164, which
// lacks BWX, and on a 21164A, which has it.
func TestMissingExtensionRaisesSIGILL(t *testing.T) {
	cfg := hwsim.DefaultConfig()
	r := runFile(t, cfg, "bwx")
	if r.status&0x7f != 4 {
		t.Fatalf("on ev5: status %#x, want SIGILL", r.status)
	}
	f := r.m.Faults()
	if len(f) != 1 || f[0].Trap.Kind != alpha.TrapIllegal || f[0].Trap.Word>>26 != 0x0e && f[0].Trap.Word>>26 != 0x0a {
		t.Fatalf("faults %v: want an illegal ldbu or stb", f)
	}
	cfg.Model = alpha.EV56
	r = runFile(t, cfg, "bwx")
	if r.status != 0 || r.stdout != "bwx sum 7200\n" {
		t.Fatalf("on ev56: status %#x, output %q", r.status, r.stdout)
	}
}

// TestDeterminism runs the same mix twice and requires identical output,
// events and per-CPU figures.
func TestDeterminism(t *testing.T) {
	run := func() (string, []hwsim.Event, []hwsim.CPUStats) {
		cfg := machineWithWorkloads(t, 4)
		var out bytes.Buffer
		cfg.Stdout = &out
		m, err := hwsim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var events []hwsim.Event
		m.Subscribe(hwsim.EventFunc(func(e hwsim.Event) { events = append(events, e) }))
		for _, name := range []string{"ccdriver", "hashdb", "sort", "interp", "recurse"} {
			if _, err := m.Spawn("/bin/"+name, nil, nil); err != nil {
				t.Fatal(err)
			}
		}
		m.Run(0)
		return out.String(), events, m.CPUStats()
	}
	out1, ev1, st1 := run()
	out2, ev2, st2 := run()
	if out1 != out2 {
		t.Error("outputs differ between identical runs")
	}
	if len(ev1) != len(ev2) {
		t.Fatalf("%d events, then %d", len(ev1), len(ev2))
	}
	for i := range ev1 {
		if ev1[i] != ev2[i] {
			t.Fatalf("event %d: %v, then %v", i, ev1[i], ev2[i])
		}
	}
	for i := range st1 {
		if st1[i] != st2[i] {
			t.Fatalf("cpu %d: %+v, then %+v", i, st1[i], st2[i])
		}
	}
	busy := 0
	for _, s := range st1 {
		if s.Retired > 0 {
			busy++
		}
	}
	if busy != 4 {
		t.Errorf("%d of 4 CPUs ran anything; the mix should spread", busy)
	}
}

// TestPIDReuse runs the compiler-like driver, which starts many short-lived
// processes, with a small pid_max, and checks that PIDs wrap and are reused
// only after the process holding them has exited.
func TestPIDReuse(t *testing.T) {
	cfg := machineWithWorkloads(t, 2)
	cfg.PIDMax = 400
	cfg.Timing = false // 500 processes: functional speed is enough here
	m, err := hwsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	live := map[int]bool{}
	reused := 0
	seen := map[int]bool{}
	var bad []string
	m.Subscribe(hwsim.EventFunc(func(e hwsim.Event) {
		switch e.Kind {
		case hwsim.EventFork:
			if live[e.PID] {
				bad = append(bad, e.String())
			}
			if seen[e.PID] {
				reused++
			}
			live[e.PID], seen[e.PID] = true, true
		case hwsim.EventExit:
			delete(live, e.PID)
		}
	}))
	// Start enough drivers (21 processes each) to run past pid_max.
	w, _ := workloadDefaults("ccdriver")
	for i := 0; i < 24; i++ {
		if _, err := m.Spawn("/bin/ccdriver", append([]string{"/bin/ccdriver"}, w...), nil); err != nil {
			t.Fatal(err)
		}
	}
	m.Run(0)
	if len(bad) > 0 {
		t.Fatalf("a live PID was given out again: %v", bad)
	}
	if reused == 0 {
		t.Fatalf("no PID was reused across %d processes with pid_max 400", len(seen))
	}
}

func workloadDefaults(name string) ([]string, bool) {
	for _, w := range workloads.All() {
		if w.Name == name {
			return w.DefaultArgs, true
		}
	}
	return nil, false
}
