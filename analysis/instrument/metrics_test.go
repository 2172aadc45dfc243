package instrument

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/analysis/paths"
	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/workloads"
)

// RdpicCost is the cycles of the rdpic call alone (hwsim's model): the
// least a path end costs.
const RdpicCost = alpha.RdpicCycles

// runForMetrics runs image as /bin/name on a one-CPU hwsim (rdpic's
// default events: dmiss, imiss) and returns its output, its process and
// the dump it wrote.
func runForMetrics(t *testing.T, name string, image []byte, args []string) (stdout []byte, p *hwsim.Process, dump []byte) {
	t.Helper()
	path := "/bin/" + name
	c := hwsim.DefaultConfig()
	c.CPUs = 1
	c.Files = map[string][]byte{path: image}
	var so, se bytes.Buffer
	c.Stdout, c.Stderr = &so, &se
	fs := &appendFiles{files: map[string]*bytes.Buffer{}}
	c.OpenAppend = fs.open
	m, err := hwsim.New(c)
	if err != nil {
		t.Fatal(err)
	}
	p, err = m.Spawn(path, append([]string{path}, args...), []string{"PATH=/bin"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Run(200_000_000_000) {
		t.Fatalf("%s did not finish", name)
	}
	if f := m.Faults(); len(f) > 0 {
		t.Fatalf("%s faulted: %v (stderr %q)", name, f, se.String())
	}
	if d := fs.files["pp.out"]; d != nil {
		dump = d.Bytes()
	}
	return so.Bytes(), p, dump
}

// procPaths returns the paths of the procedure named name.
func procPaths(t *testing.T, prof *paths.Profile, name string) []paths.PathCount {
	t.Helper()
	for _, pr := range prof.Images[0].Procs {
		if pr.Name == name {
			return pr.Paths
		}
	}
	t.Fatalf("no paths of %s", name)
	return nil
}

// sumMetrics returns the count and the metrics summed over ps.
func sumMetrics(ps []paths.PathCount) (count uint64, m [3]uint64) {
	for _, p := range ps {
		count += p.Count
		for i := range m {
			m[i] += p.Metrics[i]
		}
	}
	return count, m
}

// TestPathMetrics instruments ptrchase with metrics and runs it on hwsim.
// chase's loop takes dependent loads from random nodes of a 512 KB ring,
// 64 times the D-cache: its paths must hold the D-cache misses the
// original's chase takes (hwsim's ground truth of the uninstrumented run,
// the reference), plus the few the instrumentation's own loads take (its
// slot and counters evicted by the ring), and at least the original's
// cycles. main's paths exclude their callees' (chase's) events, and all
// paths together hold most of what the process took, never more. A delta
// taken the wrong way round, a start not stored, a caller not paused or
// resumed, or metrics added to the wrong path fail one of these; the path
// counts must still equal the paths mode's without metrics.
func TestPathMetrics(t *testing.T) {
	const steps = 20000
	args := []string{"16384", "20000"}
	orig, err := workloads.Binary("ptrchase")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Instrument(orig, "ptrchase", Options{Mode: ModePaths, DumpPath: "pp.out", Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Manifest.Metrics; len(got) != 3 || got[0] != "cycles" || got[1] != "dmiss" || got[2] != "imiss" {
		t.Fatalf("manifest metrics %v", got)
	}
	wantOut, _, truth, _, _ := simRunTimed(t, "ptrchase", orig, args)
	out, p, dump := runForMetrics(t, "ptrchase", res.ELF, args)
	if !bytes.Equal(out, wantOut) {
		t.Fatalf("output %q, want the original's %q", out, wantOut)
	}
	got, err := ReadPaths(res.ELF, dump)
	if err != nil {
		t.Fatal(err)
	}
	if m := got.Profile.Metrics; len(m) != 3 {
		t.Fatalf("profile metrics %v", m)
	}

	// The original's chase, by ground truth (the reference only): it
	// calls nothing, so its instructions' events are all it takes.
	var orig0 [3]uint64
	for _, pi := range res.Manifest.Procs {
		if pi.Name != "chase" {
			continue
		}
		for pc := pi.Start; pc < pi.End; pc += 4 {
			if e := truth.PCs[pc]; e != nil {
				orig0[0] += e.HeadCycles
				orig0[1] += e.Events[alpha.EvDMiss]
				orig0[2] += e.Events[alpha.EvIMiss]
			}
		}
	}
	if orig0[1] < steps {
		t.Fatalf("the original's chase took %d D-cache misses in %d steps: the test's premise fails", orig0[1], steps)
	}
	n, chase := sumMetrics(procPaths(t, got.Profile, "chase"))
	if n < steps || n > steps+2 {
		t.Errorf("chase ran %d paths, want one a step and its exit", n)
	}
	if chase[1] < orig0[1] || chase[1] > orig0[1]+orig0[1]/10 {
		t.Errorf("chase's paths took %d D-cache misses; the original's chase %d, want that plus at most 10%% (the instrumentation's own)", chase[1], orig0[1])
	}
	if chase[0] < orig0[0] {
		t.Errorf("chase's paths took %d cycles, fewer than the original's chase %d", chase[0], orig0[0])
	}
	// Paths are intraprocedural (sec. 3.1): main's paths hold none of its
	// callee chase's misses, so far fewer than chase's.
	_, main := sumMetrics(procPaths(t, got.Profile, "main"))
	if main[1] >= chase[1]/4 {
		t.Errorf("main's own paths took %d D-cache misses, chase's %d: a callee's events counted in its caller", main[1], chase[1])
	}
	// Every cycle and event from the first instrumented entry on falls in
	// one path of the activation running it, except the dump's own
	// (exit's activation never ends: most of the process's vmunix time,
	// writing 3 MB of counters): the paths hold no more than the process
	// took, and their cycles are its user cycles give or take the
	// start-up before the first entry and vmunix's time during the run.
	var all [3]uint64
	for _, pr := range got.Profile.Images[0].Procs {
		_, m := sumMetrics(pr.Paths)
		for i := range all {
			all[i] += m[i]
		}
	}
	truthTotals := [3]uint64{p.Cycles, p.Events[alpha.EvDMiss], p.Events[alpha.EvIMiss]}
	for i, name := range got.Profile.Metrics {
		if all[i] > truthTotals[i] {
			t.Errorf("%s: all paths hold %d, more than the process took, %d", name, all[i], truthTotals[i])
		}
	}
	if user := p.Cycles - p.KernelCycles; all[0] < user-user/10 || all[0] > user+user/10 {
		t.Errorf("all paths took %d cycles, the process %d in user mode: want those within 10%%", all[0], user)
	}
	t.Logf("process: %v (cycles, dmiss, imiss), user cycles %d; all paths %v; main's %v; chase's %v over %d paths; the original's chase %v", truthTotals, p.Cycles-p.KernelCycles, all, main, chase, n, orig0)

	// Every path execution takes cycles (an rpcc and an rdpic at least)
	// and fewer misses than cycles, in arrays and in the hash table
	// (glibc's _int_malloc and others have too many paths for an array).
	hashed := map[uint64]bool{}
	for _, pi := range res.Manifest.Procs {
		hashed[pi.Start] = pi.Hashed
	}
	var fromHash int
	for _, pr := range got.Profile.Images[0].Procs {
		for _, x := range pr.Paths {
			if hashed[pr.Entry] {
				fromHash++
			}
			if x.Metrics[0] < RdpicCost*x.Count || x.Metrics[1] > x.Metrics[0] || x.Metrics[2] > x.Metrics[0] {
				t.Errorf("%s path %d: %d executions took %v (cycles, dmiss, imiss)", pr.Name, x.ID, x.Count, x.Metrics)
			}
		}
	}
	if fromHash == 0 {
		t.Error("no path of a hashed procedure ran: the hash table's metrics are untested")
	}

	// The counts are the paths mode's.
	plain, err := Instrument(orig, "ptrchase", Options{Mode: ModePaths, DumpPath: "pp.out"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, plainDump := runForMetrics(t, "ptrchase", plain.ELF, args)
	want, err := ReadPaths(plain.ELF, plainDump)
	if err != nil {
		t.Fatal(err)
	}
	counts := func(pr *paths.Profile) map[[2]uint64]uint64 {
		c := map[[2]uint64]uint64{}
		for _, p := range pr.Images[0].Procs {
			for _, x := range p.Paths {
				c[[2]uint64{p.Entry, x.ID}] = x.Count
			}
		}
		return c
	}
	g, w := counts(got.Profile), counts(want.Profile)
	if len(g) != len(w) {
		t.Errorf("%d paths with metrics, %d without", len(g), len(w))
	}
	for k, v := range w {
		if g[k] != v {
			t.Errorf("procedure %#x path %d: %d with metrics, %d without", k[0], k[1], g[k], v)
		}
	}
}

// TestMetricsAreHwsimOnly: a binary with metrics (paths mode, or the CCT
// mode) calls rdpic, which qemu-alpha (like Linux/Alpha's PALcode) does
// not define: it dies of SIGILL there, where the same mode without
// metrics runs.
func TestMetricsAreHwsimOnly(t *testing.T) {
	qemu, err := exec.LookPath("qemu-alpha")
	if err != nil {
		t.Skip("qemu-alpha not installed")
	}
	orig, _ := workloads.Binary("tiny")
	dir := t.TempDir()
	run := func(image []byte) error {
		path := filepath.Join(dir, "tiny")
		if err := os.WriteFile(path, image, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(qemu, "-cpu", "ev5", path)
		cmd.Dir = dir
		return cmd.Run()
	}
	for _, mode := range []string{ModePaths, ModeCCT} {
		for _, metrics := range []bool{false, true} {
			res, err := Instrument(orig, "tiny", Options{Mode: mode, DumpPath: "pp.out", Metrics: metrics})
			if err != nil {
				t.Fatal(err)
			}
			err = run(res.ELF)
			if !metrics {
				if err != nil {
					t.Fatalf("tiny in %s mode without metrics on qemu-alpha: %v", mode, err)
				}
				continue
			}
			ee, ok := err.(*exec.ExitError)
			if !ok || !strings.Contains(ee.String(), "illegal instruction") {
				t.Errorf("tiny in %s mode with metrics on qemu-alpha: %v, want death by SIGILL", mode, err)
			}
		}
	}
}

// TestMetricsOptionsRefused: metrics outside the paths mode, and PIC
// events that are not two distinct named events, are refused.
func TestMetricsOptionsRefused(t *testing.T) {
	orig, err := workloads.Binary("tiny")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{
		{Mode: ModePixie, Metrics: true},
		{Mode: ModePaths, Metrics: true, PIC: [2]string{"cycles", "dmiss"}},
		{Mode: ModePaths, Metrics: true, PIC: [2]string{"dmiss", "dmiss"}},
		{Mode: ModePaths, Metrics: true, PIC: [2]string{"dmiss", ""}},
	} {
		o.DumpPath = "pp.out"
		if _, err := Instrument(orig, "tiny", o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
