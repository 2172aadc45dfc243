package linuxnode

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"dcpi/cluster"
	"dcpi/coordinator"
	"dcpi/linuxhost"
	"dcpi/node"
	"dcpi/simhost"
	"dcpi/transport"
	"dcpi/transport/auth"
	"dcpi/wire"
)

// Run is dcpi node --linux: it opens the events on every CPU (first, so a
// missing permission is said at once, not after waiting for NATS),
// connects on the host's credentials, runs the host until ctx ends (or
// node.seconds have passed), then publishes everything it holds and
// writes its report to c.Out.
func Run(ctx context.Context, c Config) error {
	rep, err := run(ctx, c)
	if c.Out != nil && rep.Host != "" {
		fmt.Fprintln(c.Out, rep)
	}
	return err
}

// run is Run, returning the report (its Host empty when the host never
// started).
func run(ctx context.Context, c Config) (Report, error) {
	c = c.withHostName()
	if err := c.check(); err != nil {
		return Report{}, err
	}
	cfg, host := c.Config, c.Config.Sim.Hostname
	logger := orDiscardLogger(c.Logger)
	lf := logf(logger)
	h, err := linuxhost.New(c.hostConfig())
	if err != nil {
		return Report{}, err
	}
	defer h.Close()
	nc, err := cluster.ConnectRole(ctx, cfg.NATS, auth.Host, host, "node-"+host, logger)
	if err != nil {
		return Report{}, err
	}
	defer nc.Close()
	running := &cluster.StartedCheck{What: "starting: asking the coordinator where the host's streams resume"}
	if c.Telemetry != nil {
		c.Telemetry.Ready.Add("nats", cluster.NATSReady(nc))
		c.Telemetry.Ready.Add("node "+host, running.Check)
	}
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	n, err := Start(ctx, startCtx, nc, h, c)
	if err != nil {
		return Report{}, err
	}
	flushCtx, cancelFlush := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancelFlush()
	if c.Telemetry != nil {
		if err := c.Telemetry.Register(prometheus.Labels{"host": host}, n.Collectors()...); err != nil {
			n.Stop(flushCtx)
			return Report{}, err
		}
	}
	running.Started()
	lf("profiling this machine (%d CPUs, %s at %d/s per CPU, every process), publishing to %s", h.CPUs(), c.event(), c.freq(), strings.Join(cfg.NATS.URLs, ","))
	n.Wait(ctx, seconds(cfg.Node.Seconds), 5*time.Second, lf)
	return n.Stop(flushCtx)
}

func orDiscardLogger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// Node is a running Linux host of a cluster: linuxhost's reader
// goroutine feeding DCPI's driver and daemon, the publisher to
// JetStream, the process records to the coordinator, the image files'
// uploader, and the loop that follows the fleet's epochs.
type Node struct {
	name    string
	host    *linuxhost.Host
	node    *node.Node
	pub     *transport.Publisher
	procs   *cluster.ProcessSender
	up      *uploader
	resumed simhost.ResumePoint

	stop     chan struct{} // closed to end the host's run
	stopOnce sync.Once
	ran      chan struct{} // closed when the host's run has returned
	runErr   error
	follow   chan node.FollowStats
	cancel   context.CancelFunc // ends Follow, the sender and the uploader
}

// Start builds and starts a Linux host on h (opened system-wide,
// Config.hostConfig) that publishes through nc, a connection on the
// host's credentials. Its batch streams continue after whatever the
// stream and the database already hold for its name, so a restarted host
// never reuses a sequence number. startCtx bounds the questions asked of
// the cluster before the host starts; ctx bounds its run (Follow, the
// process records, the uploads). Stop ends it; the caller closes h after.
func Start(ctx, startCtx context.Context, nc *nats.Conn, h *linuxhost.Host, c Config) (*Node, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	name, nn := c.Config.Sim.Hostname, c.Config.Node
	lf := logf(c.Logger)
	if err := checkKernelFits(h.Kernel(), nc.MaxPayload()); err != nil {
		return nil, fmt.Errorf("host %s: %w", name, err)
	}
	coord := coordinator.NewClient(nc)
	status, err := coord.Heartbeat(startCtx, name)
	if err != nil {
		return nil, fmt.Errorf("host %s: asking the coordinator for the epoch: %w", name, err)
	}
	if err := coordinator.CheckBatchFormat(name, c.nodeConfig(status.Epoch, simhost.ResumePoint{}).BatchFormat(), status.Reads); err != nil {
		return nil, err
	}
	rp, err := cluster.Resume(startCtx, coord, name, h.CPUs())
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", name, err)
	}
	pub, err := transport.NewPublisher(nc, cluster.HostPublisherConfig(name, nn.MaxBufferedMB<<20, nn.RetainMB<<20, seconds(nn.PublishEvery), coord, c.Logger))
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	n := &Node{name: name, host: h, pub: pub, procs: cluster.NewProcessSender(coord, name, lf), resumed: rp,
		stop: make(chan struct{}), ran: make(chan struct{}), follow: make(chan node.FollowStats, 1), cancel: cancel}
	if max := c.maxUpload(); max > 0 {
		n.up = newUploader(nc, max, lf)
	}
	n.node, err = node.New(h, c.nodeConfig(status.Epoch, rp), publisher{pub: pub, procs: n.procs, up: n.up, maxPayload: nc.MaxPayload(), lf: lf}, h.Images())
	if err != nil {
		cancel()
		pub.Close(startCtx)
		return nil, err
	}
	go n.procs.Run(runCtx)
	if n.up != nil {
		go n.up.run(runCtx)
	}
	go func() {
		n.runErr = h.Run(n.node, n.stop, c.flushEvery())
		close(n.ran)
	}()
	go func() { // a daemon that died stops the host at once
		select {
		case <-n.node.DaemonDone():
			n.stopRun()
		case <-n.ran:
		}
	}()
	labels := c.labels()
	ctl := cluster.NodeControl(coord, labels, h.CPUs(), c.periods())
	go func() { n.follow <- n.node.Follow(runCtx, ctl, labels, nn.Heartbeat, lf) }()
	return n, nil
}

