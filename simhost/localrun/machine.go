package localrun

import (
	"io"

	"dcpi/config"
	"dcpi/hwsim"
	"dcpi/node"
	"dcpi/simhost"
)

// MachineOptions are the settings of a local dcpi node's machine and
// driver that are not configuration keys (its flags --table-entries,
// --assoc, --policy, --flush-every, --events and --mux), and where the
// programs' output goes.
type MachineOptions struct {
	TableEntries int     // entries per CPU hash table (0: the driver's default)
	Assoc        int     // the table's associativity (0: the driver's default)
	Policy       string  // replacement policy by name (node.ParsePolicy; "": the default)
	FlushEvery   float64 // simulated seconds between full drains of the driver tables
	Events       []string
	Mux          bool // the paper's multiplexed counters (simhost.CounterProfile)
	// Stdout receives the output of a user's programs (an embedded
	// workload's is discarded); Stderr the programs' errors.
	Stdout, Stderr io.Writer
}

// Machine is the machine and the node a local dcpi node runs progs on:
// cfg's sim and node sections (hostname, values, stacks, ProfileMe,
// publish window) with o's driver settings, programs installed.
func Machine(cfg config.Config, progs []simhost.Program, o MachineOptions) (hwsim.Config, simhost.Config, error) {
	hc, err := simhost.MachineConfig(cfg.Sim)
	if err != nil {
		return hc, simhost.Config{}, err
	}
	hc.Stdout, hc.Stderr = io.Discard, o.Stderr
	if progs[0].User() {
		hc.Stdout = o.Stdout
	}
	simhost.InstallPrograms(&hc, progs)
	ncfg, err := simhost.Features{Events: o.Events, Mux: o.Mux, Stacks: cfg.Node.Stacks, ProfileMe: cfg.Node.ProfileMe,
		MePaired: cfg.Node.MePaired, Values: cfg.Node.Values, Labels: cfg.Node.Labels, PerProcess: cfg.Node.PerProcess, PerThread: cfg.Node.PerThread, ProcessLabels: cfg.Node.ProcessLabelMap()}.NodeConfig(cfg.Sim.Hostname, o.FlushEvery, hc.ClockHz)
	if err != nil {
		return hc, ncfg, err
	}
	if o.TableEntries > 0 {
		ncfg.Node.Driver.TableEntries = o.TableEntries
	}
	if o.Assoc > 0 {
		ncfg.Node.Driver.Assoc = o.Assoc
	}
	if o.Policy != "" {
		if ncfg.Node.Driver.Policy, err = node.ParsePolicy(o.Policy); err != nil {
			return hc, ncfg, err
		}
	}
	ncfg.Node.PublishEvery = uint64(cfg.Node.PublishEvery * float64(hc.ClockHz))
	return hc, ncfg, nil
}
