package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"dcpi/analysis/web"
	"dcpi/config"
	"dcpi/coordinator"
	"dcpi/internal/datadir"
	"dcpi/profiledb"
	"dcpi/profiledb/webdb"
	"dcpi/transport"
	"dcpi/transport/auth"
)

// ReplicaConfig is one coordinator replica as a role of its own (dcpi
// coordinator): its coordinator and NATS sections, and whether it runs
// the cluster's NATS server in its process.
type ReplicaConfig struct {
	Config    config.Config
	EmbedNATS bool
	// Telemetry receives the replica's (and an embedded server's) metrics
	// and readiness.
	Telemetry *Telemetry
	Logger    *slog.Logger
	// HTTPAddr, if set, is where the replica also serves the web UI over
	// the cluster's profiles (dcpi coordinator --http).
	HTTPAddr string
}

// Replica is a running coordinator replica with its connection and, when
// embedded, the NATS server.
type Replica struct {
	r       *coordinator.Replica
	nc      *nats.Conn
	srv     *auth.Server
	web     *web.Served
	release func()
	lf      func(string, ...any)
	stopped bool // Wait shut the replica down
}

// StartReplica locks the replica's data directory, starts the embedded
// NATS server if asked, waits for NATS and JetStream (replicas started
// together wait for each other's server, with backoff), ensures the batch
// stream and starts the replica, bootstrapped with the configured peers
// when its directory is new.
func StartReplica(ctx context.Context, rc ReplicaConfig) (_ *Replica, err error) {
	c, lf := rc.Config.Coordinator, logf(rc.Logger)
	peers, err := config.ParsePeers(c.Peers)
	if err != nil {
		return nil, err
	}
	// The credential is read, and plain Raft beyond loopback refused,
	// before anything is locked or made: one error that changes nothing.
	raftTLS, err := loadRaftTLS(c)
	if err != nil {
		return nil, err
	}
	if err := coordinator.CheckRaftSecurity(coordinator.Config{RaftAddr: c.RaftAddr, RaftTLS: raftTLS, RaftInsecure: c.RaftInsecure}); err != nil {
		return nil, fmt.Errorf("coordinator %s: %w", c.ID, err)
	}
	rp := &Replica{lf: lf}
	if rp.release, err = datadir.Lock(c.DataDir, "--data-dir", "dcpi coordinator "+c.ID); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			rp.Close()
		}
	}()
	// Not ready until the replica has started and says it is.
	var replica atomic.Pointer[coordinator.Replica]
	rc.Telemetry.Ready.Add("coordinator "+c.ID, func() error {
		if r := replica.Load(); r != nil {
			return r.Ready()
		}
		return errors.New("starting: waiting for NATS and the stream")
	})
	ncfg := rc.Config.NATS
	if rc.EmbedNATS {
		if ncfg.URLs, err = rp.embedNATS(rc); err != nil {
			return nil, err
		}
	}
	if rp.nc, err = ConnectRole(ctx, ncfg, auth.Coordinator, "", "coordinator-"+c.ID, rc.Logger); err != nil {
		return nil, err
	}
	rc.Telemetry.Ready.Add("nats", NATSReady(rp.nc))
	js, err := jetstream.New(rp.nc)
	if err != nil {
		return nil, err
	}
	if err := transport.EnsureStreamRetrying(ctx, transport.DefaultBackoff, rp.nc, js, ncfg.StreamReplicas, 0, lf); err != nil {
		return nil, err
	}
	var boot []coordinator.Peer
	for _, p := range peers {
		boot = append(boot, coordinator.Peer{ID: p[0], Addr: p[1]})
	}
	rp.r, err = coordinator.Start(coordinator.Config{ID: c.ID, RaftAddr: c.RaftAddr, RaftTLS: raftTLS, RaftInsecure: c.RaftInsecure, DataDir: c.DataDir,
		Bootstrap: boot, NATS: rp.nc, Tails: JetStreamTails{JS: js}, HeartbeatTimeout: c.HeartbeatTimeout,
		EpochEvery: c.EpochEvery, Retention: coordinator.Retention(c.Retention), Logger: rc.Logger})
	if err != nil {
		return nil, err
	}
	if err := rc.Telemetry.Register(prometheus.Labels{"replica": c.ID}, rp.r.Collector()); err != nil {
		return nil, err
	}
	replica.Store(rp.r)
	mode := "mutual TLS"
	if raftTLS == nil {
		mode = "plain TCP"
	}
	lf("replica %s serving, Raft at %s (%s), data in %s", c.ID, rp.r.Addr(), mode, c.DataDir)
	if rc.HTTPAddr != "" {
		if rp.web, err = web.Start(rc.HTTPAddr, webdb.New(profiledb.NewCluster(rp.nc, false), nil, nil), lf, web.Door{}); err != nil {
			return nil, fmt.Errorf("--http: %w", err)
		}
		lf("web UI at %s", rp.web.URL)
	}
	return rp, nil
}

