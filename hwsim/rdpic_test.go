package hwsim_test

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
)

// picValues parses picprobe's "name hex" lines.
func picValues(t *testing.T, out string) map[string]uint64 {
	t.Helper()
	v := map[string]uint64{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name, hex, ok := strings.Cut(line, " ")
		n, err := strconv.ParseUint(hex, 16, 64)
		if !ok || err != nil {
			t.Fatalf("picprobe printed %q", line)
		}
		v[name] = n
	}
	return v
}

// spawnPicprobes runs one picprobe per argument list on one machine and
// returns their processes and their output (one stream for all).
func spawnPicprobes(t *testing.T, cfg hwsim.Config, argvs ...[]string) ([]*hwsim.Process, string, *hwsim.Machine) {
	t.Helper()
	data, err := os.ReadFile("testdata/picprobe")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Files = map[string][]byte{"/bin/picprobe": data}
	var all bytes.Buffer
	cfg.Stdout = &all
	m, err := hwsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var procs []*hwsim.Process
	for _, args := range argvs {
		p, err := m.Spawn("/bin/picprobe", append([]string{"/bin/picprobe"}, args...), nil)
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	if m.Run(20_000_000_000) {
		t.Fatal("picprobe did not finish")
	}
	for _, p := range procs {
		if p.ExitStatus() != 0 {
			t.Fatalf("pid %d exited with %#x; faults %v", p.PID, p.ExitStatus(), m.Faults())
		}
	}
	return procs, all.String(), m
}

// TestRdpicPerProcess runs two picprobes, each missing the D-cache on
// 0x4000 new lines between two rdpic reads, on one CPU with a time slice
// short enough that they switch several times in their loops. Each
// must see its own misses: not fewer (a count lost at a switch), and not
// the other's (counts shared by the CPU give about twice as many). The
// last read must be the process's ground truth at that point: at most the
// few events of the exit path below Process.Events at exit.
func TestRdpicPerProcess(t *testing.T) {
	cfg := hwsim.DefaultConfig()
	cfg.CPUs = 1
	// A 10 MHz clock makes the scheduler's tick (HZ 1024) 9765 cycles.
	cfg.ClockHz, cfg.Quantum, cfg.TimeSlice = 10_000_000, 2_000, 20_000
	procs, out, m := spawnPicprobes(t, cfg, []string{"4000"}, []string{"4000"})
	if cs := m.CPUStats()[0].ContextSwitches; cs < 8 {
		t.Fatalf("%d context switches: the test needs the processes interleaved", cs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 6 {
		t.Fatalf("output:\n%s", out)
	}
	var totals []uint64
	for _, l := range lines {
		name, hex, _ := strings.Cut(l, " ")
		n, err := strconv.ParseUint(hex, 16, 64)
		if err != nil {
			t.Fatalf("line %q", l)
		}
		switch name {
		case "dmiss":
			if n < 0x4000 || n > 0x4000+0x4000/16 {
				t.Errorf("a process read %d D-cache misses over its loop, want %d (+6%% for vmunix's on its behalf)", n, 0x4000)
			}
		case "dmiss_total":
			totals = append(totals, n)
		}
	}
	var truth []uint64
	for _, p := range procs {
		truth = append(truth, p.Events[alpha.EvDMiss])
	}
	if len(totals) != 2 {
		t.Fatalf("output:\n%s", out)
	}
	// Which total is whose is not printed; both orders are tried.
	near := func(read, exit uint64) bool { return read <= exit && exit-read < 100 }
	if !(near(totals[0], truth[0]) && near(totals[1], truth[1]) || near(totals[0], truth[1]) && near(totals[1], truth[0])) {
		t.Errorf("last reads %v, the processes' D-cache misses at exit %v", totals, truth)
	}
}

// TestRdpicAcrossFork: a child starts from its parent's counts, and the
// parent's do not grow by the child's misses.
func TestRdpicAcrossFork(t *testing.T) {
	cfg := hwsim.DefaultConfig()
	cfg.CPUs = 2
	_, out, _ := spawnPicprobes(t, cfg, []string{"fork", "4000"})
	v := picValues(t, out)
	if v["child_first"] < v["parent_before"] || v["child_first"]-v["parent_before"] > 100 {
		t.Errorf("the child's first read %d, the parent's before fork %d: the child does not continue its parent's counts", v["child_first"], v["parent_before"])
	}
	if v["dmiss"] < 0x4000 {
		t.Errorf("the child read %d misses over its loop, want at least %d", v["dmiss"], 0x4000)
	}
	if d := v["parent_after"] - v["parent_before"]; d > 0x4000/2 {
		t.Errorf("the parent's count grew by %d across the child's life: the child's misses leak into it", d)
	}
}

// TestRdpicEventsConfigured reads stores and loads instead; the loop
// loads once per line.
func TestRdpicEventsConfigured(t *testing.T) {
	cfg := hwsim.DefaultConfig()
	cfg.CPUs = 1
	cfg.PICEvents = []alpha.Event{alpha.EvLoads, alpha.EvDMiss}
	_, out, _ := spawnPicprobes(t, cfg, []string{"1000"})
	v := picValues(t, out)
	// "dmiss" is event A, loads here: one per line plus the loop's none.
	if v["dmiss"] != 0x1000 {
		t.Errorf("%d loads over the loop, want %d", v["dmiss"], 0x1000)
	}
	for _, bad := range [][]alpha.Event{{alpha.EvCycles, alpha.EvDMiss}, {alpha.EvDMiss, alpha.EvIssues}, {alpha.EvDMiss}, {alpha.EvDMiss, alpha.NumEvents}} {
		cfg.PICEvents = bad
		if err := cfg.Validate(); err == nil {
			t.Errorf("PIC events %v accepted", bad)
		}
	}
}

// TestRdpicIsSIGILLOnQemu: rdpic is hwsim's; qemu-alpha's PALcode, like
// Linux/Alpha's, does not know it.
func TestRdpicIsSIGILLOnQemu(t *testing.T) {
	q, err := exec.LookPath("qemu-alpha")
	if err != nil {
		t.Skip("no qemu-alpha")
	}
	err = exec.Command(q, "testdata/picprobe", "10").Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != -1 || !strings.Contains(ee.String(), "illegal instruction") {
		t.Errorf("qemu-alpha picprobe: %v, want death by SIGILL", err)
	}
}

// TestParsePICEvents: --pic's two event names, and its refusals.
func TestParsePICEvents(t *testing.T) {
	evs, err := hwsim.ParsePICEvents("dmiss, imiss")
	if err != nil || len(evs) != 2 || evs[0] != alpha.EvDMiss || evs[1] != alpha.EvIMiss {
		t.Errorf("dmiss,imiss: %v, %v", evs, err)
	}
	for _, s := range []string{"dmiss", "dmiss,imiss,cycles", "dmiss,nope"} {
		if _, err := hwsim.ParsePICEvents(s); err == nil {
			t.Errorf("%q: no error", s)
		}
	}
}