func logf(l *slog.Logger) func(string, ...any) {
	l = orDiscardLogger(l)
	return func(format string, args ...any) { l.Info(fmt.Sprintf(format, args...)) }
}

func (n *Node) stopRun() { n.stopOnce.Do(func() { close(n.stop) }) }

// Wait waits until ctx ends, the host's run ends (its daemon died), or
// limit has passed (0: none), logging every interval what the publisher
// has sent.
func (n *Node) Wait(ctx context.Context, limit, every time.Duration, lf func(string, ...any)) {
	var deadline <-chan time.Time
	if limit > 0 {
		t := time.NewTimer(limit)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-deadline:
			return
		case <-n.ran:
			return
		case <-tick.C:
			st, k := n.pub.Stats(), n.host.Counts()
			lf("epoch %d; %d samples taken, %d published, %d queued, %d lost in the rings, transport drops %v", n.node.Epoch(), k.Generated, st.SamplesPublished, st.QueuedSamples, k.Lost, st.Drops)
		}
	}
}

// Stop ends the host's run (the events are disabled, the rings read to
// the end, the driver drained and its last batches handed to the
// publisher), sends the process records left, finishes the uploads and
// closes the publisher once JetStream has everything (or ctx ends). The
// report's counts are then exact.
func (n *Node) Stop(ctx context.Context) (Report, error) {
	n.stopRun()
	<-n.ran
	err := n.runErr
	if ferr := n.procs.Flush(ctx); ferr != nil && err == nil {
		err = fmt.Errorf("sending the last process records: %w", ferr)
	}
	if cerr := n.pub.Close(ctx); cerr != nil && err == nil {
		err = fmt.Errorf("publishing the last batches: %w", cerr)
	}
	if n.up != nil { // after the batches: the files are for the tools, not the counts
		n.up.wait(ctx)
	}
	n.cancel()
	st := <-n.follow
	n.follow <- st
	rep := Report{Host: n.name, Counts: n.host.Counts(), Published: n.pub.Stats(), Epochs: st.Cuts, Resumed: n.resumed}
	if n.up != nil {
		rep.Uploads = n.up.stats()
	}
	rep.Daemon, _ = n.node.Stats()
	return rep, err
}

// Name is the host's name.
func (n *Node) Name() string { return n.name }

// Epoch is the epoch the host publishes into.
func (n *Node) Epoch() uint64 { return n.node.Epoch() }

// Counts are what the kernel's rings have held so far: exact once Stop
// has returned.
func (n *Node) Counts() linuxhost.Counts { return n.host.Counts() }

// Publisher is the host's publisher to JetStream.
func (n *Node) Publisher() *transport.Publisher { return n.pub }

// Resumed is what the host found of a previous run under its name.
func (n *Node) Resumed() simhost.ResumePoint { return n.resumed }

// Collectors are the host's metrics: the node's and its publisher's.
func (n *Node) Collectors() []prometheus.Collector {
	return []prometheus.Collector{n.node.Collector(), n.pub.Collector()}
}

// publisher is the node's: batches and image records to JetStream (a
// record too large for a proposal without its symbols: fitRecord),
// process records to the coordinator, and each image's file queued for
// upload.
type publisher struct {
	pub        *transport.Publisher
	procs      *cluster.ProcessSender
	up         *uploader
	maxPayload int64
	lf         func(string, ...any)
}

func (p publisher) PublishBatch(b *wire.Batch) error { return p.pub.PublishBatch(b) }

func (p publisher) PublishProcess(r *wire.ProcessRecord) error { return p.procs.PublishProcess(r) }

func (p publisher) PublishImage(r *wire.ImageRecord) error {
	fit, stripped, err := fitRecord(r, p.maxPayload)
	if err != nil {
		return err
	}
	if stripped {
		p.lf("image %s: its record's %d symbols are more than a proposal over this NATS server carries (max_payload %d): recorded without them (its samples count as unknown_rtn; a larger max_payload keeps them)",
			r.Path, len(r.Symbols), p.maxPayload)
	}
	if err := p.pub.PublishImage(fit); err != nil {
		return err
	}
	if p.up != nil {
		p.up.add(r)
	}
	return nil
}
