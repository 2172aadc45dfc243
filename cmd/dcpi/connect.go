package main

import (
	"os"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"dcpi/cluster"
	"dcpi/config"
	"dcpi/transport/auth"
)

// connectTool connects a one-shot command (cluster.ConnectTool), its
// warnings on standard error.
func connectTool(c config.NATS, role auth.Role, name string) (*nats.Conn, error) {
	return cluster.ConnectTool(c, role, name, os.Stderr)
}

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
