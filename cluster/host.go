package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"dcpi/config"
	"dcpi/coordinator"
	"dcpi/hwsim"
	"dcpi/node"
	"dcpi/simhost"
	"dcpi/transport"
)

// HostConfig is one simulated host of a cluster: its machine, its
// programs, its profiling, and where it reports.
type HostConfig struct {
	Sim      config.Sim
	Programs []simhost.Program // kept running: started again as they exit
	Seconds  float64           // simulated; 0: until stopped
	// FlushEvery is the simulated seconds between full drains.
	FlushEvery float64
	// PublishEvery is the daemon's publish window, simulated seconds.
	PublishEvery float64
	Labels       map[string]string
	Heartbeat    time.Duration
	MaxBuffer    int // bytes of batches held while NATS is unreachable
	// Retain bounds the bytes of batches kept until applied (the
	// end-to-end acknowledgment, docs/durability.md); 0: off.
	Retain    int
	Events    []string
	Mux       bool   // the paper's multiplexed counters (simhost.CounterProfile)
	Stacks    bool   // record call stacks (node.DefaultStackConfig)
	ProfileMe bool   // sample instructions with ProfileMe (node.DefaultMeConfig)
	MePaired  bool   // in pairs (ProfileMe sec. 4.2)
	Values    string // value-sampling module ("": off; node.DefaultValuesConfig)
	// PerProcess are the images whose profiles the node keeps per
	// process (node.Config.PerProcess).
	PerProcess []string
	// PerThread keeps them per thread instead (node.Config.PerThread).
	PerThread bool
	// ProcessLabels are the user's process labels by binary
	// (node.Config.ProcessLabels), sent with the node's process records.
	ProcessLabels map[string]map[string]string
	// GroundTruth records the machine's per-instruction truth, for
	// checks of the estimates against it.
	GroundTruth bool
	// CyclesPeriod, when nonzero, is the CYCLES counter's sampling period
	// range [min, max] instead of DCPI's default (a faster rate gathers
	// enough samples in a short run).
	CyclesPeriod [2]uint64
	// Stdout and Stderr receive the programs' output (nil: discarded).
	Stdout, Stderr io.Writer
	Logger         *slog.Logger
}

// Host is a running host: the simulated machine with DCPI's driver and
// daemon on it, the publisher to JetStream, and the loop that follows the
// fleet's epochs.
type Host struct {
	name     string
	sim      *simhost.Host
	pub      *transport.Publisher
	procs    *ProcessSender
	clock    uint64 // Hz
	ran      chan error
	finished chan struct{} // closed when the run has ended
	follow   chan node.FollowStats
	// resumed is what the host found of a previous run under its name.
	resumed simhost.ResumePoint
}

// StartHost builds and starts a host that publishes through nc (with the
// host's credentials). Its batch streams continue after whatever the
// stream and the database already hold for its name, so a restarted host
// never reuses a sequence number. startCtx bounds the questions asked of
// the cluster before the host starts; ctx bounds its run.
func StartHost(ctx, startCtx context.Context, nc *nats.Conn, c HostConfig) (*Host, error) {
	name := c.Sim.Hostname
	if err := transport.CheckHost(name); err != nil {
		return nil, err
	}
	hc, ncfg, err := hostMachine(c)
	if err != nil {
		return nil, err
	}
	m, err := hwsim.New(hc)
	if err != nil {
		return nil, err
	}
	coord := coordinator.NewClient(nc)
	rp, err := resumeHost(startCtx, coord, c, &ncfg, hc.CPUs)
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", name, err)
	}
	lf := logf(c.Logger)
	if err := uploadPrograms(startCtx, nc, c.Programs, c.Sim.Sysroot, lf); err != nil {
		return nil, fmt.Errorf("host %s: %w", name, err)
	}
	pub, err := transport.NewPublisher(nc, publisherConfig(c, coord))
	if err != nil {
		return nil, err
	}
	procs := NewProcessSender(coord, name, lf)
	sh, err := simhost.New(m, ncfg, hostPublisher{pub, procs})
	if err != nil {
		pub.Close(ctx)
		return nil, err
	}
	go procs.Run(ctx)
	for _, prog := range c.Programs {
		if err := sh.KeepRunning(prog.Path, prog.Argv); err != nil {
			pub.Close(ctx)
			return nil, err
		}
	}
	h := &Host{name: name, sim: sh, pub: pub, procs: procs, clock: hc.ClockHz, ran: make(chan error, 1), finished: make(chan struct{}), follow: make(chan node.FollowStats, 1), resumed: rp}
	limit := uint64(c.Seconds * float64(hc.ClockHz))
	go func() { h.ran <- sh.Run(limit); close(h.finished) }()
	ctl := control{c: coord, labels: c.Labels, cpus: hc.CPUs, periods: simhost.EventsPerSample(ncfg.Profile)}
	go func() { h.follow <- sh.Node().Follow(ctx, ctl, c.Labels, c.Heartbeat, lf) }()
	return h, nil
}

