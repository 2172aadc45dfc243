package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"dcpi/cluster"
	"dcpi/internal/slogf"
	"dcpi/simhost"
)

// runClusterNode runs a simulated host as a member of a cluster
// (cluster.RunNodeRole) until --seconds of simulated time (0: until
// interrupted).
func runClusterNode(cmd *cobra.Command, progs []simhost.Program, events []string, mux bool, tel *cluster.Telemetry) error {
	cfg, err := loadRoleConfig(cmd)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := cluster.NodeRoleConfig{Config: cfg, Programs: progs, Events: events, Mux: mux, Telemetry: tel,
		Logger: slogf.Role("node " + cfg.Sim.Hostname + ": "), Out: cmd.OutOrStdout()}
	if progs[0].User() {
		c.Stdout, c.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
	}
	return cluster.RunNodeRole(ctx, c)
}