// loadRaftTLS reads the replica's Raft credential (coordinator.raft_tls),
// nil without one. A credential issued to another replica is refused:
// it would work (replicas are peers of equal trust) but says the files
// were mixed up.
func loadRaftTLS(c config.Coordinator) (*tls.Config, error) {
	if c.RaftTLS == "" {
		return nil, nil
	}
	rt, err := auth.LoadRaftTLS(c.RaftTLS)
	if err != nil {
		return nil, fmt.Errorf("coordinator.raft_tls: %w", err)
	}
	if rt.ID != c.ID {
		return nil, fmt.Errorf("coordinator.raft_tls: %s is replica %s's Raft credential, not %s's", c.RaftTLS, rt.ID, c.ID)
	}
	return rt.Config, nil
}

// embedNATS starts the cluster's NATS server in the replica's data
// directory and returns its URL.
func (rp *Replica) embedNATS(rc ReplicaConfig) ([]string, error) {
	c, n := rc.Config.Coordinator, rc.Config.NATS
	srv, err := auth.StartServer(transport.ServerConfig{Dir: filepath.Join(c.DataDir, "nats"),
		Host: n.EmbedHost, Port: n.EmbedPort, Name: "dcpi-" + c.ID, Logger: rc.Logger,
		SyncAlways: n.SyncAlways, SyncInterval: n.SyncInterval})
	if err != nil {
		return nil, err
	}
	rp.srv = srv
	if err := rc.Telemetry.Register(nil, srv.Collector()); err != nil {
		return nil, err
	}
	rc.Telemetry.Ready.Add("nats server", srv.Ready)
	rp.lf("embedded NATS server at %s, credentials in %s", srv.ClientURL(), srv.Store.Dir())
	rp.lf("to add a host: dcpi nats-server add-host NAME --dir %s", filepath.Join(c.DataDir, "nats"))
	return []string{srv.ClientURL()}, nil
}

// WebURL is the web UI's address (ReplicaConfig.HTTPAddr), "" when it
// serves none.
func (rp *Replica) WebURL() string {
	if rp.web == nil {
		return ""
	}
	return rp.web.URL
}

// Conn is the replica's connection, with the coordinator role's
// credentials.
func (rp *Replica) Conn() *nats.Conn { return rp.nc }

// Wait serves until ctx ends, then shuts the replica down. A fatal store
// error (docs/durability.md) ends it at once with that error, so that a
// supervisor sees it; restarting on the same disk is the operator's
// decision.
func (rp *Replica) Wait(ctx context.Context) error {
	rp.stopped = true
	select {
	case <-ctx.Done():
	case <-rp.r.Failed():
		rp.r.Shutdown()
		return rp.r.Err()
	}
	rp.lf("shutting down")
	return rp.r.Shutdown()
}

// Close releases what StartReplica took: the replica (unless Wait has
// shut it down), the web UI, the connection, an embedded server, the
// directory's lock.
func (rp *Replica) Close() {
	if rp.web != nil {
		rp.web.Close()
	}
	if rp.r != nil && !rp.stopped {
		rp.r.Shutdown()
	}
	if rp.nc != nil {
		rp.nc.Close()
	}
	if rp.srv != nil {
		rp.srv.Shutdown()
	}
	if rp.release != nil {
		rp.release()
	}
}
