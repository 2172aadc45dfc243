package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"dcpi/config"
	"dcpi/coordinator"
	"dcpi/hwsim"
	"dcpi/node"
	"dcpi/simhost"
	"dcpi/storage"
	"dcpi/transport"
	"dcpi/wire"
)

// hostSpec is one simulated host of a cluster: its machine, its programs,
// and where it reports.
type hostSpec struct {
	sim        config.Sim
	progs      []simhost.Program // kept running: started again as they exit
	seconds    float64           // simulated; 0: until stopped
	flushEvery float64           // simulated seconds between full drains
	// publishEvery is the daemon's publish window, simulated seconds.
	publishEvery float64
	labels       map[string]string
	heartbeat    time.Duration
	maxBuffer    int // bytes of batches held while NATS is unreachable
	// retain bounds the bytes of batches kept until applied (the
	// end-to-end acknowledgment, docs/durability.md); 0: off.
	retain    int
	events    []string
	mux       bool   // the paper's mux configuration (profileFromFlags)
	stacks    bool   // record call stacks (node.DefaultStackConfig)
	profileMe bool   // sample instructions with ProfileMe (node.DefaultMeConfig)
	mePaired  bool   // in pairs (sec. 4.2)
	values    string // value-sampling module ("": off; node.DefaultValuesConfig)
	// tune, if set (tests), adjusts the machine's and the node's
	// configuration last, before anything starts.
	tune func(*hwsim.Config, *simhost.Config)
	// stdout and stderr receive the programs' output (nil: discarded).
	stdout, stderr io.Writer
	nc             *nats.Conn
	coord          *coordinator.Client
	logf           func(string, ...any)
	// startCtx bounds the questions asked of the cluster before the
	// host starts (nil: the run's context).
	startCtx context.Context
}

// clusterHost is a running host: the simulated machine with DCPI's driver
// and daemon on it, the publisher to JetStream, and the loop that follows
// the fleet's epochs.
type clusterHost struct {
	name   string
	sim    *simhost.Host
	pub    *transport.Publisher
	clock  uint64 // Hz
	ran    chan error
	follow chan node.FollowStats
	// resumed is what the host found of a previous run under its name.
	resumed simhost.ResumePoint
}

// startHost builds and starts a host. Its batch streams continue after
// whatever the stream and the database already hold for its name, so a
// restarted host never reuses a sequence number.
func startHost(ctx context.Context, s hostSpec) (*clusterHost, error) {
	name := s.sim.Hostname
	if err := transport.CheckHost(name); err != nil {
		return nil, err
	}
	hc, err := simhost.MachineConfig(s.sim)
	if err != nil {
		return nil, err
	}
	hc.Stdout, hc.Stderr = orDiscard(s.stdout), orDiscard(s.stderr)
	simhost.InstallPrograms(&hc, s.progs)
	ncfg := simhost.DefaultConfig()
	ncfg.Node.Host = name
	if s.stacks {
		ncfg.Node.Driver.Stacks = node.DefaultStackConfig()
	}
	if s.profileMe {
		ncfg.Node.Driver.Me = node.DefaultMeConfig()
		ncfg.ProfileMe = simhost.ProfileMeHardware(s.mePaired)
	}
	ncfg.FlushEvery = uint64(s.flushEvery * float64(hc.ClockHz))
	ncfg.Node.PublishEvery = uint64(s.publishEvery * float64(hc.ClockHz))
	if ncfg.Profile, err = simhost.CounterProfile(s.events, s.mux); err != nil {
		return nil, err
	}
	if s.tune != nil {
		s.tune(&hc, &ncfg)
	}
	m, err := hwsim.New(hc)
	if err != nil {
		return nil, err
	}
	sctx := ctx
	if s.startCtx != nil {
		sctx = s.startCtx
	}
	status, err := s.coord.Heartbeat(sctx, name)
	if err != nil {
		return nil, fmt.Errorf("host %s: asking the coordinator for the epoch: %w", name, err)
	}
	ncfg.Node.Epoch = status.Epoch
	rp, err := resume(sctx, s.nc, s.coord, name, hc.CPUs)
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", name, err)
	}
	ncfg.Node.FirstSeq, ncfg.Node.Carried = rp.First, rp.Carried
	if s.values != "" {
		ncfg.Node.Values = node.DefaultValuesConfig(s.values)
		if ncfg.Node.Values.FirstSeq, err = resumeValues(sctx, s.nc, s.coord, name); err != nil {
			return nil, fmt.Errorf("host %s: %w", name, err)
		}
	}
	if err := uploadPrograms(sctx, s.nc, s.progs, s.logf); err != nil {
		return nil, fmt.Errorf("host %s: %w", name, err)
	}
	pcfg := transport.PublisherConfig{Host: name, MaxBufferedBytes: s.maxBuffer, Logf: s.logf}
	if s.retain > 0 {
		pcfg.MaxRetainedBytes = s.retain
		pcfg.Applied = func(ctx context.Context, cpus []uint16) ([]uint64, error) {
			return s.coord.AppliedStreams(ctx, name, cpus)
		}
		pcfg.AppliedPoll = transport.AppliedPollFor(time.Duration(s.publishEvery*float64(time.Second)), 0)
	}
	pub, err := transport.NewPublisher(s.nc, pcfg)
	if err != nil {
		return nil, err
	}
	sh, err := simhost.New(m, ncfg, pub)
	if err != nil {
		pub.Close(ctx)
		return nil, err
	}
	for _, prog := range s.progs {
		if err := sh.KeepRunning(prog.Path, prog.Argv); err != nil {
			pub.Close(ctx)
			return nil, err
		}
	}
	h := &clusterHost{name: name, sim: sh, pub: pub, clock: hc.ClockHz, ran: make(chan error, 1), follow: make(chan node.FollowStats, 1),
		resumed: rp}
	limit := uint64(s.seconds * float64(hc.ClockHz))
	go func() { h.ran <- sh.Run(limit) }()
	go func() {
		h.follow <- sh.Node().Follow(ctx, control{c: s.coord, labels: s.labels, cpus: hc.CPUs, periods: simhost.EventsPerSample(ncfg.Profile)}, s.labels, s.heartbeat, s.logf)
	}()
	return h, nil
}

