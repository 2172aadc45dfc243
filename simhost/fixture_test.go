package simhost

import (
	"testing"

	"dcpi/hwsim"
	"dcpi/workloads"
)

// workloadMachine is a machine of cpus CPUs (timing on or off) whose
// files are the named embedded workloads, at /bin/NAME.
func workloadMachine(t *testing.T, cpus int, timing bool, names ...string) *hwsim.Machine {
	t.Helper()
	cfg := hwsim.DefaultConfig()
	cfg.CPUs, cfg.Timing = cpus, timing
	cfg.Files = map[string][]byte{}
	for _, name := range names {
		data, err := workloads.Binary(name)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Files["/bin/"+name] = data
	}
	m, err := hwsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// spawnWorkloads starts each named workload on m with its default
// arguments.
func spawnWorkloads(t *testing.T, m *hwsim.Machine, names ...string) {
	t.Helper()
	for _, name := range names {
		args, _ := workloadArgs(name)
		if _, err := m.Spawn("/bin/"+name, append([]string{"/bin/" + name}, args...), nil); err != nil {
			t.Fatal(err)
		}
	}
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
