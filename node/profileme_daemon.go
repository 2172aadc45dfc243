package node

import "fmt"

// MeHost is a Host with ProfileMe hardware (hwsim's on the 21164). A node
// whose driver has a ProfileMe table (DriverConfig.Me) needs one; how
// often the hardware tags an instruction is the host's configuration, as
// what the counters count is.
type MeHost interface {
	Host
	// StartProfileMe makes h the ProfileMe interrupt handler of every
	// CPU and starts the hardware.
	StartProfileMe(h MeHandler) error
}

// MeHandler handles a ProfileMe interrupt: the records of the register
// copies (the slice is the host's, reused after the call) and the records
// the hardware lost since the last interrupt because every copy was full.
// It returns the cycles the handler cost the CPU.
type MeHandler interface {
	ProfileMeInterrupt(cpu int, recs []MeRecord, lost uint64) uint64
}

// startProfileMe starts the host's ProfileMe hardware when the drivers
// have a ProfileMe table.
func (n *Node) startProfileMe() error {
	if n.cfg.Driver.Me.Entries == 0 {
		return nil
	}
	mh, ok := n.host.(MeHost)
	if !ok {
		return fmt.Errorf("node: ProfileMe table configured, but the host (%T) has no ProfileMe hardware", n.host)
	}
	return mh.StartProfileMe(n)
}

// ProfileMeInterrupt is the ProfileMe interrupt handler: the driver sums
// the records in its ProfileMe table (Driver.SampleMe), and a completed
// ProfileMe buffer wakes the daemon as a counter buffer does.
func (n *Node) ProfileMeInterrupt(cpu int, recs []MeRecord, lost uint64) uint64 {
	if cpu < 0 || cpu >= len(n.drivers) {
		return 0
	}
	cost, full := n.drivers[cpu].SampleMe(recs, lost)
	if full {
		n.steps.noteWake()
	}
	return cost
}
