package simhost

import (
	"errors"
	"strings"
	"testing"
)

// TestFeaturesNodeConfig: each feature turns on what it names and
// nothing else, the flush period is in the clock's cycles, and bad
// features are refused with the flag they come from.
func TestFeaturesNodeConfig(t *testing.T) {
	c, err := Features{Events: []string{"cycles"}}.NodeConfig("alpha3", 0.1, 333_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if c.Node.Host != "alpha3" || c.FlushEvery != 33_300_000 {
		t.Errorf("host %q, flush every %d cycles; want alpha3, 33300000", c.Node.Host, c.FlushEvery)
	}
	if (c.Node.Driver.Stacks.Entries > 0) || (c.Node.Driver.Me.Entries > 0) || c.Node.Values.Module != "" || len(c.Profile.Counters) != 1 {
		t.Errorf("features off but the config has stacks %v, ProfileMe %v, values %q, %d counters",
			(c.Node.Driver.Stacks.Entries > 0), (c.Node.Driver.Me.Entries > 0), c.Node.Values.Module, len(c.Profile.Counters))
	}
	c, err = Features{Events: []string{"cycles", "imiss"}, Stacks: true, ProfileMe: true, MePaired: true, Values: "loadlat"}.NodeConfig("h", 0.1, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !(c.Node.Driver.Stacks.Entries > 0) || !(c.Node.Driver.Me.Entries > 0) || !c.ProfileMe.Paired || c.Node.Values.Module != "loadlat" || len(c.Profile.Counters) != 2 {
		t.Errorf("features on but the config has stacks %v, ProfileMe %v (paired %v), values %q, %d counters",
			(c.Node.Driver.Stacks.Entries > 0), (c.Node.Driver.Me.Entries > 0), c.ProfileMe.Paired, c.Node.Values.Module, len(c.Profile.Counters))
	}
	if _, err := (Features{Events: []string{"cycles"}, MePaired: true}).NodeConfig("h", 0.1, 1000); !errors.Is(err, ErrPairedNeedsProfileMe) {
		t.Errorf("pairs without ProfileMe: %v", err)
	}
	for f, flag := range map[*Features]string{
		{Events: []string{"cycles"}, Values: "nosuch"}: "--values",
		{Events: []string{"nosuch"}}:                   "--events",
		{}:                                             "--events",
	} {
		if _, err := f.NodeConfig("h", 0.1, 1000); err == nil || !strings.HasPrefix(err.Error(), flag) {
			t.Errorf("%+v: %v, want an error naming %s", *f, err, flag)
		}
	}
}
