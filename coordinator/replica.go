package coordinator

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
	"github.com/nats-io/nats.go"

	"dcpi/internal/slogf"
	"dcpi/storage"
)

// Peer is a replica of the Raft group.
type Peer struct {
	ID   string
	Addr string // host:port of its Raft transport
}

// Config configures a replica.
type Config struct {
	ID       string
	RaftAddr string // host:port to listen on for Raft, TCP; port 0 picks one (see Replica.Addr)
	// RaftTLS carries Raft over TLS: it must be TLS 1.3 and require and
	// verify the peer's certificate (transport/auth's LoadRaftTLS makes
	// one from a replica's credential), and serves both ends of every
	// connection. Nil: plain TCP, which Start allows only on loopback
	// unless RaftInsecure says otherwise (ErrRaftInsecure).
	RaftTLS *tls.Config
	// RaftInsecure allows plain TCP Raft beyond loopback: the operator
	// vouches that only the replicas reach the network.
	RaftInsecure bool
	DataDir      string
	// Bootstrap is the initial group, used once when DataDir holds no
	// Raft state. An entry for this replica with an empty Addr means
	// its own transport address. Empty: join an existing group (AddVoter).
	Bootstrap []Peer
	NATS      *nats.Conn
	// Tails reads the work-queue streams' newest messages of a host for
	// a resuming agent (coordproto.QueryStreamTail); nil: those queries
	// are refused as unavailable.
	Tails StreamTails
	// HeartbeatTimeout is how long a node stays live after its last
	// heartbeat; 0 means 10 s.
	HeartbeatTimeout time.Duration
	// Logger receives the replica's own lines (at Info), and raft's and
	// its stores' lines at their levels (raft's Info as Debug) with their
	// key/value pairs as attributes. Nil: the standard logger, raft's
	// lines Warn and above only.
	Logger *slog.Logger

	// RaftTimeout sets Raft's heartbeat and election timeouts (the leader
	// lease is half of it); 0 keeps Raft's defaults (1 s). Tests shorten it.
	RaftTimeout time.Duration
	// SnapshotThreshold and TrailingLogs override Raft's (0: defaults).
	SnapshotThreshold uint64
	TrailingLogs      uint64
	// WALSegmentBytes is the Raft log's segment size; 0 means raft-wal's
	// 64 MiB. The log is truncated a whole segment at a time, so a
	// follower far behind gets a snapshot only once its entries' segment
	// is gone (tests use small segments to see it happen).
	WALSegmentBytes int
	// SealInterval is how often the leader evaluates the sealing rule
	// and the epoch schedule; 0 means 200 ms.
	SealInterval time.Duration
	// EpochEvery is the period of the epochs the leader cuts on its own
	// (ScheduledCutDue: at every multiple of it in wall-clock time); 0
	// means none, epochs are cut by hand only. Otherwise at least
	// MinEpochEvery and SealInterval. Every replica must run a build that
	// knows ScheduledCut before it is set.
	EpochEvery time.Duration
	// Retention is the policy the leader applies to sealed epochs
	// (RetentionDue): merged into coarser epochs, and deleted past a
	// horizon. The zero value keeps everything. CheckRetention must pass.
	// Every replica must run a build that knows MergeEpochs and
	// ExpireEpochs before it is set.
	Retention Retention
	// Now is the leader's clock: the times its commands carry (epochs'
	// starts and ends, registrations, acks) and the schedule's. Nil:
	// time.Now. A run in simulated time sets it; liveness and request
	// deadlines stay on the real clock.
	Now func() time.Time

	// walVFS, if set (tests), is the file system of the Raft log's
	// segments, to inject faults; nil means the real one.
	walVFS types.VFS
}

// Replica is one running coordinator replica: Raft, the FSM and the NATS
// service.
type Replica struct {
	cfg   Config
	logf  func(string, ...any)
	fsm   *FSM
	raft  *raft.Raft
	trans *raft.NetworkTransport
	wal   *wal.WAL
	meta  *metadb.BoltMetaDB
	log   *durableLog // the WAL as Raft's log and stable store

	failOnce sync.Once
	failed   chan struct{} // closed when a fatal store error stopped the replica
	failErr  error

	svc     *service
	metrics *replicaMetrics

	stop chan struct{}
	wg   sync.WaitGroup // background loops
}

