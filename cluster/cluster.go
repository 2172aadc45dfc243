package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"dcpi/aggregator"
	"dcpi/coordinator"
	"dcpi/internal/progress"
	"dcpi/transport"
	"dcpi/transport/auth"
)

// Config is a whole cluster in one process.
type Config struct {
	// Dir holds the cluster's data (nats/, one directory per replica, and
	// the fleet record); a later cluster on it continues the fleet. ""
	// makes a temporary directory, removed by Close.
	Dir string
	// Replicas is the coordinator's Raft group size (1, 3 or 5), and
	// ExactReplicas says it was asked for rather than defaulted: a
	// continued fleet of another size is then an error, not continued as
	// recorded.
	Replicas      int
	ExactReplicas bool
	Aggregators   int
	// EpochEvery is the period of the epochs the coordinator's leader
	// cuts on its own (coordinator.Config.EpochEvery; 0: none).
	EpochEvery time.Duration
	// Retention is the policy the coordinator's leader applies to sealed
	// epochs (coordinator.Config.Retention; the zero value keeps all).
	Retention coordinator.Retention
	// Now is the replicas' clock (coordinator.Config.Now; nil:
	// time.Now): a run in simulated time, such as loadgen/week's, sets
	// it to cut epochs and apply retention on simulated hours.
	Now func() time.Time
	// MetricsAddr serves the whole cluster's metrics, /healthz and
	// /readyz (host:port, port 0: any; "": not served).
	MetricsAddr string
	// Progress says on a terminal what a long wait waits for (nil: silent).
	Progress *progress.Progress
	Logger   *slog.Logger
}

// Cluster is a running cluster: NATS, the coordinator's replicas, the
// aggregators, and the hosts added to it.
type Cluster struct {
	cfg       Config
	dir       string
	removeDir bool
	fleet     *fleetDir
	srv       *auth.Server
	tel       *Telemetry
	nc        *nats.Conn // the coordinator role's, for the cluster's own questions
	js        jetstream.JetStream
	coord     *coordinator.Client
	replicas  []*coordinator.Replica
	aggs      []*Aggregator
	hosts     []*Host
	conns     []*nats.Conn
	runCtx    context.Context
	cancel    context.CancelFunc
	base      Baseline
	closing   sync.Once
}

// Start starts every role of a cluster in this process and returns once
// the coordinator has a leader, the aggregators consume, an earlier run's
// leftover batches are stored (a continued fleet), and every role is
// ready (/readyz). Close stops it; on an error, Start stops what it
// started.
func Start(ctx context.Context, c Config) (_ *Cluster, err error) {
	if c.Replicas != 1 && c.Replicas != 3 && c.Replicas != 5 {
		return nil, fmt.Errorf("%d coordinator replicas: want 1, 3 or 5", c.Replicas)
	}
	if c.Aggregators < 1 {
		return nil, fmt.Errorf("%d aggregators: want at least 1", c.Aggregators)
	}
	cl := &Cluster{cfg: c, dir: c.Dir}
	defer func() {
		if err != nil {
			cl.Close()
		}
	}()
	if cl.dir == "" {
		if cl.dir, err = os.MkdirTemp("", "dcpi-cluster-"); err != nil {
			return nil, err
		}
		cl.removeDir = true
	}
	if cl.fleet, err = prepareFleetDir(cl.dir, c.Replicas, c.ExactReplicas); err != nil {
		return nil, err
	}
	if err := cl.startServer(ctx, c.MetricsAddr); err != nil {
		return nil, err
	}
	if err := cl.startReplicas(); err != nil {
		return nil, err
	}
	if err := cl.waitLeader(ctx); err != nil {
		return nil, err
	}
	cl.runCtx, cl.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if err := cl.startAggregators(ctx); err != nil {
		return nil, err
	}
	if cl.fleet.continued {
		if cl.base, err = cl.continueFleet(ctx); err != nil {
			return nil, err
		}
	}
	if err := WaitReady(ctx, c.Progress, cl.tel.Ready, time.Minute); err != nil {
		return nil, err
	}
	return cl, nil
}

