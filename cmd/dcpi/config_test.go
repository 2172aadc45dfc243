package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestConfigReadOrRefused: --config is read or refused, never ignored.
// Every command noConfig names exists (a renamed command would drop out
// of the refusal silently), and refuses it before doing anything; a tool
// reading a local database refuses it; a tool reading the cluster fails
// on a configuration that does not load rather than fall back to the
// defaults.
func TestConfigReadOrRefused(t *testing.T) {
	paths := map[string]bool{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		paths[c.CommandPath()] = true
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCommand())
	for p := range noConfig {
		if !paths[p] {
			t.Errorf("noConfig names %q, which is no command", p)
		}
	}
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfg, []byte("sim:\n  cpus: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"nats-server", "--config", cfg, "--dir", t.TempDir()},
		{"demo", "--config", cfg},
		{"prof", "--db", t.TempDir(), "--config", cfg},
		{"web", "--db", t.TempDir(), "--config", cfg, "--addr", "127.0.0.1:0"},
	} {
		_, _, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), "reads no configuration file") {
			t.Errorf("dcpi %s: %v, want --config refused", strings.Join(args, " "), err)
		}
	}
	_, _, err := run(t, "prof", "--nats", "nats://127.0.0.1:1", "--config", filepath.Join(t.TempDir(), "absent.yaml"))
	if err == nil || !strings.Contains(err.Error(), "absent.yaml") {
		t.Errorf("prof --nats with a missing --config: %v, want an error naming it", err)
	}
}
