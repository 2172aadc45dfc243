package localrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/config"
	"dcpi/conservation"
	"dcpi/simhost"
	"dcpi/storage"
)

// testConfig is a two-host run of the hello workload without the timing
// model, into out.
func testConfig(t *testing.T, out string) Config { return runConfig(t, out, "hello", 0.05) }

// runConfig is a two-host run of workload without the timing model for
// seconds of simulated time (0: until it exits), into out.
func runConfig(t *testing.T, out, workload string, seconds float64) Config {
	t.Helper()
	sim := config.Defaults().Sim
	sim.CPUs, sim.Timing = 1, false
	hc, err := simhost.MachineConfig(sim)
	if err != nil {
		t.Fatal(err)
	}
	progs, err := simhost.EmbeddedPrograms([]string{workload})
	if err != nil {
		t.Fatal(err)
	}
	simhost.InstallPrograms(&hc, progs)
	nc := simhost.DefaultConfig()
	nc.Node.Host = "alpha1"
	return Config{Machine: hc, Node: nc, Programs: progs, Hosts: 2, Seconds: seconds, Output: out}
}

// TestRunConservesAndCommits: a two-host run stores every sample its
// hardware generated or counts it as dropped, writes the database only at
// Commit (nothing at the output before), keeps the previous database as
// NAME.old on a second run, and leaves no temporary directory.
func TestRunConservesAndCommits(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "prof.db")
	for i := range 2 {
		r, err := Start(testConfig(t, out))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Wait(nil); err != nil {
			t.Fatal(err)
		}
		if got := r.Names(); len(got) != 2 || got[0] != "alpha0" || got[1] != "alpha1" {
			t.Fatalf("hosts %v", got)
		}
		lines, ok, err := r.Conservation(conservation.Views{})
		if err != nil || !ok || !strings.Contains(lines[0], ": balanced") {
			t.Fatalf("run %d: %v %v %q", i+1, err, ok, lines)
		}
		if code := r.ExitCode(); code != 0 {
			t.Fatalf("hello exited %d", code)
		}
		if _, err := os.Stat(out); (err == nil) != (i == 1) {
			t.Fatalf("run %d: before the commit, %s: %v", i+1, out, err)
		}
		kept, err := r.Commit()
		if err != nil || kept != (i == 1) {
			t.Fatalf("run %d: commit kept %v: %v", i+1, kept, err)
		}
		r.Close()
	}
	db, err := storage.Open(out+".old", storage.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("the previous profile: %v", err)
	}
	db.Close()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("left %s", e.Name())
		}
	}
}

// TestRunRefusesOtherOutputs: a file, or a directory that is not a
// profile database, is refused before anything runs, and a run closed
// without a commit leaves nothing.
func TestRunRefusesOtherOutputs(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(testConfig(t, file)); err == nil || !strings.Contains(err.Error(), "is not a dcpi profile database") {
		t.Fatalf("a file: %v", err)
	}
	other := filepath.Join(dir, "src")
	os.Mkdir(other, 0o755)
	os.WriteFile(filepath.Join(other, "main.c"), nil, 0o644)
	if _, err := Start(testConfig(t, other)); err == nil {
		t.Fatal("a directory of sources taken")
	}
	c := testConfig(t, filepath.Join(dir, "p.db"))
	c.Hosts = MaxHosts + 1
	if _, err := Start(c); err == nil {
		t.Fatal("too many hosts taken")
	}
	r, err := Start(testConfig(t, filepath.Join(dir, "p.db")))
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("an uncommitted run left files: %v", ents)
	}
}

func TestExitCode(t *testing.T) {
	for status, want := range map[int]int{0: 0, 3 << 8: 3, 9: 137, 15: 143} {
		if got := ExitCode(status); got != want {
			t.Errorf("ExitCode(%#x) = %d, want %d", status, got, want)
		}
	}
}