// Start opens the replica's stores under cfg.DataDir (raft/ for the log
// and stable store, snapshots/, db/ for the FSM's database), joins or
// bootstraps the Raft group and starts serving queries over NATS.
func Start(cfg Config) (*Replica, error) {
	if cfg.ID == "" || cfg.RaftAddr == "" || cfg.DataDir == "" || cfg.NATS == nil {
		return nil, fmt.Errorf("coordinator: start: ID, RaftAddr, DataDir and NATS are required")
	}
	if err := CheckRaftSecurity(cfg); err != nil {
		return nil, fmt.Errorf("coordinator: start %s: %w", cfg.ID, err)
	}
	if cfg.HeartbeatTimeout <= 0 {
		cfg.HeartbeatTimeout = 10 * time.Second
	}
	if cfg.SealInterval <= 0 {
		cfg.SealInterval = 200 * time.Millisecond
	}
	if err := CheckEpochEvery(cfg.EpochEvery, cfg.SealInterval); err != nil {
		return nil, fmt.Errorf("coordinator: start %s: %w", cfg.ID, err)
	}
	if err := CheckRetention(cfg.Retention, cfg.EpochEvery); err != nil {
		return nil, fmt.Errorf("coordinator: start %s: %w", cfg.ID, err)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	logf := log.Printf
	if cfg.Logger != nil {
		logf = slogf.Printf(cfg.Logger)
	}
	r := &Replica{cfg: cfg, logf: logf, stop: make(chan struct{}), failed: make(chan struct{}), metrics: newReplicaMetrics()}
	if err := r.open(); err != nil {
		r.closeStores()
		return nil, fmt.Errorf("coordinator: start %s: %w", cfg.ID, err)
	}
	return r, nil
}

func (r *Replica) open() error {
	cfg := r.cfg
	rlog := newRaftLogger(raftHandler(cfg), cfg.ID)
	raftDir := filepath.Join(cfg.DataDir, "raft")
	if err := os.MkdirAll(raftDir, 0o755); err != nil {
		return err
	}
	var err error
	// raft-wal's Close leaves its meta store (a bbolt file, locked) open,
	// so a replica restarted in-process would wait on the lock forever:
	// hold the meta store here and close it after the WAL.
	r.meta = &metadb.BoltMetaDB{}
	segBytes := cfg.WALSegmentBytes
	if segBytes <= 0 {
		segBytes = wal.DefaultSegmentSize
	}
	if cfg.walVFS != nil {
		r.wal, err = wal.Open(raftDir, wal.WithMetaStore(r.meta), wal.WithSegmentSize(segBytes),
			wal.WithSegmentFiler(segment.NewFiler(raftDir, cfg.walVFS)))
	} else {
		r.wal, err = wal.Open(raftDir, wal.WithMetaStore(r.meta), wal.WithSegmentSize(segBytes))
	}
	if err != nil {
		return fmt.Errorf("raft log: %w", err)
	}
	r.log = newDurableLog(r.wal, r.fail)
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 2, rlog.Named("snapshots"))
	if err != nil {
		return fmt.Errorf("snapshot store: %w", err)
	}
	if r.fsm, err = OpenFSM(filepath.Join(cfg.DataDir, "db"), r.logf); err != nil {
		return err
	}
	r.fsm.OnStoreError(r.applyFailed)
	r.fsm.OnApplied(r.countApplied)
	// Raft is told not to restore the newest snapshot on start (the
	// database outlives the process), so restore it here if the database
	// is behind it: a crash lost unsynced writes, or the db was removed.
	if list, err := snaps.List(); err != nil {
		return fmt.Errorf("snapshots: %w", err)
	} else if len(list) > 0 && list[0].Index > r.fsm.AppliedIndex() {
		r.logf("coordinator: %s: database at log index %d, snapshot at %d: restoring", cfg.ID, r.fsm.AppliedIndex(), list[0].Index)
		_, rc, err := snaps.Open(list[0].ID)
		if err != nil {
			return fmt.Errorf("open snapshot: %w", err)
		}
		if err := r.fsm.Restore(rc); err != nil {
			return err
		}
	}
	addr, err := net.ResolveTCPAddr("tcp", cfg.RaftAddr)
	if err != nil {
		return fmt.Errorf("raft address: %w", err)
	}
	var advertise net.Addr
	if addr.Port != 0 && !addr.IP.IsUnspecified() {
		advertise = addr
	}
	if r.trans, err = r.transport(advertise, rlog.Named("transport")); err != nil {
		return fmt.Errorf("raft transport: %w", err)
	}

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.NoSnapshotRestoreOnStart = true
	rc.Logger = rlog
	if cfg.RaftTimeout > 0 {
		rc.HeartbeatTimeout = cfg.RaftTimeout
		rc.ElectionTimeout = cfg.RaftTimeout
		rc.LeaderLeaseTimeout = cfg.RaftTimeout / 2
	}
	if cfg.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = cfg.SnapshotThreshold
	}
	if cfg.TrailingLogs > 0 {
		rc.TrailingLogs = cfg.TrailingLogs
	}
	notify := make(chan bool, 16)
	rc.NotifyCh = notify

	if len(cfg.Bootstrap) > 0 {
		has, err := raft.HasExistingState(r.log, r.log, snaps)
		if err != nil {
			return fmt.Errorf("raft state: %w", err)
		}
		if !has {
			var conf raft.Configuration
			for _, p := range cfg.Bootstrap {
				a := p.Addr
				if p.ID == cfg.ID && a == "" {
					a = string(r.trans.LocalAddr())
				}
				conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(a)})
			}
			if err := raft.BootstrapCluster(rc, r.log, r.log, snaps, r.trans, conf); err != nil {
				return fmt.Errorf("bootstrap: %w", err)
			}
		}
	}
	if r.raft, err = raft.NewRaft(rc, timedFSM{FSM: r.fsm, apply: r.metrics.apply}, r.log, r.log, snaps, r.trans); err != nil {
		return fmt.Errorf("raft: %w", err)
	}
	r.svc = newService(r)
	if err := r.svc.startQueries(); err != nil {
		return err
	}
	r.wg.Add(1)
	go r.watchLeadership(notify)
	return nil
}

