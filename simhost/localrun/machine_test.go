package localrun

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"dcpi/config"
	"dcpi/node"
	"dcpi/simhost"
)

// TestMachine: a local node's machine and driver are the configuration's
// with the options' table shape, periods and counters, and a user's
// program's output reaches Stdout while an embedded workload's does not.
func TestMachine(t *testing.T) {
	cfg := config.Defaults()
	cfg.Sim.Hostname, cfg.Sim.CPUs = "beta", 2
	cfg.Node.PublishEvery = 0.5
	cfg.Node.Stacks, cfg.Node.ProfileMe = true, true
	progs, err := simhost.EmbeddedPrograms([]string{"sort"})
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	hc, ncfg, err := Machine(cfg, progs, MachineOptions{TableEntries: 1024, Assoc: 8, Policy: "swap-to-front", FlushEvery: 0.1,
		Events: []string{"cycles", "imiss"}, Stdout: &out, Stderr: &errOut})
	if err != nil {
		t.Fatal(err)
	}
	d := ncfg.Node.Driver
	if hc.CPUs != 2 || ncfg.Node.Host != "beta" || d.TableEntries != 1024 || d.Assoc != 8 || d.Policy != node.SwapToFront {
		t.Errorf("machine %d CPUs, host %q, driver %+v", hc.CPUs, ncfg.Node.Host, d)
	}
	if ncfg.FlushEvery != 33_300_000 || ncfg.Node.PublishEvery != 166_500_000 {
		t.Errorf("flush every %d cycles, publish every %d; want 33300000 and 166500000 at 333 MHz", ncfg.FlushEvery, ncfg.Node.PublishEvery)
	}
	if d.Stacks != node.DefaultStackConfig() || d.Me != node.DefaultMeConfig() || len(ncfg.Profile.Counters) != 2 {
		t.Errorf("stacks %+v, ProfileMe %+v, %d counters", d.Stacks, d.Me, len(ncfg.Profile.Counters))
	}
	if hc.Stdout != io.Discard || hc.Stderr != &errOut {
		t.Error("an embedded workload's output is not discarded, or its errors do not reach Stderr")
	}

	// Defaults where the options say nothing; a user's program's output
	// is the user's.
	cfg = config.Defaults()
	user := []simhost.Program{{Given: "./p", Path: "/tmp/p", Argv: []string{"/tmp/p"}, Data: []byte{0}}}
	hc, ncfg, err = Machine(cfg, user, MachineOptions{Events: []string{"cycles"}, Stdout: &out, Stderr: &errOut})
	if err != nil {
		t.Fatal(err)
	}
	def := simhost.DefaultConfig().Node.Driver
	if d := ncfg.Node.Driver; d.TableEntries != def.TableEntries || d.Assoc != def.Assoc || d.Policy != def.Policy || d.Stacks.Depth != 0 {
		t.Errorf("driver %+v, want the defaults %+v", d, def)
	}
	if hc.Stdout != &out {
		t.Error("a user's program's output does not reach Stdout")
	}

	for _, tc := range []struct {
		o    MachineOptions
		mod  func(*config.Config)
		want string
	}{
		{MachineOptions{Policy: "lru", Events: []string{"cycles"}}, nil, `unknown replacement policy "lru"`},
		{MachineOptions{Events: []string{"bogus"}}, nil, `unknown event "bogus"`},
		{MachineOptions{Events: []string{"cycles"}}, func(c *config.Config) { c.Node.Values = "nosuch" }, "nosuch"},
		{MachineOptions{Events: []string{"cycles"}}, func(c *config.Config) { c.Sim.Model = "ev99" }, "ev99"},
	} {
		cfg := config.Defaults()
		if tc.mod != nil {
			tc.mod(&cfg)
		}
		if _, _, err := Machine(cfg, progs, tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
}
