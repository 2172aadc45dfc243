package transport

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"dcpi/internal/slogf"
)

// ServerConfig configures the embedded NATS server.
type ServerConfig struct {
	// Dir is where JetStream stores the stream and the image bucket
	// (required). A server restarted on the same Dir recovers both.
	Dir string
	// Host is the address to listen on; empty means 127.0.0.1, so the
	// embedded default is not reachable from other machines by accident.
	Host string
	// Port is the client port; 0 lets the OS choose (see ClientURL).
	Port int
	// Name is the server's name in logs and cluster views; empty lets the
	// server make one up.
	Name string
	// MaxPayload is the largest message in bytes; 0 means
	// DefaultMaxPayload. A batch that encodes larger is replaced by a
	// tombstone (drop counter "transport.too_large").
	MaxPayload int32
	// Logger receives the server's warnings and errors; nil discards
	// them.
	Logger *slog.Logger
	// SyncAlways makes JetStream fsync every message before it
	// acknowledges it (nats-server's sync_interval: always). Without it
	// the file store fsyncs every SyncInterval, and a power loss loses
	// what was acknowledged since (docs/durability.md).
	SyncAlways bool
	// SyncInterval is the file store's fsync period when not SyncAlways;
	// 0 means nats-server's default (2 minutes).
	SyncInterval time.Duration
	// Users, when not nil, are the only clients the server accepts: each
	// authenticates with its NKey (a signed nonce, so the seed never
	// travels) and may publish and subscribe only where its Permissions
	// say. Nil accepts every client with every permission, as tests'
	// servers do. Package transport/auth builds them per role.
	Users []*server.NkeyUser
	// TLS, when set, makes every client connection use TLS with this
	// configuration (the server's certificate).
	TLS *tls.Config
}

// DefaultMaxPayload is the embedded server's message size limit: 8 MiB,
// NATS's recommended ceiling, against its 1 MiB default, because a batch of
// a busy 4-CPU interval with per-process profiles can pass 1 MiB.
const DefaultMaxPayload = 8 << 20

// startTimeout bounds how long StartServer waits for the listener and
// JetStream's recovery of Dir.
const startTimeout = 30 * time.Second

// Server is an embedded nats-server with JetStream.
type Server struct {
	ns   *server.Server
	mu   sync.Mutex      // SetUsers
	opts *server.Options // the options in force, for the next reload
}

// serverPingInterval and serverMaxPingsOut bound how long the server keeps
// a client it can no longer reach (see StartServer).
const (
	serverPingInterval = 3 * time.Second
	serverMaxPingsOut  = 3
)

// StartServer starts a nats-server with JetStream storing in cfg.Dir and
// waits until it accepts clients with JetStream enabled. If it cannot, it
// shuts the server down and returns the server's own complaint (port in
// use, directory not writable, ...).
func StartServer(cfg ServerConfig) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("transport: start server: no JetStream directory (ServerConfig.Dir)")
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("transport: start server: %w", err)
	}
	host := cfg.Host
	if host == "" {
		host = "127.0.0.1"
	}
	port := cfg.Port
	switch {
	case port == 0:
		port = server.RANDOM_PORT
	case port < 0 || port > 65535:
		return nil, fmt.Errorf("transport: start server: port %d out of range", cfg.Port)
	}
	maxPayload := cfg.MaxPayload
	if maxPayload == 0 {
		maxPayload = DefaultMaxPayload
	}
	opts := &server.Options{
		ServerName:   cfg.Name,
		Host:         host,
		Port:         port,
		JetStream:    true,
		StoreDir:     cfg.Dir,
		MaxPayload:   maxPayload,
		SyncAlways:   cfg.SyncAlways,
		SyncInterval: cfg.SyncInterval,
		// The embedding process owns signals; the server must not exit
		// it on SIGTERM.
		NoSigs: true,
		// A client cut off by a network partition keeps its
		// subscriptions on the server until the server finds the
		// connection dead; NATS's default (a ping every 2 minutes, 2
		// unanswered) leaves a partitioned coordinator's queue
		// subscription for minutes, and the server hands it a share of
		// the requests on the leader's and replicas' subjects, which go
		// unanswered. Pinging every 3 s and giving up after 3 unanswered
		// closes it within about 12 s (the partition test,
		// cmd/dcpi/partition_test.go, measures it).
		PingInterval: serverPingInterval,
		MaxPingsOut:  serverMaxPingsOut,
	}
	if cfg.Users != nil {
		opts.Nkeys = cfg.Users
	}
	if cfg.TLS != nil {
		opts.TLS, opts.TLSConfig = true, cfg.TLS
		opts.TLSTimeout = 5
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("transport: start server: %w", err)
	}
	// The server reports a failed listen or JetStream start only by
	// logging it (Fatalf), so keep the last error to return it.
	lg := &serverLog{logf: slogf.Printf(cfg.Logger)}
	ns.SetLoggerV2(lg, false, false, false)
	go ns.Start()
	if err := waitReady(ns, lg); err != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, fmt.Errorf("transport: start server on %s:%d (store %s): %w", host, cfg.Port, cfg.Dir, err)
	}
	if !ns.JetStreamEnabled() {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, fmt.Errorf("transport: start server: JetStream in %s not enabled: %s", cfg.Dir, lg.last())
	}
	return &Server{ns: ns, opts: opts}, nil
}

