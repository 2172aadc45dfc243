package localrun

import (
	"os"
	"testing"

	"dcpi/config"
	"dcpi/simhost"
)

// TestProfileSetup: dcpi profile's programs get a CPU each unless --cpus
// was given, --no-stacks turns the stack view off, and node.values
// applies unless --values was given.
func TestProfileSetup(t *testing.T) {
	cfg := config.Defaults()
	cfg.Node.Values = "loadlat"
	var c ProfileConfig
	o := ProfileOptions{Features: simhost.Features{Events: []string{"cycles"}, Stacks: true}, Stdout: os.Stdout, Stderr: os.Stderr}
	if err := c.Setup(cfg, []string{"hello", ":", "sort"}, o); err != nil {
		t.Fatal(err)
	}
	if c.Machine.CPUs != 2 || len(c.Programs) != 2 || !c.Views.Stacks || !c.Values || c.Machine.GroundTruth {
		t.Errorf("two programs: %d CPUs, %d programs, views %+v, values %v, truth %v", c.Machine.CPUs, len(c.Programs), c.Views, c.Values, c.Machine.GroundTruth)
	}
	o.NoStacks, o.CPUsSet, o.ValuesSet = true, true, true
	c = ProfileConfig{TruthFile: "t.txt"}
	if err := c.Setup(cfg, []string{"hello"}, o); err != nil {
		t.Fatal(err)
	}
	if c.Machine.CPUs != cfg.Sim.CPUs || c.Views.Stacks || c.Values || !c.Machine.GroundTruth {
		t.Errorf("--cpus, --no-stacks, --values \"\", --truth: %d CPUs, views %+v, values %v, truth %v", c.Machine.CPUs, c.Views, c.Values, c.Machine.GroundTruth)
	}
	if err := c.Setup(cfg, []string{"hello", ":"}, o); err == nil {
		t.Error("a trailing ':' accepted")
	}
}
