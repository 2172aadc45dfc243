package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dcpi/config"
	"dcpi/coordinator"
	"dcpi/hwsim"
	"dcpi/node"
	"dcpi/transport"
)

// hostSpec is one simulated host of a cluster: its machine, its programs,
// and where it reports.
type hostSpec struct {
	sim        config.Sim
	progs      []string
	seconds    float64 // simulated; 0: until stopped
	flushEvery float64 // simulated seconds between full drains
	labels     map[string]string
	heartbeat  time.Duration
	maxBuffer  int // bytes of batches held while NATS is unreachable
	events     []string
	nc         *nats.Conn
	coord      *coordinator.Client
	logf       func(string, ...any)
	// startCtx bounds the questions asked of the cluster before the
	// host starts (nil: the run's context).
	startCtx context.Context
}

// clusterHost is a running host: the simulated machine, DCPI's driver and
// daemon on it, the publisher to JetStream, and the loop that follows the
// fleet's epochs.
type clusterHost struct {
	name   string
	m      *hwsim.Machine
	n      *node.Node
	pub    *transport.Publisher
	clock  uint64 // Hz
	ran    chan error
	follow chan node.FollowStats
	// resumed is what the host found of a previous run under its name.
	resumed resumePoint
}

// startHost builds and starts a host. Its batch streams continue after
// whatever the stream and the database already hold for its name, so a
// restarted host never reuses a sequence number.
func startHost(ctx context.Context, s hostSpec) (*clusterHost, error) {
	name := s.sim.Hostname
	if err := transport.CheckHost(name); err != nil {
		return nil, err
	}
	hc, err := machineConfig(s.sim)
	if err != nil {
		return nil, err
	}
	hc.Stdout, hc.Stderr = io.Discard, io.Discard
	m, err := hwsim.New(hc)
	if err != nil {
		return nil, err
	}
	ncfg := node.DefaultConfig()
	ncfg.Host, ncfg.Images = name, hc.Files
	ncfg.FlushEvery = uint64(s.flushEvery * float64(hc.ClockHz))
	if ncfg.Profile, err = profileFromFlags(s.events, false); err != nil {
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
	ncfg.Epoch = status.Epoch
	rp, err := resume(sctx, s.nc, s.coord, name, hc.CPUs)
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", name, err)
	}
	ncfg.FirstSeq, ncfg.Carried = rp.first, rp.carried
	pub, err := transport.NewPublisher(s.nc, transport.PublisherConfig{Host: name, MaxBufferedBytes: s.maxBuffer, Logf: s.logf})
	if err != nil {
		return nil, err
	}
	n, err := node.New(m, ncfg, pub)
	if err != nil {
		pub.Close(ctx)
		return nil, err
	}
	for _, prog := range s.progs {
		wl, ok := workloadByName(prog)
		if !ok {
			pub.Close(ctx)
			return nil, fmt.Errorf("no embedded workload %q", prog)
		}
		if err := n.KeepRunning("/bin/"+prog, append([]string{"/bin/" + prog}, wl.DefaultArgs...)); err != nil {
			pub.Close(ctx)
			return nil, err
		}
	}
	h := &clusterHost{name: name, m: m, n: n, pub: pub, clock: hc.ClockHz, ran: make(chan error, 1), follow: make(chan node.FollowStats, 1),
		resumed: rp}
	limit := uint64(s.seconds * float64(hc.ClockHz))
	go func() { h.ran <- n.Run(limit) }()
	go func() {
		h.follow <- n.Follow(ctx, control{c: s.coord, labels: s.labels, cpus: hc.CPUs}, s.labels, s.heartbeat, s.logf)
	}()
	return h, nil
}

// simSeconds is how far the host's machine has run.
func (h *clusterHost) simSeconds() float64 { return float64(h.n.SimCycles()) / float64(h.clock) }

// generated is every sample the host's hardware delivered; call it after
// Run has returned.
func (h *clusterHost) generated() uint64 {
	var total uint64
	for _, c := range h.m.CPUStats() {
		for _, v := range c.Interrupts {
			total += v
		}
	}
	return total
}

// resumePoint is where a host's streams continue, and what its
// predecessor left unreported.
type resumePoint struct {
	first   []uint64            // per CPU: the next batch sequence number
	carried []map[string]uint64 // per CPU: node.crash_lost, if any
	// delivered is what the predecessor's hardware had reported
	// generating, and lost what of it was neither published nor dropped.
	delivered, lost uint64
}

// resume finds where each of a host's batch streams continues: past the
// newest batch still in JetStream and past what the database applied, read
// in that order (a batch leaves the work-queue stream only after its
// commit, so nothing can slip between the two reads). The newer of the
// two also carries the predecessor's sample accounting: what its driver
// still held when that batch was cut died with it.
func resume(ctx context.Context, nc *nats.Conn, coord *coordinator.Client, host string, cpus int) (resumePoint, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return resumePoint{}, err
	}
	inStream, err := transport.LastBatches(ctx, js, host, cpus)
	if err != nil {
		return resumePoint{}, err
	}
	rp := resumePoint{first: make([]uint64, cpus), carried: make([]map[string]uint64, cpus)}
	for cpu := range cpus {
		seq, delivered, accounted, err := streamState(ctx, coord, host, uint16(cpu))
		if err != nil {
			return resumePoint{}, fmt.Errorf("applied state of cpu %d: %w", cpu, err)
		}
		if b := inStream[cpu]; b != nil && b.Seq > seq {
			seq, delivered, accounted = b.Seq, b.Delivered, b.Accounted
		}
		rp.first[cpu] = seq + 1
		rp.delivered += delivered
		if lost := delivered - accounted; lost > 0 {
			rp.carried[cpu] = map[string]uint64{dropCrashLost: lost}
			rp.lost += lost
		}
	}
	return rp, nil
}

// dropCrashLost counts samples a node agent's hardware reported before the
// agent died, that it had neither published nor dropped.
const dropCrashLost = "node.crash_lost"

// streamState is the database's applied state of one stream, read from
// the leader after every commit (a follower could be behind the stream).
func streamState(ctx context.Context, coord *coordinator.Client, host string, cpu uint16) (seq, delivered, accounted uint64, err error) {
	st, err := coord.StreamState(ctx, host, cpu, true)
	return st.Seq, st.Delivered, st.Accounted, err
}