// transport is Raft's network: mutual TLS with cfg.RaftTLS, else plain
// TCP (CheckRaftSecurity allowed it).
func (r *Replica) transport(advertise net.Addr, logger hclog.Logger) (*raft.NetworkTransport, error) {
	cfg := r.cfg
	if cfg.RaftTLS == nil {
		r.logf("coordinator: %s: Raft at %s is plain TCP, unauthenticated (no Raft TLS credential; docs/security.md)", cfg.ID, cfg.RaftAddr)
		return raft.NewTCPTransportWithLogger(cfg.RaftAddr, advertise, 3, 10*time.Second, logger)
	}
	stream, err := listenTLS(cfg.RaftAddr, advertise, cfg.RaftTLS, func(remote net.Addr, err error) {
		r.metrics.raftRefused.Inc()
		r.logf("coordinator: %s: Raft connection from %s refused: %v", cfg.ID, remote, err)
	})
	if err != nil {
		return nil, err
	}
	// As raft.NewTCPTransport: peers cannot dial 0.0.0.0.
	if a, ok := stream.Addr().(*net.TCPAddr); !ok || a.IP == nil || a.IP.IsUnspecified() {
		stream.Close()
		return nil, fmt.Errorf("%s is not an address peers can dial", stream.Addr())
	}
	return raft.NewNetworkTransportWithLogger(stream, 3, 10*time.Second, logger), nil
}

// closeStores releases what open got, after a failed open.
func (r *Replica) closeStores() {
	if r.svc != nil {
		r.svc.stopAll()
	}
	if r.raft != nil {
		r.raft.Shutdown().Error()
	}
	if r.trans != nil {
		r.trans.Close()
	}
	if r.wal != nil {
		r.wal.Close()
	}
	if r.meta != nil {
		r.meta.Close()
	}
	if r.fsm != nil {
		r.fsm.Close()
	}
}

// Shutdown stops serving, leaves Raft running no more, and closes the
// stores. The data directory can be started again.
func (r *Replica) Shutdown() error {
	select {
	case <-r.stop:
		return nil
	default:
	}
	close(r.stop)
	r.svc.stopAll()
	err := r.raft.Shutdown().Error()
	r.wg.Wait()
	r.svc.wait()
	if cerr := r.trans.Close(); err == nil {
		err = cerr
	}
	if cerr := r.wal.Close(); err == nil {
		err = cerr
	}
	if cerr := r.meta.Close(); err == nil {
		err = cerr
	}
	if cerr := r.fsm.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("coordinator: shutdown %s: %w", r.cfg.ID, err)
	}
	return nil
}

// fail stops the replica for good after a fatal store error of its Raft
// log (durableLog): Raft shuts down, so this replica neither votes nor
// appends nor applies again, and Failed is closed. It runs on Raft's own
// goroutine, which Shutdown waits for, so the shutdown runs on another.
func (r *Replica) fail(err error) {
	r.failWith(err, "check the disk, then remove the replica's data directory and add it back")
}

// applyFailed stops the replica after its profile database failed to
// apply a committed entry (the FSM applies nothing more): the log still
// holds the entry, so once the disk is fixed a restart applies it.
func (r *Replica) applyFailed(err error) {
	r.failWith(fmt.Errorf("%w: %w", ErrReplicaFailed, err), "check the disk (free space), then restart the replica: it applies the log from that entry")
}

