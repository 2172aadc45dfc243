package node

import (
	"dcpi/wire"
	"testing"
)

// TestBatchFormat: the newest format a node's batches take follows its
// tables, as Ledger.DrainedAll writes them.
func TestBatchFormat(t *testing.T) {
	c := DefaultConfig()
	c.Driver.Stacks, c.Driver.Me = StackConfig{}, MeConfig{}
	if got := c.BatchFormat(); got != wire.FlatVersion {
		t.Errorf("no stacks, no ProfileMe: %d, want %d", got, wire.FlatVersion)
	}
	c.Driver.Stacks = DefaultStackConfig()
	if got := c.BatchFormat(); got != wire.StackVersion {
		t.Errorf("stacks: %d, want %d", got, wire.StackVersion)
	}
	c.Driver.Me = MeConfig{Entries: MeAssoc}
	if got := c.BatchFormat(); got != wire.MeVersion {
		t.Errorf("ProfileMe: %d, want %d", got, wire.MeVersion)
	}
}
