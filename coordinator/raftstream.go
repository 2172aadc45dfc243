package coordinator

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"dcpi/internal/httpauth"
)

// ErrRaftInsecure is returned by Start for a Raft address beyond
// loopback without Raft TLS (Config.RaftTLS) or the explicit opt-out
// (Config.RaftInsecure): whoever reaches a plain Raft port can append to
// the log, vote, and install a snapshot that replaces the database.
var ErrRaftInsecure = errors.New("plain Raft beyond loopback")

// raftHandshakeTimeout bounds an accepted connection's TLS handshake, so
// that a peer which connects and says nothing holds a goroutine no longer.
const raftHandshakeTimeout = 10 * time.Second

// CheckRaftSecurity is the rule of when Raft may run without TLS, on
// cfg's RaftAddr, RaftTLS and RaftInsecure: only on loopback (this
// machine's processes, who can read the data directory anyway), or beyond
// it when the operator said so. Start applies it; a caller with more to
// start first (an embedded NATS server) can apply it sooner.
func CheckRaftSecurity(cfg Config) error {
	if cfg.RaftTLS != nil {
		if cfg.RaftTLS.ClientAuth != tls.RequireAndVerifyClientCert || cfg.RaftTLS.MinVersion < tls.VersionTLS13 {
			return errors.New("the Raft TLS configuration must be TLS 1.3 and require and verify the peer's certificate")
		}
		return nil
	}
	if cfg.RaftInsecure || httpauth.Loopback(cfg.RaftAddr) {
		return nil
	}
	return fmt.Errorf("%w: --raft-addr %s: give the replica its Raft credential (coordinator.raft_tls, --raft-tls FILE, issued by dcpi coordinator raft-cert), or say --raft-insecure on a network only the replicas reach",
		ErrRaftInsecure, cfg.RaftAddr)
}

// tlsStreamLayer is Raft's network under mutual TLS: every connection,
// dialled or accepted, is TLS 1.3 with both replicas' certificates
// verified (the config's rules) before Raft reads a byte of it.
type tlsStreamLayer struct {
	net.Listener
	advertise net.Addr // nil: the listener's address
	cfg       *tls.Config
	refused   func(remote net.Addr, err error)
}

var _ raft.StreamLayer = (*tlsStreamLayer)(nil)

// listenTLS listens at addr for Raft over TLS; refused is told of every
// accepted connection whose handshake failed.
func listenTLS(addr string, advertise net.Addr, cfg *tls.Config, refused func(net.Addr, error)) (*tlsStreamLayer, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &tlsStreamLayer{Listener: l, advertise: advertise, cfg: cfg, refused: refused}, nil
}

// Accept returns the next connection with its handshake still to come:
// the handshake runs on Raft's goroutine for that connection, at its
// first read, so a slow or silent client cannot hold up the others.
func (l *tlsStreamLayer) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &handshakeConn{Conn: tls.Server(c, l.cfg), refused: l.refused}, nil
}

// Addr is the address the replica advertises to its peers.
func (l *tlsStreamLayer) Addr() net.Addr {
	if l.advertise != nil {
		return l.advertise
	}
	return l.Listener.Addr()
}

// Dial connects to a peer and completes the handshake before Raft writes
// a byte, so an RPC never goes to an unverified peer.
func (l *tlsStreamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: l.cfg}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", string(addr))
	if err != nil {
		return nil, fmt.Errorf("raft tls: dial %s: %w", addr, err)
	}
	return c, nil
}

// handshakeConn is an accepted connection whose first read or write
// completes the server's handshake, bounded by raftHandshakeTimeout.
type handshakeConn struct {
	*tls.Conn
	refused func(net.Addr, error)
	once    sync.Once
	err     error
}

func (c *handshakeConn) handshake() error {
	c.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), raftHandshakeTimeout)
		defer cancel()
		if c.err = c.Conn.HandshakeContext(ctx); c.err != nil {
			c.refused(c.RemoteAddr(), c.err)
			c.Conn.Close()
		}
	})
	return c.err
}

func (c *handshakeConn) Read(p []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

func (c *handshakeConn) Write(p []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}