// startServer starts NATS with JetStream and the cluster's credentials,
// the metrics endpoint, and the batch and value streams.
func (cl *Cluster) startServer(ctx context.Context, metricsAddr string) error {
	var err error
	cl.srv, err = auth.StartServer(transport.ServerConfig{Dir: filepath.Join(cl.dir, "nats"), Host: "127.0.0.1", Name: "dcpi-demo", Logger: cl.cfg.Logger})
	if err != nil {
		return err
	}
	if cl.tel, err = StartTelemetry(metricsAddr); err != nil {
		return fmt.Errorf("--metrics: %w", err)
	}
	if err := cl.tel.Register(nil, cl.srv.Collector()); err != nil {
		return err
	}
	cl.tel.Ready.Add("nats server", cl.srv.Ready)
	if cl.nc, err = cl.Connect(auth.Coordinator, "", "demo"); err != nil {
		return err
	}
	if cl.js, err = jetstream.New(cl.nc); err != nil {
		return err
	}
	if err := transport.EnsureStream(ctx, cl.js, 1); err != nil {
		return err
	}
	cl.coord = coordinator.NewClient(cl.nc)
	return transport.EnsureValuesStream(ctx, cl.js, 1)
}

// startReplicas starts the coordinator's Raft group under mutual TLS,
// bootstrapped together (or restarted on an earlier run's directory, at
// the addresses its log records).
func (cl *Cluster) startReplicas() error {
	for _, p := range cl.fleet.peers {
		rc, err := cl.Connect(auth.Coordinator, "", "coordinator-"+p.ID)
		if err != nil {
			return err
		}
		tails, err := NewJetStreamTails(rc)
		if err != nil {
			return err
		}
		// Replicas in one process get their Raft credentials from the
		// cluster's key store, new at each start: TLS by default.
		cred, err := cl.srv.Store.IssueRaftCredential(p.ID)
		if err != nil {
			return err
		}
		rt, err := auth.LoadRaftTLS(cred.File)
		if err != nil {
			return err
		}
		r, err := coordinator.Start(coordinator.Config{ID: p.ID, RaftAddr: p.Addr, RaftTLS: rt.Config, DataDir: filepath.Join(cl.dir, p.ID),
			Bootstrap: cl.fleet.peers, NATS: rc, Tails: tails, HeartbeatTimeout: 3 * time.Second,
			EpochEvery: cl.cfg.EpochEvery, Retention: cl.cfg.Retention, Now: cl.cfg.Now, Logger: cl.cfg.Logger})
		if err != nil {
			return err
		}
		cl.replicas = append(cl.replicas, r)
		if err := cl.tel.Register(prometheus.Labels{"replica": p.ID}, r.Collector()); err != nil {
			return err
		}
		cl.tel.Ready.Add("coordinator "+p.ID, r.Ready)
	}
	return nil
}

// startAggregators starts the aggregators, each folding a host's CPUs
// into one delta where they fit.
func (cl *Cluster) startAggregators(ctx context.Context) error {
	for i := range cl.cfg.Aggregators {
		ac, err := cl.Connect(auth.Aggregator, "", fmt.Sprintf("aggregator-%d", i+1))
		if err != nil {
			return err
		}
		a, err := StartAggregator(cl.runCtx, ac, AggregatorConfig{
			Aggregator: aggregator.Config{Limits: aggregator.Limits{FoldHosts: true}}, StreamReplicas: 1, Logger: cl.cfg.Logger})
		if err != nil {
			return err
		}
		cl.aggs = append(cl.aggs, a)
		if err := cl.tel.Register(prometheus.Labels{"aggregator": fmt.Sprint(i + 1)}, a.Collector()); err != nil {
			return err
		}
		cl.tel.Ready.Add(fmt.Sprintf("aggregator %d", i+1), NATSReady(ac))
	}
	return ctx.Err()
}

// Connect connects to the cluster's NATS with role's credentials (a
// host's are issued on first use); Close closes the connection.
func (cl *Cluster) Connect(role auth.Role, host, name string) (*nats.Conn, error) {
	creds, err := cl.Credentials(role, host)
	if err != nil {
		return nil, err
	}
	nc, err := transport.Connect(transport.ConnConfig{URLs: []string{cl.srv.ClientURL()}, Name: name, CredsFile: creds.File, CAFile: creds.CA, Logger: cl.cfg.Logger})
	if err == nil {
		cl.conns = append(cl.conns, nc)
	}
	return nc, err
}

