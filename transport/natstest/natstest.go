// Package natstest runs NATS servers inside a test, as net/http/httptest
// runs HTTP servers: an embedded nats-server with JetStream on a loopback
// port the OS chooses, storing in the test's temporary directory, shut down
// when the test ends. A test may stop it and start it again on the same
// port and store, to see what clients do while it is away. It is for tests
// only; the server dcpi itself embeds is transport.StartServer.
//
// It does not import transport, so transport's own tests can use it.
package natstest

import (
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// readyTimeout bounds how long a start waits for the listener and
// JetStream's recovery of the store.
const readyTimeout = 30 * time.Second

// Options adjusts the server; the zero value is a plain JetStream server.
type Options struct {
	// MaxPayload is the largest message in bytes; 0 keeps nats-server's
	// default (1 MiB).
	MaxPayload int32
	// TLS, when set, makes the server require TLS with this configuration
	// (client certificates too, if it says so); URL then says tls://.
	TLS *tls.Config
}

// Server is an embedded nats-server owned by one test.
type Server struct {
	t    testing.TB
	opts Options
	dir  string // JetStream's store, kept across restarts

	mu   sync.Mutex
	port int            // chosen at the first start, kept across restarts
	ns   *server.Server // nil while stopped
}

// StartServer starts a server with JetStream and waits until it accepts
// clients; it fails the test if it cannot. The server shuts down when the
// test and its subtests end.
func StartServer(t testing.TB, opts Options) *Server {
	t.Helper()
	s := &Server{t: t, opts: opts, dir: filepath.Join(t.TempDir(), "jetstream")}
	s.Restart()
	t.Cleanup(s.Stop)
	return s
}

// Restart starts the server again after Stop, on the same port and store,
// so that clients reconnect to it and find their streams. It fails the test
// if the port was taken meanwhile.
func (s *Server) Restart() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ns != nil {
		s.t.Fatal("natstest: Restart of a running server")
	}
	port := s.port
	if port == 0 {
		port = server.RANDOM_PORT
	}
	o := &server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: s.dir,
		MaxPayload: s.opts.MaxPayload, NoLog: true, NoSigs: true}
	if s.opts.TLS != nil {
		o.TLS, o.TLSConfig = true, s.opts.TLS
		o.TLSVerify = s.opts.TLS.ClientAuth == tls.RequireAndVerifyClientCert
	}
	ns, err := server.NewServer(o)
	if err != nil {
		s.t.Fatalf("natstest: %v", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(readyTimeout) || !ns.JetStreamEnabled() {
		ns.Shutdown()
		ns.WaitForShutdown()
		s.t.Fatalf("natstest: server on port %d not ready with JetStream after %v", s.port, readyTimeout)
	}
	s.ns = ns
	s.port = ns.Addr().(*net.TCPAddr).Port
}

// Stop shuts the server down and waits until it has stopped; a stopped
// server's URL and Port stay valid for Restart. Stopping twice is harmless.
func (s *Server) Stop() {
	s.mu.Lock()
	ns := s.ns
	s.ns = nil
	s.mu.Unlock()
	if ns != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
	}
}

// Port is the client port, the same across restarts.
func (s *Server) Port() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.port
}

// URL is the client URL, the same across restarts: nats://, or tls:// when
// Options.TLS is set.
func (s *Server) URL() string {
	scheme := "nats"
	if s.opts.TLS != nil {
		scheme = "tls"
	}
	return fmt.Sprintf("%s://127.0.0.1:%d", scheme, s.Port())
}

// Connect connects to url with opts and closes the connection when the
// test ends.
func Connect(t testing.TB, url string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("natstest: connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	return nc
}
