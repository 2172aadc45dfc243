package simhost

import (
	"fmt"
	"strings"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
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
