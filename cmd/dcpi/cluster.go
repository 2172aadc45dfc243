package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/spf13/cobra"

	"dcpi/analysis"
	"dcpi/analysis/profileme"
	"dcpi/config"
	"dcpi/coordinator"
	"dcpi/storage"
	"dcpi/transport"
	"dcpi/transport/auth"
	"dcpi/wire"
)

// connectNATS connects a role to the cluster's NATS, as configured, with
// role's credentials (host names a node's host): nats.creds and nats.ca
// when given, else those of a local server of this user (see package
// transport/auth), waiting for the server if it has not started yet.
func connectNATS(c config.NATS, role auth.Role, host, name string, logf func(string, ...any)) (*nats.Conn, error) {
	return dialNATS(c, role, host, name, true, logf)
}

func dialNATS(c config.NATS, role auth.Role, host, name string, wait bool, logf func(string, ...any)) (*nats.Conn, error) {
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

// connectTool connects a one-shot command (a query, a cut): unlike the
// roles, which keep retrying in the background, it waits a few seconds for
// the server and otherwise says plainly that it cannot reach it.
//
// role is auth.Query for the analysis tools, auth.Coordinator for the
// administrative ones.
func connectTool(c config.NATS, role auth.Role, name string) (*nats.Conn, error) {
	var lastErr atomic.Value
	var refused atomic.Bool
	nc, err := dialNATS(c, role, "", name, false, func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		lastErr.Store(msg)
		if strings.Contains(strings.ToLower(msg), "permissions violation") && refused.CompareAndSwap(false, true) {
			// Otherwise only a timeout says the server dropped it.
			fmt.Fprintf(os.Stderr, "dcpi: the NATS server refused a request: %s (these credentials may not do this; the command needs the %s role's, see docs/security.md)\n", msg, role)
		}
	})
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(5 * time.Second)
	for !nc.IsConnected() {
		if time.Now().After(deadline) {
			e, _ := lastErr.Load().(string)
			if le := nc.LastError(); le != nil {
				e = le.Error() // a failed first connect is not an async error
			}
			nc.Close()
			if strings.Contains(strings.ToLower(e), "authorization") {
				return nil, fmt.Errorf("the NATS server at %s refused the credentials: %s (give the %s role's with nats.creds or DCPI_NATS_CREDS; see docs/security.md)",
					strings.Join(c.URLs, ","), e, role)
			}
			if strings.Contains(e, "x509") || strings.Contains(e, "tls") {
				return nil, fmt.Errorf("cannot connect to the NATS server at %s over TLS: %s (give its CA with nats.ca or DCPI_NATS_CA; see docs/security.md)",
					strings.Join(c.URLs, ","), e)
			}
			return nil, fmt.Errorf("cannot reach a NATS server at %s (is the cluster running? set --nats)", strings.Join(c.URLs, ","))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nc, nil
}

// control adapts the coordinator client to the node's Control. Its
// registrations carry the host's events per sample (periods: what
// simhost.EventsPerSample makes of its counter configuration), which the
// node does not know.
type control struct {
	c       *coordinator.Client
	labels  map[string]string
	cpus    int
	periods map[uint8]uint64
}

func (c control) Register(ctx context.Context, host string, labels map[string]string, cpus int) error {
	return c.c.Register(ctx, host, labels, cpus, c.periods)
}

func (c control) Heartbeat(ctx context.Context, host string) (uint64, error) {
	st, err := c.c.Heartbeat(ctx, host)
	if err != nil {
		return 0, err
	}
	if !st.Registered {
		// Forgotten (a restored snapshot, say): register again.
		if err := c.c.Register(ctx, host, c.labels, c.cpus, c.periods); err != nil {
			return 0, err
		}
	}
	return st.Epoch, nil
}

func (c control) AckEpoch(ctx context.Context, host string, epoch uint64, lastSeq []uint64) error {
	return c.c.AckEpoch(ctx, host, epoch, lastSeq)
}

// clusterSource reads profiles and images through the coordinator's query
// service, for the analysis tools.
type clusterSource struct {
	ctx          context.Context
	c            *coordinator.Client
	linearizable bool
}

func (s clusterSource) Profile(q storage.Query, fn func(image wire.ImageKey, offset uint64, event uint8, host string, count uint64) error) error {
	return s.c.Profile(s.ctx, q, s.linearizable, fn)
}

func (s clusterSource) Image(key wire.ImageKey) (*wire.ImageRecord, error) {
	rs, err := s.c.Images(s.ctx, []wire.ImageKey{key})
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("image %v: %w", key, storage.ErrNotFound)
	}
	return rs[0], nil
}

var _ analysis.Source = clusterSource{}

// natsConfig is the configuration's NATS section with --nats applied when
// given.
func natsConfig(cmd *cobra.Command, urls []string) config.NATS {
	c := config.Defaults().NATS
	if cfg, err := loadConfig(cmd); err == nil {
		c = cfg.NATS
	}
	if f := cmd.Flags().Lookup("nats"); f != nil && (f.Changed || len(c.URLs) == 0) {
		c.URLs = urls
	}
	return c
}

func (s clusterSource) Stacks(q storage.Query, fn func(st *storage.Stack, event uint8, host string, count uint64) error) error {
	return s.c.Stacks(s.ctx, q, s.linearizable, fn)
}

var _ analysis.StackSource = clusterSource{}

func (s clusterSource) MeProfile(q storage.Query, fn func(r *storage.MeRow) error) error {
	return s.c.MeProfile(s.ctx, q, s.linearizable, fn)
}

func (s clusterSource) MeHistory(q storage.Query, fn func(r *storage.MeHistRow) error) error {
	return s.c.MeHistory(s.ctx, q, s.linearizable, fn)
}

func (s clusterSource) MeAddrs(q storage.Query, fn func(r *storage.MeAddrRow) error) error {
	return s.c.MeAddrs(s.ctx, q, s.linearizable, fn)
}

var (
	_ profileme.Source        = clusterSource{}
	_ profileme.HistorySource = clusterSource{}
	_ profileme.AddrSource    = clusterSource{}
)
