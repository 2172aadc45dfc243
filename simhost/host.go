package simhost

import (
	"sync/atomic"

	"dcpi/hwsim"
	"dcpi/node"
)

// Config configures a simulated host: the node on it, and what belongs to
// the simulation.
type Config struct {
	Node node.Config
	// Profile is what the performance counters count, and how often.
	Profile hwsim.ProfileConfig
	// FlushEvery is the simulated time, in cycles, between full drains of
	// every CPU's table (the paper's 5- and 10-minute intervals are
	// real-time defaults; simulations want a fraction of a second).
	FlushEvery uint64
	// ProfileMe programs the ProfileMe hardware when the node's driver
	// has a ProfileMe table (Node.Driver.Me); zero: hwsim's default.
	ProfileMe hwsim.ProfileMeConfig
	// Labels are the host's own labels (service, version, zone, ...),
	// checked by wire.CheckLabels; LocalSink.Register records them in a
	// local database's node registry, as a cluster's coordinator does.
	Labels map[string]string
}

// DefaultConfig is node's default, DCPI's counters, and a full drain every
// 0.1 simulated second at 333 MHz.
func DefaultConfig() Config {
	return Config{Node: node.DefaultConfig(), Profile: hwsim.DefaultProfile(), FlushEvery: 33_300_000}
}

// Host is a simulated host being profiled: the machine, the node on it
// (driver and daemon), and the programs kept running. The machine runs on
// Run's goroutine; the node's daemon on its own.
type Host struct {
	cfg     Config
	m       *hwsim.Machine
	n       *node.Node
	keep    *keepAlive // programs restarted when they exit (KeepRunning)
	stopReq atomic.Bool
	simNow  atomic.Uint64 // machine time, for progress displays on other goroutines
	// generated is Generated as of Run's last look at the clock, and
	// exact once Run has returned: for the metrics, read on other
	// goroutines.
	generated atomic.Uint64
	restarts  atomic.Uint64 // Restarts, likewise
}

// New attaches a node to m: it programs the counters, installs the
// drivers' interrupt handler, and has the daemon follow m's loader events
// and describe m's files (and vmunix) in its image records.
func New(m *hwsim.Machine, cfg Config, pub node.Publisher) (*Host, error) {
	if err := cfg.Profile.Validate(); err != nil {
		return nil, err
	}
	if cfg.ProfileMe == (hwsim.ProfileMeConfig{}) {
		cfg.ProfileMe = hwsim.DefaultProfileMe()
	}
	if cfg.Node.Values.Module != "" {
		if err := checkValuesModel(m, cfg.Node.Values.Module); err != nil {
			return nil, err
		}
	}
	n, err := node.New(machine{m: m, profile: cfg.Profile, me: cfg.ProfileMe}, cfg.Node, pub, NewImages(m.Config().Files, m.Config().Sysroot))
	if err != nil {
		return nil, err
	}
	return &Host{cfg: cfg, m: m, n: n}, nil
}

// Node is the host's agent, for its epochs (CutEpoch, Follow) and figures.
func (h *Host) Node() *node.Node { return h.n }

// Machine is the simulated machine.
func (h *Host) Machine() *hwsim.Machine { return h.m }

// Run runs the machine until every process has exited (unless programs
// are kept running) or limit cycles of simulated time have passed (0: no
// limit), or Stop is called, or the daemon dies, with the daemon draining
// concurrently and a full drain every FlushEvery; then it drains
// everything and publishes the last batches. It returns the daemon's
// error if it died.
func (h *Host) Run(limit uint64) error {
	if err := h.n.Start(); err != nil {
		return err
	}
	var runErr error
	const chunk = 1_000_000 // cycles between looks at the clock
	next := h.m.Now() + h.cfg.FlushEvery
loop:
	for {
		if limit != 0 && h.m.Now() >= limit {
			break
		}
		if !h.m.RunFor(chunk) && h.keep == nil {
			break
		}
		h.observe()
		if h.stopReq.Load() {
			break
		}
		select {
		case <-h.n.DaemonDone():
			break loop // Finish returns why
		default:
		}
		if h.keep != nil {
			if runErr = h.keep.restart(h.m); runErr != nil {
				break
			}
		}
		if h.m.Now() >= next {
			next += h.cfg.FlushEvery
			h.n.Flush()
		}
	}
	h.simNow.Store(h.m.Now())
	// The run is over: the counters stop, so that the idle rounds below,
	// whose number depends on how fast the daemon goroutine is on the
	// real host, add no samples (they were cpu_idle's, dwarfing a short
	// program's own). A counter whose interrupt was still in its skid is
	// neither delivered nor counted as generated.
	h.m.StopProfiling()
	// ProfileMe likewise stops tagging, and the OS reads the register
	// copies' partial set now, so every record tagged reaches the driver
	// before its final drain.
	h.m.StopProfileMe()
	h.m.FlushProfileMe()
	// The daemon may be in a handshake: keep the CPUs taking IPIs.
	quantum := h.m.Config().Quantum
	err := h.n.Finish(func() { h.m.Idle(quantum) })
	h.observeCounts() // SimCycles stays where the run ended
	if err != nil {
		return err
	}
	return runErr
}

// observe publishes the machine's clock and counts for other goroutines;
// it runs on Run's goroutine, once per chunk of simulated time.
func (h *Host) observe() {
	h.simNow.Store(h.m.Now())
	h.observeCounts()
}

func (h *Host) observeCounts() {
	h.generated.Store(h.Generated())
	h.restarts.Store(h.Restarts())
}

// SimCycles is how far the simulated machine has run, in cycles, as of
// Run's last look at the clock (once Run has returned: where its run ended,
// before the final drain); safe from any goroutine.
func (h *Host) SimCycles() uint64 { return h.simNow.Load() }

// MeTagged is every instruction the ProfileMe hardware tagged (0 with
// ProfileMe off); after Run, each is in a batch (entries or MeUnknown) or
// one of its MeDrops counters. Call it after Run.
func (h *Host) MeTagged() uint64 {
	var total uint64
	for _, s := range h.m.ProfileMeStats() {
		total += s.Tags
	}
	return total
}

// Stop makes Run return soon, after its final drain; it is safe from any
// goroutine.
func (h *Host) Stop() { h.stopReq.Store(true) }

// Generated is every counter interrupt the machine delivered; call it
// after Run.
func (h *Host) Generated() uint64 {
	var total uint64
	for _, c := range h.m.CPUStats() {
		for _, v := range c.Interrupts {
			total += v
		}
	}
	return total
}