// hostMachine is the machine and the node's configuration c asks for.
func hostMachine(c HostConfig) (hwsim.Config, simhost.Config, error) {
	hc, err := simhost.MachineConfig(c.Sim)
	if err != nil {
		return hc, simhost.Config{}, err
	}
	hc.Stdout, hc.Stderr = orDiscard(c.Stdout), orDiscard(c.Stderr)
	hc.GroundTruth = c.GroundTruth
	simhost.InstallPrograms(&hc, c.Programs)
	ncfg, err := simhost.Features{Events: c.Events, Mux: c.Mux, Stacks: c.Stacks, ProfileMe: c.ProfileMe, MePaired: c.MePaired,
		Values: c.Values, Labels: c.Labels, PerProcess: c.PerProcess, PerThread: c.PerThread, ProcessLabels: c.ProcessLabels}.NodeConfig(c.Sim.Hostname, c.FlushEvery, hc.ClockHz)
	if err != nil {
		return hc, ncfg, err
	}
	ncfg.Node.PublishEvery = uint64(c.PublishEvery * float64(hc.ClockHz))
	if p := c.CyclesPeriod; p[0] > 0 {
		ncfg.Profile.Counters[0].PeriodMin, ncfg.Profile.Counters[0].PeriodMax = p[0], p[1]
	}
	return hc, ncfg, nil
}

// resumeHost asks the coordinator for the open epoch and finds where the
// host's streams (and value records) continue, into ncfg.
func resumeHost(ctx context.Context, coord *coordinator.Client, c HostConfig, ncfg *simhost.Config, cpus int) (simhost.ResumePoint, error) {
	status, err := coord.Heartbeat(ctx, c.Sim.Hostname)
	if err != nil {
		return simhost.ResumePoint{}, fmt.Errorf("asking the coordinator for the epoch: %w", err)
	}
	if err := coordinator.CheckBatchFormat(c.Sim.Hostname, ncfg.Node.BatchFormat(), status.Reads); err != nil {
		return simhost.ResumePoint{}, err
	}
	ncfg.Node.Epoch = status.Epoch
	rp, err := Resume(ctx, coord, c.Sim.Hostname, cpus)
	if err != nil {
		return rp, err
	}
	ncfg.Node.FirstSeq, ncfg.Node.Carried = rp.First, rp.Carried
	if c.Values != "" {
		if ncfg.Node.Values.FirstSeq, err = resumeValues(ctx, coord, c.Sim.Hostname); err != nil {
			return rp, err
		}
	}
	return rp, nil
}

// publisherConfig is the host's publisher (HostPublisherConfig).
func publisherConfig(c HostConfig, coord *coordinator.Client) transport.PublisherConfig {
	return HostPublisherConfig(c.Sim.Hostname, c.MaxBuffer, c.Retain, time.Duration(c.PublishEvery*float64(time.Second)), coord, c.Logger)
}

// HostPublisherConfig is host's publisher: bounded to maxBuffer bytes of
// batches while NATS is unreachable, and with retain > 0 the end-to-end
// acknowledgment (batches kept until the coordinator, polled at a pace
// set by the publish window, reports them applied).
func HostPublisherConfig(host string, maxBuffer, retain int, publishEvery time.Duration, coord *coordinator.Client, logger *slog.Logger) transport.PublisherConfig {
	pcfg := transport.PublisherConfig{Host: host, MaxBufferedBytes: maxBuffer, Logger: logger}
	if retain > 0 {
		pcfg.MaxRetainedBytes = retain
		pcfg.Applied = func(ctx context.Context, cpus []uint16) ([]uint64, error) {
			return coord.AppliedStreams(ctx, host, cpus)
		}
		pcfg.AppliedPoll = transport.AppliedPollFor(publishEvery, 0)
	}
	return pcfg
}