// uploadPrograms uploads the files of the user's programs to the
// cluster's image file bucket, so that dcpi list and pprof can read them
// on any machine (the embedded workloads are in every dcpi binary).
func uploadPrograms(ctx context.Context, nc *nats.Conn, progs []simhost.Program, logf func(string, ...any)) error {
	var js jetstream.JetStream
	for _, p := range progs {
		if !p.User() {
			continue
		}
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
			logf("uploaded %s (%v, %d bytes) for the analysis tools", p.Given, p.Key, len(p.Data))
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

// collectors are the host's metrics: the simulated machine's, the node's
// and its publisher's.
func (h *clusterHost) collectors() []prometheus.Collector {
	return []prometheus.Collector{h.sim.Collector(), h.sim.Node().Collector(), h.pub.Collector()}
}

// simSeconds is how far the host's machine has run.
func (h *clusterHost) simSeconds() float64 { return float64(h.sim.SimCycles()) / float64(h.clock) }

// generated is every sample the host's hardware delivered; call it after
// Run has returned.
func (h *clusterHost) generated() uint64 { return h.sim.Generated() }

// interrupts is every counter interrupt the host's hardware delivered
// (what value sampling accounts for); call it after Run has returned.
func (h *clusterHost) interrupts() uint64 { return simhost.MachineInterrupts(h.sim.Machine()) }

// meTagged is the instructions the host's ProfileMe hardware tagged.
func (h *clusterHost) meTagged() uint64 { return h.sim.MeTagged() }

// resume finds where host's batch streams continue (simhost.Resume), from
// the newest batches still in JetStream and the database's applied state.
func resume(ctx context.Context, nc *nats.Conn, coord *coordinator.Client, host string, cpus int) (simhost.ResumePoint, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return simhost.ResumePoint{}, err
	}
	return simhost.Resume(ctx, streamTail{js: js, host: host}, appliedStreams{coord: coord, host: host}, cpus)
}

// resumeValues is the Seq host's next value record takes: after the newest
// record the stream still holds, read first, and the database's applied
// Seq, read second (transport.LastValues says why in that order).
func resumeValues(ctx context.Context, nc *nats.Conn, coord *coordinator.Client, host string) (uint64, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, err
	}
	var last uint64
	if r, err := transport.LastValues(ctx, js, host); err != nil {
		return 0, err
	} else if r != nil {
		last = r.Seq
	}
	applied, err := coord.ValuesApplied(ctx, host)
	if err != nil {
		return 0, fmt.Errorf("asking the coordinator where the value records resume: %w", err)
	}
	return max(last, applied) + 1, nil
}

// streamTail is a host's JetStream batch streams, as simhost.Resume reads
// them.
type streamTail struct {
	js   jetstream.JetStream
	host string
}

func (s streamTail) LastBatches(ctx context.Context, cpus int) ([]*wire.Batch, error) {
	return transport.LastBatches(ctx, s.js, s.host, cpus)
}

// appliedStreams is the database's applied state of a host's streams, read
// from the leader after every commit (a follower could be behind the
// stream).
type appliedStreams struct {
	coord *coordinator.Client
	host  string
}

func (a appliedStreams) StreamState(ctx context.Context, cpu uint16) (storage.StreamState, error) {
	return a.coord.StreamState(ctx, a.host, cpu, true)
}