func (r *Replica) failWith(err error, advice string) {
	r.failOnce.Do(func() {
		r.failErr = err
		r.logf("coordinator: %s: FATAL: %v; the replica stops (docs/durability.md: %s)", r.cfg.ID, err, advice)
		close(r.failed)
		go func() {
			if r.raft != nil {
				r.raft.Shutdown().Error()
			}
		}()
	})
}

// Failed is closed when a fatal store error has stopped the replica; Err
// then says which.
func (r *Replica) Failed() <-chan struct{} { return r.failed }

// Err is the fatal error that stopped the replica, nil while it runs.
func (r *Replica) Err() error {
	select {
	case <-r.failed:
		return r.failErr
	default:
		return nil
	}
}

// ID is the replica's Raft server ID.
func (r *Replica) ID() string { return r.cfg.ID }

// Addr is the replica's Raft transport address.
func (r *Replica) Addr() string { return string(r.trans.LocalAddr()) }

// IsLeader reports whether this replica is the Raft leader.
func (r *Replica) IsLeader() bool { return r.raft.State() == raft.Leader }

// LeaderID is the current leader's ID as this replica knows it ("" if
// none).
func (r *Replica) LeaderID() string {
	_, id := r.raft.LeaderWithID()
	return string(id)
}

// DB is the replica's current database (it changes when a snapshot is
// restored).
func (r *Replica) DB() *storage.DB { return r.fsm.DB() }

// FSM is the replica's state machine.
func (r *Replica) FSM() *FSM { return r.fsm }

// Raft is the replica's Raft instance, for operations this package does
// not wrap (Snapshot, Stats).
func (r *Replica) Raft() *raft.Raft { return r.raft }

// AddVoter adds a replica to the group; leader only (ErrNotLeader). It
// waits for the configuration change until ctx ends (then its fate is
// unknown).
func (r *Replica) AddVoter(ctx context.Context, id, addr string) error {
	f := r.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeoutOf(ctx))
	if err := waitProposed(ctx, f); err != nil {
		return fmt.Errorf("coordinator: add voter %s at %s: %w", id, addr, err)
	}
	return nil
}

// RemoveServer removes a replica from the group; leader only.
func (r *Replica) RemoveServer(ctx context.Context, id string) error {
	if err := waitProposed(ctx, r.raft.RemoveServer(raft.ServerID(id), 0, timeoutOf(ctx))); err != nil {
		return fmt.Errorf("coordinator: remove server %s: %w", id, err)
	}
	return nil
}

// raftErr classes a Raft error: ErrNotLeader when nothing was proposed,
// ErrUnknownOutcome when a proposal's fate is unknown.
func raftErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress),
		errors.Is(err, raft.ErrRaftShutdown), errors.Is(err, raft.ErrEnqueueTimeout), errors.Is(err, raft.ErrNotVoter):
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrAbortedByRestore):
		return fmt.Errorf("%w: %w", ErrUnknownOutcome, err)
	}
	return fmt.Errorf("%w: %w", ErrInternal, err)
}

// watchLeadership starts the leader's service when this replica gains
// leadership and stops it when it loses it.
func (r *Replica) watchLeadership(notify <-chan bool) {
	defer r.wg.Done()
	var lead *leaderTerm
	stopLead := func() {
		if lead != nil {
			lead.stop()
			lead = nil
		}
	}
	defer stopLead()
	for {
		select {
		case <-r.stop:
			return
		case isLeader := <-notify:
			// Notifications can queue; act on the current state.
			isLeader = isLeader && r.raft.State() == raft.Leader
			if isLeader && lead == nil {
				r.logf("coordinator: %s is the leader", r.cfg.ID)
				var err error
				if lead, err = r.svc.lead(); err != nil {
					r.logf("coordinator: %s: start leader service: %v", r.cfg.ID, err)
					lead = nil
				}
			} else if !isLeader && lead != nil {
				r.logf("coordinator: %s lost leadership", r.cfg.ID)
				stopLead()
			}
		}
	}
}

// raftHandler is where raft's lines go: cfg.Logger's handler, or, without
// one, the standard logger, Warn and above only.
func raftHandler(cfg Config) slog.Handler {
	if cfg.Logger != nil {
		return cfg.Logger.Handler()
	}
	return logfHandler{logf: log.Printf}
}

// logWriter turns lines written to it into Logf calls.
type logWriter struct {
	logf func(string, ...any)
	mu   sync.Mutex
	buf  []byte
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.logf("%s", w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}
