package simhost

import (
	"reflect"
	"testing"

	"dcpi/hwsim"
	"dcpi/internal/racedetect"
	"dcpi/node"
)

// TestRunsRepeat: a host run is a function of its configuration and seeds.
// Four CPUs with small buffers make the daemon drain often (buffer-full
// wake-ups, periodic full drains, IPIs racing samples); two runs must
// publish the same batches, sample for sample, and their machines must
// agree on every CPU's figures. Without the lockstep (node/lockstep.go)
// the daemon's IPIs land whenever the Go scheduler runs it, and the runs
// differ.
func TestRunsRepeat(t *testing.T) {
	if racedetect.Enabled {
		t.Skip("determinism of the simulation, checked in the plain run; slow under the race detector")
	}
	if testing.Short() {
		t.Skip("runs the simulator twice")
	}
	run := func() ([]hwsim.CPUStats, *node.MemPublisher) {
		names := []string{"hashdb", "interp", "sort", "ccdriver"}
		m := workloadMachine(t, 4, true, names...)
		_, pub := runWorkloads(t, m, busyDriverConfig(), 20_000_000, names...)
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
