package simhost

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/node"
	"dcpi/wire"
)

// MachineInterrupts is every counter interrupt m's CPUs delivered.
func MachineInterrupts(m *hwsim.Machine) uint64 {
	var n uint64
	for _, c := range m.CPUStats() {
		for _, k := range c.Interrupts {
			n += k
		}
	}
	return n
}

// CounterProfile is the counter programming a host's events ask for: the
// first event alone on one counter, the others multiplexed on a second,
// each non-cycle event with the default event period; mux is the paper's
// multiplexed configuration instead. Its errors name --events, the key
// every command that takes events gives it.
func CounterProfile(events []string, mux bool) (hwsim.ProfileConfig, error) {
	if mux {
		return hwsim.MuxProfile(), nil
	}
	p := hwsim.DefaultProfile()
	if len(events) == 0 {
		return p, fmt.Errorf("--events: name at least one event")
	}
	var evs []alpha.Event
	for _, name := range events {
		e, err := alpha.EventByName(strings.TrimSpace(name))
		if err != nil {
			return p, fmt.Errorf("--events: %w", err)
		}
		evs = append(evs, e)
	}
	cycles, other := p.Counters[0], p.Counters[1]
	spec := func(e alpha.Event) hwsim.CounterSpec {
		if e == alpha.EvCycles {
			return cycles
		}
		s := other
		s.Events = []alpha.Event{e}
		return s
	}
	p.Counters = []hwsim.CounterSpec{spec(evs[0])}
	if len(evs) > 1 {
		second := spec(evs[1])
		second.Events = evs[1:]
		p.Counters = append(p.Counters, second)
	}
	return p, p.Validate()
}

// ProfileMeHardware is the ProfileMe hardware a node with --profileme programs:
// hwsim's default, in pairs with paired (the pair window the core's
// default, hwsim.DefaultPairWindow).
func ProfileMeHardware(paired bool) hwsim.ProfileMeConfig {
	c := hwsim.DefaultProfileMe()
	c.Paired = paired
	return c
}

// Features are what a node samples beyond its defaults: the events on
// its counters and DCPI's and ProfileMe's optional data. dcpi profile,
// dcpi node and the cluster's hosts take the same ones.
type Features struct {
	Events    []string // counted events (CounterProfile)
	Mux       bool     // the paper's multiplexed counters instead
	Stacks    bool     // sampled call stacks (node.DefaultStackConfig)
	ProfileMe bool     // ProfileMe samples (node.DefaultMeConfig)
	MePaired  bool     // in pairs; needs ProfileMe
	Values    string   // value-sampling module ("": off)
	// Labels are the host's labels (Config.Labels), checked here so that
	// a bad one is refused before anything runs.
	Labels map[string]string
	// PerProcess are the images whose profiles are kept per process
	// (node.Config.PerProcess: paths, base names or "all").
	PerProcess []string
	// PerThread keeps them per thread instead (node.Config.PerThread).
	PerThread bool
	// ProcessLabels are the user's process labels by binary
	// (node.Config.ProcessLabels; ProgramLabels adds the programs').
	ProcessLabels map[string]map[string]string
}

// ProgramLabels is configured (node.process_labels, by binary) with
// labels for the binary of each of progs over it: dcpi profile
// --proc-label gives the processes of the programs it runs, and their
// children, labels.
func ProgramLabels(configured map[string]map[string]string, progs []Program, labels map[string]string) map[string]map[string]string {
	if len(labels) == 0 {
		return configured
	}
	out := maps.Clone(configured)
	if out == nil {
		out = map[string]map[string]string{}
	}
	for _, p := range progs {
		l := maps.Clone(out[p.Path])
		if l == nil {
			l = map[string]string{}
		}
		maps.Copy(l, labels)
		out[p.Path] = l
	}
	return out
}

// ErrPerThreadNeedsPerProcess refuses per-thread profiles of no image:
// they are the per-process images' profiles, kept per thread.
var ErrPerThreadNeedsPerProcess = errors.New("node.per_thread needs node.per_process images (or all) to keep per thread")

// ErrPairedNeedsProfileMe refuses pairs without ProfileMe.
var ErrPairedNeedsProfileMe = errors.New("--me-paired needs --profileme: pairs are ProfileMe samples")

// NodeConfig is the node of host with f's features, draining its tables
// every flushEvery simulated seconds of a clockHz clock. Its errors name
// the flags the features come from.
func (f Features) NodeConfig(host string, flushEvery float64, clockHz uint64) (Config, error) {
	c := DefaultConfig()
	c.Node.Host = host
	if err := wire.CheckLabels(f.Labels); err != nil {
		return c, fmt.Errorf("--label: %w", err)
	}
	if err := node.CheckPerProcess(f.PerProcess); err != nil {
		return c, fmt.Errorf("--per-process: %w", err)
	}
	if err := node.CheckProcessLabels(f.ProcessLabels); err != nil {
		return c, fmt.Errorf("--proc-label or node.process_labels: %w", err)
	}
	if f.PerThread && len(f.PerProcess) == 0 {
		return c, ErrPerThreadNeedsPerProcess
	}
	c.Labels, c.Node.PerProcess, c.Node.PerThread, c.Node.ProcessLabels = f.Labels, f.PerProcess, f.PerThread, f.ProcessLabels
	if f.Stacks {
		if err := CheckStacks(); err != nil {
			return c, err
		}
		c.Node.Driver.Stacks = node.DefaultStackConfig()
	}
	if f.MePaired && !f.ProfileMe {
		return c, ErrPairedNeedsProfileMe
	}
	if f.ProfileMe {
		c.Node.Driver.Me = node.DefaultMeConfig()
		c.ProfileMe = ProfileMeHardware(f.MePaired)
	}
	c.FlushEvery = uint64(flushEvery * float64(clockHz))
	if f.Values != "" {
		v, err := ValuesConfig(f.Values)
		if err != nil {
			return c, err
		}
		c.Node.Values = v
	}
	var err error
	c.Profile, err = CounterProfile(f.Events, f.Mux)
	return c, err
}
