package main

import (
	"fmt"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"dcpi/cluster"
	"dcpi/config"
	"dcpi/transport/auth"
)

// connectTool connects a one-shot command to the cluster at urls (--nats)
// with the configuration's NATS section, warnings on standard error.
func connectTool(cmd *cobra.Command, urls []string, role auth.Role, name string) (*nats.Conn, error) {
	c, err := natsConfig(cmd, urls)
	if err != nil {
		return nil, err
	}
	return cluster.ConnectTool(cmd.Context(), c, role, name, os.Stderr)
}

// natsConfig is the configuration's NATS section with --nats applied when
// given; a configuration that does not load is an error, not the defaults.
func natsConfig(cmd *cobra.Command, urls []string) (config.NATS, error) {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return config.NATS{}, err
	}
	c := cfg.NATS
	if f := cmd.Flags().Lookup("nats"); f != nil && (f.Changed || len(c.URLs) == 0) {
		c.URLs = urls
	}
	return c, nil
}

// refuseConfig refuses --config for a run that reads no configuration
// (what), rather than ignore it.
func refuseConfig(cmd *cobra.Command, what string) error {
	if f := cmd.Flags().Lookup("config"); f != nil && f.Changed {
		return fmt.Errorf("--config %s: %s reads no configuration file", f.Value, what)
	}
	return nil
}
