package cluster

import (
	"context"
	"dcpi/config"
	"dcpi/transport"
	"dcpi/transport/auth"
	"errors"

	"github.com/nats-io/nats.go"
)

// ConnectRole connects a role to the cluster's NATS, as configured, with
// role's credentials (host names a node's host): nats.creds and nats.ca
// when given, else those of a local server of this user (see package
// transport/auth), waiting for the server if it has not started yet.
func ConnectRole(c config.NATS, role auth.Role, host, name string, lf func(string, ...any)) (*nats.Conn, error) {
	return Dial(c, role, host, name, true, lf)
}

// Dial is ConnectRole that, unless wait, gives up at once when no local
// server has written its credentials yet (a one-shot command's).
func Dial(c config.NATS, role auth.Role, host, name string, wait bool, logf func(string, ...any)) (*nats.Conn, error) {
	if len(c.URLs) == 0 {
		return nil, errors.New("no NATS server: set --nats URL (or nats.urls in the configuration)")
	}
	creds, err := auth.ResolveWait(context.Background(), c.URLs, c.Creds, c.CA, role, host, wait, logf)
	if err != nil {
		return nil, err
	}
	return transport.Connect(transport.ConnConfig{URLs: c.URLs, Name: name, CredsFile: creds.File,
		CAFile: creds.CA, CertFile: c.Cert, KeyFile: c.Key, Logf: logf})
}