// ErrNoUsers is returned by SetUsers on a server started without Users:
// one that accepts every client cannot be given a list of them later.
var ErrNoUsers = errors.New("server was started without users")

// SetUsers replaces the accepted users of a server started with Users:
// new ones may connect at once, and the clients of removed ones are
// disconnected by the server (a revoked credential stops working without
// a restart).
func (s *Server) SetUsers(users []*server.NkeyUser) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opts.Nkeys == nil {
		return fmt.Errorf("transport: set users: %w", ErrNoUsers)
	}
	if users == nil {
		users = []*server.NkeyUser{}
	}
	next := s.opts.Clone()
	next.Nkeys = users
	if err := s.ns.ReloadOptions(next); err != nil {
		return fmt.Errorf("transport: set users: %w", err)
	}
	s.opts = next
	return nil
}

// waitReady waits until ns accepts clients. A failed listen or JetStream
// start stops the server's start-up without closing anything it waits on,
// so it also watches the log for a fatal error, to fail at once rather than
// after startTimeout.
func waitReady(ns *server.Server, lg *serverLog) error {
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		if ns.ReadyForConnections(25 * time.Millisecond) {
			return nil
		}
		if msg := lg.fatal(); msg != "" {
			return errors.New(msg)
		}
	}
	return fmt.Errorf("not ready after %v: %s", startTimeout, lg.last())
}

// ClientURL is the URL clients connect to, with the port the OS chose.
func (s *Server) ClientURL() string { return s.ns.ClientURL() }

// Port is the client port the server listens on (0 once shut down).
func (s *Server) Port() int {
	if a, ok := s.ns.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

// Shutdown stops the server and waits until it has stopped, so that a new
// server can take the same Dir and port at once.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

// serverLog adapts the server's logger to Logf and remembers the last
// error, which StartServer reports.
type serverLog struct {
	logf     func(string, ...any)
	mu       sync.Mutex
	lastErr  string
	lastFail string // last fatal error
}

func (l *serverLog) record(level, format string, args []any) {
	msg := fmt.Sprintf(format, args...)
	if level != "warn" {
		l.mu.Lock()
		l.lastErr = msg
		if level == "fatal" {
			l.lastFail = msg
		}
		l.mu.Unlock()
	}
	if l.logf != nil {
		l.logf("nats-server %s: %s", level, msg)
	}
}

func (l *serverLog) fatal() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastFail
}

func (l *serverLog) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lastErr == "" {
		return "no error logged"
	}
	return l.lastErr
}

func (l *serverLog) Noticef(string, ...any)            {}
func (l *serverLog) Debugf(string, ...any)             {}
func (l *serverLog) Tracef(string, ...any)             {}
func (l *serverLog) Warnf(format string, args ...any)  { l.record("warn", format, args) }
func (l *serverLog) Errorf(format string, args ...any) { l.record("error", format, args) }
func (l *serverLog) Fatalf(format string, args ...any) { l.record("fatal", format, args) }
