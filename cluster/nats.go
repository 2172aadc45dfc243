package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"dcpi/config"
	"dcpi/transport"
	"dcpi/transport/auth"
)

// ConnectRole connects a role to the cluster's NATS, as configured, with
// role's credentials (host names a node's host): nats.creds and nats.ca
// when given, else those of a local server of this user (see package
// transport/auth), waiting for the server if it has not started yet
// (until ctx ends: a role stopped by a signal while it waits stops).
func ConnectRole(ctx context.Context, c config.NATS, role auth.Role, host, name string, logger *slog.Logger) (*nats.Conn, error) {
	return dial(ctx, c, role, host, name, true, logger, nil, nil)
}

// dial is ConnectRole that, unless wait, gives up at once when no local
// server has written its credentials yet (a one-shot command's), and
// hands onError (if set) each asynchronous error and onFailure (if set)
// each failed attempt to connect.
func dial(ctx context.Context, c config.NATS, role auth.Role, host, name string, wait bool, logger *slog.Logger, onError, onFailure func(error)) (*nats.Conn, error) {
	if len(c.URLs) == 0 {
		return nil, errors.New("no NATS server: set --nats URL (or nats.urls in the configuration)")
	}
	creds, err := auth.ResolveWait(ctx, c.URLs, c.Creds, c.CA, role, host, wait, logf(logger))
	if err != nil {
		return nil, err
	}
	return transport.Connect(transport.ConnConfig{URLs: c.URLs, Name: name, CredsFile: creds.File,
		CAFile: creds.CA, CertFile: c.Cert, KeyFile: c.Key, Logger: logger, OnError: onError, OnConnectFailure: onFailure})
}

// A one-shot command waits at least toolPatience for the NATS server, and
// until at least toolAttempts attempts to connect have failed.
const (
	toolPatience = 5 * time.Second
	toolAttempts = 2
)

// ConnectTool connects a one-shot command (a query, a cut): unlike the
// roles, which keep retrying in the background, it waits a few seconds for
// the server and otherwise says plainly that it cannot reach it. A request
// the server refuses is reported on warn at once (otherwise only a timeout
// would say the server dropped it).
//
// role is auth.Query for the analysis tools, auth.Coordinator for the
// administrative ones. Ending ctx (an interrupt) stops the wait.
func ConnectTool(ctx context.Context, c config.NATS, role auth.Role, name string, warn io.Writer) (*nats.Conn, error) {
	if warn == nil {
		warn = io.Discard
	}
	var lastErr atomic.Pointer[error]
	var refused atomic.Bool
	var failures atomic.Int32
	nc, err := dial(ctx, c, role, "", name, false, nil, func(err error) {
		lastErr.Store(&err)
		if errors.Is(err, nats.ErrPermissionViolation) && refused.CompareAndSwap(false, true) {
			fmt.Fprintf(warn, "dcpi: the NATS server refused a request: transport: %v (these credentials may not do this; the command needs the %s role's, see docs/security.md)\n", err, role)
		}
	}, func(err error) {
		lastErr.Store(&err)
		failures.Add(1)
	})
	if err != nil {
		return nil, err
	}
	// The tool gives up once toolPatience has passed and toolAttempts
	// attempts have ended: a server that is absent fails every attempt at
	// once, while on a loaded machine an attempt still under way is not
	// counted against a server that is there. The client reports a failed
	// dial (and the first connection's failure); a retry that dialled and
	// then failed its handshake (refused credentials) shows only in its
	// count of connections, which also counts the one under way.
	deadline := time.Now().Add(toolPatience)
	for !nc.IsConnected() {
		ended := int64(failures.Load()) + int64(nc.Stats().Reconnects) - 1
		if time.Now().After(deadline) && ended >= toolAttempts {
			var e error
			if p := lastErr.Load(); p != nil {
				e = *p
			}
			if le := nc.LastError(); le != nil {
				e = le // a failed first connect is not an async error
			}
			nc.Close()
			return nil, unreachable(c.URLs, role, e)
		}
		select {
		case <-ctx.Done():
			nc.Close()
			return nil, fmt.Errorf("stopped waiting for a NATS server at %s: %w", strings.Join(c.URLs, ","), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nc, nil
}

// unreachable says why a tool could not connect: refused credentials, a
// TLS failure, or no server at all.
func unreachable(urls []string, role auth.Role, err error) error {
	at := strings.Join(urls, ",")
	switch {
	case errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked):
		return fmt.Errorf("the NATS server at %s refused the credentials: %v (give the %s role's with nats.creds or DCPI_NATS_CREDS; see docs/security.md)", at, err, role)
	case isTLSError(err):
		return fmt.Errorf("cannot connect to the NATS server at %s over TLS: %v (give its CA with nats.ca or DCPI_NATS_CA; see docs/security.md)", at, err)
	}
	return fmt.Errorf("cannot reach a NATS server at %s (is the cluster running? set --nats)", at)
}

// isTLSError reports whether err is a failure of TLS: a certificate not
// verified, a server that speaks no TLS, or one that requires it.
func isTLSError(err error) bool {
	var verify *tls.CertificateVerificationError
	var authority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var record tls.RecordHeaderError
	return errors.As(err, &verify) || errors.As(err, &authority) || errors.As(err, &hostname) ||
		errors.As(err, &invalid) || errors.As(err, &record) ||
		errors.Is(err, nats.ErrSecureConnRequired) || errors.Is(err, nats.ErrSecureConnWanted)
}
