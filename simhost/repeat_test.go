package simhost

import (
	"reflect"
	"testing"

	"dcpi/hwsim"
	"dcpi/node"
	"dcpi/workloads"
)

// TestRunsRepeat: a host run is a function of its configuration and seeds.
// Four CPUs with small buffers make the daemon drain often (buffer-full
// wake-ups, periodic full drains, IPIs racing samples); two runs must
// publish the same batches, sample for sample, and their machines must
// agree on every CPU's figures. Without the lockstep (node/lockstep.go)
// the daemon's IPIs land whenever the Go scheduler runs it, and the runs
// differ.
func TestRunsRepeat(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator twice")
	}
	run := func() ([]hwsim.CPUStats, *node.MemPublisher) {
		cfg := hwsim.DefaultConfig()
		cfg.CPUs = 4
		cfg.Files = map[string][]byte{}
		names := []string{"hashdb", "interp", "sort", "ccdriver"}
		for _, name := range names {
			data, _ := workloads.Binary(name)
			cfg.Files["/bin/"+name] = data
		}
		m, err := hwsim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ncfg := DefaultConfig()
		ncfg.Node.Driver.TableEntries, ncfg.Node.Driver.BufferEntries = 256, 64
		ncfg.Profile.Counters[0].PeriodMin, ncfg.Profile.Counters[0].PeriodMax = 3000, 3400
		ncfg.FlushEvery = 2_000_000
		pub := &node.MemPublisher{}
		h, err := New(m, ncfg, pub)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			args, _ := workloadArgs(name)
			if _, err := m.Spawn("/bin/"+name, append([]string{"/bin/" + name}, args...), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.Run(20_000_000); err != nil {
			t.Fatal(err)
		}
		return m.CPUStats(), pub
	}
	stats1, pub1 := run()
	stats2, pub2 := run()
	if !reflect.DeepEqual(stats1, stats2) {
		t.Errorf("the machines differ:\n%+v\n%+v", stats1, stats2)
	}
	b1, b2 := pub1.Batches(), pub2.Batches()
	if len(b1) < 20 {
		t.Fatalf("only %d batches: the test wants many drains", len(b1))
	}
	if len(b1) != len(b2) {
		t.Fatalf("%d batches, then %d", len(b1), len(b2))
	}
	for i := range b1 {
		if !reflect.DeepEqual(b1[i], b2[i]) {
			t.Fatalf("batch %d differs:\n%+v\n%+v", i, b1[i], b2[i])
		}
	}
}
