package transport

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"dcpi/internal/slogf"
)

// ConnConfig configures a client connection to the embedded server or an
// external cluster.
type ConnConfig struct {
	// URLs are the servers to try (nats:// or tls://); at least one.
	URLs []string
	// Name identifies the client in the server's monitoring.
	Name string
	// CredsFile is a NATS credentials file: either a user JWT with its
	// NKey seed (an external cluster with decentralized auth) or an NKey
	// seed alone (what dcpi's own servers issue, see package
	// transport/auth). Empty for none. A seed file readable by group or
	// others is refused (CheckSecretFile).
	CredsFile string
	// CAFile verifies the servers' certificates; CertFile and KeyFile are
	// the client's own, for mutual TLS. Empty for none.
	CAFile, CertFile, KeyFile string
	// ReconnectWait is the pause between reconnect attempts to one server;
	// 0 means 1 s.
	ReconnectWait time.Duration
	// Logger receives connection events (disconnect, reconnect, async
	// errors); nil discards them.
	Logger *slog.Logger
	// OnError, if set, receives each asynchronous error itself (a
	// permissions violation wraps nats.ErrPermissionViolation), for
	// callers that test errors by identity rather than by their text.
	OnError func(error)
	// OnConnectFailure, if set, receives each failed attempt to connect
	// (the first connection's retries and reconnects alike): a count of
	// attempts is what a caller waiting for a server can tie its patience
	// to, where a loaded machine makes wall-clock time a poor measure.
	OnConnectFailure func(error)
}

// Connect opens a connection that never gives up: it retries the first
// connection in the background (RetryOnFailedConnect), so a node can start
// before the server, and reconnects forever (MaxReconnects -1).
//
// It disables the client's reconnect buffer: while disconnected, a publish
// fails at once instead of queueing a copy in the client. The Publisher's
// own queue is the buffer; it is bounded, ordered and conserving, and a
// second hidden buffer would fill with copies of every retry.
func Connect(cfg ConnConfig) (*nats.Conn, error) {
	if len(cfg.URLs) == 0 {
		return nil, errors.New("transport: connect: no server URLs")
	}
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		return nil, fmt.Errorf("transport: connect: client certificate %q and key %q must be given together", cfg.CertFile, cfg.KeyFile)
	}
	wait := cfg.ReconnectWait
	if wait <= 0 {
		wait = time.Second
	}
	logf := slogf.Printf(cfg.Logger)
	opts := []nats.Option{
		nats.Name(cfg.Name),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true),
		nats.ReconnectWait(wait),
		nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if err != nil {
				logf("transport: disconnected from %s: %v", nc.ConnectedUrlRedacted(), err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			logf("transport: reconnected to %s", nc.ConnectedUrlRedacted())
		}),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) {
			if cfg.OnConnectFailure != nil {
				cfg.OnConnectFailure(err)
			}
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			if cfg.OnError != nil {
				cfg.OnError(err)
			}
			if sub != nil {
				logf("transport: subscription %s: %v", sub.Subject, err)
				return
			}
			logf("transport: %v", err)
		}),
	}
	if cfg.CredsFile != "" {
		o, err := credsOptions(cfg.CredsFile)
		if err != nil {
			return nil, fmt.Errorf("transport: connect: %w", err)
		}
		opts = append(opts, o...)
	}
	if cfg.CAFile != "" {
		opts = append(opts, nats.RootCAs(cfg.CAFile))
	}
	if cfg.CertFile != "" {
		opts = append(opts, nats.ClientCert(cfg.CertFile, cfg.KeyFile))
	}
	urls := strings.Join(cfg.URLs, ",")
	nc, err := nats.Connect(urls, opts...)
	if err != nil {
		return nil, fmt.Errorf("transport: connect to %s: %w", urls, err)
	}
	return nc, nil
}
