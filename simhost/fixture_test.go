package simhost

import (
	"testing"

	"dcpi/hwsim"
	"dcpi/internal/racedetect"
)

// workloadMachine is a machine of cpus CPUs (timing on or off) whose
// files are the named embedded workloads, at /bin/NAME.
func workloadMachine(t testing.TB, cpus int, timing bool, names ...string) *hwsim.Machine {
	t.Helper()
	cfg := machineConfig(t, cpus, names...)
	cfg.Timing = timing
	m, err := hwsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// busyDriverConfig is the node of the conservation tests: a deliberately
// small table and buffers and short CYCLES periods, so that evictions,
// buffer hand-offs, full drains racing the sampling and drops all happen.
func busyDriverConfig() Config {
	ncfg := DefaultConfig()
	ncfg.Node.Driver.TableEntries, ncfg.Node.Driver.BufferEntries = 256, 64
	ncfg.Profile.Counters[0].PeriodMin, ncfg.Profile.Counters[0].PeriodMax = 3000, 3400
	ncfg.FlushEvery = 2_000_000
	return ncfg
}

// skipUnderRace skips a test of the simulated host's numbers under the
// race detector, which slows the simulator tenfold: the race run (make
// race) is for the concurrent parts, which the host's shorter tests
// (TestConservation, TestCutEpoch, TestPublishWindowAcrossCuts, the
// Follow tests) run as well.
func skipUnderRace(t *testing.T) {
	t.Helper()
	if racedetect.Enabled {
		t.Skip("the simulated host's numbers: not for the race run")
	}
}
