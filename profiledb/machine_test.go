package profiledb

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dcpi/profiledb/selector"
	"dcpi/storage"
)

// TestMachineLabel: a Linux host's machine kind, under its name or the
// one databases written before it was selectable used, is selected by
// machine=, groups no simulated host with it, and makes the simulated-
// only tools refuse the database; a database of simulated hosts only
// passes.
func TestMachineLabel(t *testing.T) {
	ctx := context.Background()
	open := func(nodes ...storage.Node) *Local {
		sdb, err := storage.Open(filepath.Join(t.TempDir(), "db"), storage.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sdb.Close() })
		for _, n := range nodes {
			if err := sdb.PutNode(n); err != nil {
				t.Fatal(err)
			}
		}
		return NewLocal(sdb)
	}
	sim := storage.Node{Host: "alpha0", CPUs: 1, Labels: map[string]string{"rack": "r1"}}
	for _, name := range []string{MachineLabel, legacyMachineLabel} {
		linux := storage.Node{Host: "linux0", CPUs: 2, Labels: map[string]string{"rack": "r1", name: "linux-amd64"}}
		db := open(sim, linux)
		for sel, want := range map[string][]string{
			"machine=linux-amd64":   {"linux0"},
			`machine!~"linux.*"`:    {"alpha0"},
			"rack=r1":               {"alpha0", "linux0"},
			`machine=~"linux-.*"`:   {"linux0"},
			"machine=alpha,rack=r1": nil,
		} {
			ls, err := selector.Parse(sel)
			if err != nil {
				t.Fatal(err)
			}
			s := Selection{Labels: ls}
			err = SelectHosts(ctx, db, &s)
			if want == nil {
				if err == nil {
					t.Errorf("%s (label %s): selected %v, want none", sel, name, s.Filter.Hosts)
				}
				continue
			}
			if got := slices.Sorted(slices.Values(s.Filter.Hosts)); err != nil || !slices.Equal(got, want) {
				t.Errorf("%s (label %s): %v, %v; want %v", sel, name, got, err, want)
			}
		}
		if err := RefuseMachines(ctx, db, "dcpi-calc"); err == nil || !strings.Contains(err.Error(), "linux-amd64") {
			t.Errorf("label %s: calc on a Linux host's profile: %v", name, err)
		}
		if err := RefuseMachines(ctx, db, "dcpi-prof"); err != nil {
			t.Errorf("label %s: prof refused: %v", name, err)
		}
	}
	if err := RefuseMachines(ctx, open(sim), "dcpi-calc"); err != nil {
		t.Errorf("calc on simulated hosts: %v", err)
	}
}
