package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"

	"dcpi/internal/datadir"
	"dcpi/transport"
	"dcpi/transport/auth"
)

// NATSServer is the cluster's NATS server run as a role of its own (dcpi
// nats-server): JetStream's store and the credentials in its directory,
// locked against a second server on it.
type NATSServer struct {
	*auth.Server
	release func()
}

// StartNATSServer locks c.Dir, starts the server secured by the
// credentials there (generated on first start), and exposes its metrics
// and readiness on tel (nil: none).
func StartNATSServer(c transport.ServerConfig, tel *Telemetry) (*NATSServer, error) {
	if c.Dir == "" {
		return nil, errors.New("--dir: the JetStream store directory is required")
	}
	release, err := datadir.Lock(c.Dir, "--dir", "dcpi nats-server")
	if err != nil {
		return nil, err
	}
	srv, err := auth.StartServer(c)
	if err != nil {
		release()
		return nil, err
	}
	if tel != nil {
		if err := tel.Register(nil, srv.Collector()); err != nil {
			srv.Shutdown()
			release()
			return nil, err
		}
		tel.Ready.Add("nats server", srv.Ready)
	}
	return &NATSServer{Server: srv, release: release}, nil
}

// ServeNATS runs the NATS server role until ctx ends: it starts the
// server as StartNATSServer does, logs where it serves and how to add a
// host, prints its client URL alone on out (for scripts), and shuts it
// down when ctx ends.
func ServeNATS(ctx context.Context, c transport.ServerConfig, tel *Telemetry, out io.Writer, logf func(string, ...any)) error {
	srv, err := StartNATSServer(c, tel)
	if err != nil {
		return err
	}
	logf("serving at %s, JetStream in %s, credentials in %s%s", srv.ClientURL(), c.Dir, srv.Store.Dir(), srv.TLSNote())
	logf("to add a host: dcpi nats-server add-host NAME --dir %s (then give the host the file it prints)", c.Dir)
	fmt.Fprintln(out, srv.ClientURL())
	<-ctx.Done()
	logf("shutting down")
	srv.Shutdown()
	return nil
}

// TLSNote says how clients reach the server, for its start line.
func (s *NATSServer) TLSNote() string {
	if s.TLS {
		return "; TLS required, CA " + s.Store.CAFile()
	}
	return "; loopback only, no TLS"
}

// Shutdown stops the server and releases its directory.
func (s *NATSServer) Shutdown() {
	s.Server.Shutdown()
	s.release()
}
