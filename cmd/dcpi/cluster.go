package main

import (
	"context"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"

	"github.com/spf13/cobra"

	"dcpi/analysis"
	"dcpi/analysis/profileme"
	"dcpi/cluster"
	"dcpi/config"
	"dcpi/coordinator"
	"dcpi/storage"
	"dcpi/transport/auth"
	"dcpi/wire"
)

// connectTool connects a one-shot command (cluster.ConnectTool), its
// warnings on standard error.
func connectTool(c config.NATS, role auth.Role, name string) (*nats.Conn, error) {
	return cluster.ConnectTool(c, role, name, os.Stderr)
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