// uploadPrograms uploads the files of the user's programs to the
// cluster's image file bucket, so that dcpi list and pprof can read them
// on any machine (the embedded workloads are in every dcpi binary), and,
// for a dynamically linked program, the interpreter and libraries it
// loads from the sysroot (by content key, like any image: a library every
// host loads is stored once).
func uploadPrograms(ctx context.Context, nc *nats.Conn, progs []simhost.Program, sysroot string, lf func(string, ...any)) error {
	var js jetstream.JetStream
	var files []simhost.Program
	for _, p := range progs {
		if !p.User() {
			continue
		}
		libs, err := simhost.SharedObjects(sysroot, p.Data, p.Given)
		if err != nil {
			return err
		}
		files = append(append(files, p), libs...)
	}
	for _, p := range files {
		if js == nil {
			var err error
			if js, err = jetstream.New(nc); err != nil {
				return err
			}
		}
		uploaded, err := transport.PutImageFile(ctx, js, p.Key, p.Data)
		if err != nil {
			return fmt.Errorf("uploading %s: %w", p.Given, err)
		}
		if uploaded {
			lf("uploaded %s (%v, %d bytes) for the analysis tools", p.Given, p.Key, len(p.Data))
		}
	}
	return nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// Stop asks the host's run to end (it drains and publishes what its
// driver holds) and waits until it has.
func (h *Host) Stop() {
	h.sim.Stop()
	<-h.finished
}

// Wait waits for the host's run to end; when ctx ends first, it stops the
// run (the host drains and publishes what its driver holds) and waits for
// that. Every interval it logs how far the host is and what its publisher
// holds.
func (h *Host) Wait(ctx context.Context, every time.Duration, lf func(string, ...any)) error {
	t := time.NewTicker(every)
	defer t.Stop()
	stopping := ctx.Done()
	for {
		select {
		case err := <-h.ran:
			return err
		case <-stopping:
			h.sim.Stop()
			stopping = nil
		case <-t.C:
			st := h.pub.Stats()
			lf("simulated %.3f s; %d samples published, %d queued, drops %v", h.SimSeconds(), st.SamplesPublished, st.QueuedSamples, st.Drops)
		}
	}
}

// FlushProcesses sends the process records still queued for the
// coordinator, before the host's publisher closes.
func (h *Host) FlushProcesses(ctx context.Context) error { return h.procs.Flush(ctx) }

// Name is the host's name.
func (h *Host) Name() string { return h.name }

// Sim is the simulated host: its machine, node and counters.
func (h *Host) Sim() *simhost.Host { return h.sim }

// Publisher is the host's publisher to JetStream.
func (h *Host) Publisher() *transport.Publisher { return h.pub }

// Resumed is what the host found of a previous run under its name.
func (h *Host) Resumed() simhost.ResumePoint { return h.resumed }

// Done delivers the host's run's end (nil: it ran its simulated seconds,
// or was stopped, and drained).
func (h *Host) Done() <-chan error { return h.ran }

// Collectors are the host's metrics: the simulated machine's, the node's
// and its publisher's.
func (h *Host) Collectors() []prometheus.Collector {
	return []prometheus.Collector{h.sim.Collector(), h.sim.Node().Collector(), h.pub.Collector()}
}

// SimSeconds is how far the host's machine has run.
func (h *Host) SimSeconds() float64 { return float64(h.sim.SimCycles()) / float64(h.clock) }

// Generated is every sample the host's hardware delivered; call it after
// the run has ended.
func (h *Host) Generated() uint64 { return h.sim.Generated() }

// Interrupts is every counter interrupt the host's hardware delivered
// (what value sampling accounts for); call it after the run has ended.
func (h *Host) Interrupts() uint64 { return simhost.MachineInterrupts(h.sim.Machine()) }

// MeTagged is the instructions the host's ProfileMe hardware tagged.
func (h *Host) MeTagged() uint64 { return h.sim.MeTagged() }
