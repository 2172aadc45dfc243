package simhost

import (
	"dcpi/config"
	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/workloads"
	"fmt"
)

// MachineConfig turns the sim section into a machine configuration, with
// every embedded workload at /bin/NAME.
func MachineConfig(s config.Sim) (hwsim.Config, error) {
	model, err := alpha.ModelByName(s.Model)
	if err != nil {
		return hwsim.Config{}, fmt.Errorf("config: sim.model: %w", err)
	}
	hc := hwsim.DefaultConfig()
	hc.CPUs, hc.Model, hc.Seed = s.CPUs, model, s.Seed
	hc.ClockHz = uint64(s.ClockMHz) * 1_000_000
	hc.Quantum, hc.TimeSlice, hc.PIDMax = s.Quantum, s.TimeSlice, s.PIDMax
	hc.Hostname, hc.MaxMemory = s.Hostname, s.MaxMemMB<<20
	hc.Timing, hc.Sysroot = s.Timing, s.Sysroot
	hc.OpenAppend = (&DumpFiles{}).Open // dcpi pp instrument's counter dumps
	if err := ApplyMemoryParams(&hc.MemoryParams, s.Memory); err != nil {
		return hwsim.Config{}, err
	}
	hc.Files = map[string][]byte{}
	for _, w := range workloads.All() {
		data, err := workloads.Binary(w.Name)
		if err != nil {
			return hwsim.Config{}, err
		}
		hc.Files["/bin/"+w.Name] = data
	}
	return hc, hc.Validate()
}