// AddHost starts a simulated host in the cluster with its own host
// credentials; it runs until its simulated seconds are done (Host.Done)
// or the cluster closes.
func (cl *Cluster) AddHost(ctx context.Context, c HostConfig) (*Host, error) {
	name := c.Sim.Hostname
	hnc, err := cl.Connect(auth.Host, name, "node-"+name)
	if err != nil {
		return nil, err
	}
	if c.Logger == nil {
		c.Logger = cl.cfg.Logger
	}
	h, err := StartHost(cl.runCtx, ctx, hnc, c)
	if err != nil {
		return nil, err
	}
	cl.hosts = append(cl.hosts, h)
	if err := cl.tel.Register(prometheus.Labels{"host": name}, h.Collectors()...); err != nil {
		return nil, err
	}
	cl.tel.Ready.Add("node "+name, NATSReady(hnc))
	cl.base.Lost += h.resumed.Lost
	return h, nil
}

// Credentials are role's credentials files in the cluster's server (a
// host's issued on first use), for a client of its own.
func (cl *Cluster) Credentials(role auth.Role, host string) (auth.Creds, error) {
	return cl.srv.Store.ForRole(role, host)
}

// URL is the NATS server's client URL.
func (cl *Cluster) URL() string { return cl.srv.ClientURL() }

// Dir is the cluster's data directory.
func (cl *Cluster) Dir() string { return cl.dir }

// Conn is the cluster's own connection, with the coordinator role's
// credentials.
func (cl *Cluster) Conn() *nats.Conn { return cl.nc }

// Coordinator is a client of the coordinator's service.
func (cl *Cluster) Coordinator() *coordinator.Client { return cl.coord }

// Replicas are the coordinator's running replicas, in Peers' order.
func (cl *Cluster) Replicas() []*coordinator.Replica { return cl.replicas }

// Peers are the coordinator's replicas: IDs and Raft addresses.
func (cl *Cluster) Peers() []coordinator.Peer { return cl.fleet.peers }

// Continued says whether the cluster continues an earlier run's fleet.
func (cl *Cluster) Continued() bool { return cl.fleet.continued }

// Baseline is what the database held before this run (a continued
// fleet), with what the hosts' predecessors lost.
func (cl *Cluster) Baseline() Baseline { return cl.base }

// Hosts are the hosts added, in order.
func (cl *Cluster) Hosts() []*Host { return cl.hosts }

// Telemetry is the cluster's metrics and readiness.
func (cl *Cluster) Telemetry() *Telemetry { return cl.tel }

// AggregatorStats sums the aggregators' counters.
func (cl *Cluster) AggregatorStats() (aggregator.Stats, aggregator.ValuesStats) {
	var as aggregator.Stats
	var vs aggregator.ValuesStats
	for _, a := range cl.aggs {
		s := a.Stats()
		as.Proposals += s.Proposals
		as.EntriesIn += s.EntriesIn
		as.EntriesOut += s.EntriesOut
		as.Rejected += s.Rejected
		v := a.ValuesStats()
		vs.Fetched += v.Fetched
		vs.Applied += v.Applied
		vs.Proposals += v.Proposals
		vs.Rejected += v.Rejected
	}
	return as, vs
}

// Close stops every role, hosts first, and removes a temporary directory.
// Later calls do nothing.
func (cl *Cluster) Close() { cl.closing.Do(cl.close) }

func (cl *Cluster) close() {
	if cl.cancel != nil {
		cl.cancel()
	}
	for _, h := range cl.hosts {
		h.Stop()
	}
	for _, a := range cl.aggs {
		a.Wait()
	}
	for _, r := range cl.replicas {
		r.Shutdown()
	}
	for _, nc := range cl.conns {
		nc.Close()
	}
	if cl.srv != nil {
		cl.srv.Shutdown()
	}
	if cl.tel != nil {
		cl.tel.Close()
	}
	if cl.fleet != nil {
		cl.fleet.release()
	}
	if cl.removeDir {
		os.RemoveAll(cl.dir)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
