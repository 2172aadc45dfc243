package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestDefaultsAreValid(t *testing.T) {
	c, err := NewLoader().Load("")
	if err != nil {
		t.Fatal(err)
	}
	if c.Sim.CPUs != 4 || c.Sim.Model != "ev5" || c.Sim.ClockMHz != 333 || !c.Sim.Timing {
		t.Fatalf("defaults %+v", c.Sim)
	}
}

func TestPrecedenceFileEnvFlag(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	os.WriteFile(file, []byte("sim:\n  cpus: 2\n  seed: 9\n  model: ev56\n  memory:\n    bcache_size: 1048576\n"), 0o644)
	t.Setenv("DCPI_SIM_SEED", "11")
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.String("model", "ev5", "")
	fs.Parse([]string{"--model", "ev6"})
	l := NewLoader()
	if err := l.BindFlag("sim.model", fs.Lookup("model")); err != nil {
		t.Fatal(err)
	}
	c, err := l.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if c.Sim.CPUs != 2 || c.Sim.Seed != 11 || c.Sim.Model != "ev6" {
		t.Fatalf("got cpus %d seed %d model %s; want 2 (file), 11 (env), ev6 (flag)", c.Sim.CPUs, c.Sim.Seed, c.Sim.Model)
	}
	if c.Sim.Memory["bcache_size"] == nil {
		t.Fatalf("sim.memory not passed through: %v", c.Sim.Memory)
	}
}

func TestBadConfigNamesTheKey(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ body, want string }{
		{"sim:\n  cpus: 0\n", "sim.cpus = 0"},
		{"sim:\n  cpu: 2\n", `unknown key "sim.cpu"`},
		{"sim:\n  cpus: [\n", "c.yaml"},
		{"sim:\n  pid_max: 100\n", "sim.pid_max = 100"},
		{"sim:\n  quantum: 5000\n  time_slice: 100\n", "sim.time_slice = 100"},
	} {
		file := filepath.Join(dir, "c.yaml")
		os.WriteFile(file, []byte(tc.body), 0o644)
		_, err := NewLoader().Load(file)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want one mentioning %q", tc.body, err, tc.want)
		}
	}
	if _, err := NewLoader().Load(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("a missing file loaded")
	}
}
