package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"dcpi/cluster"
	"dcpi/config"
	"dcpi/internal/slogf"
	"dcpi/linuxhost/linuxnode"
	"dcpi/simhost"
)

// runClusterNode runs a host as a member of a cluster until --seconds
// (0: until interrupted): a simulated one (cluster.RunNodeRole), or with
// --linux this machine (linuxnode.Run).
func runClusterNode(cmd *cobra.Command, cfg config.Config, o nodeOptions, progs []simhost.Program, args []string, tel *cluster.Telemetry) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slogf.Role("node " + cfg.Sim.Hostname + ": ")
	if o.linux {
		o.lx.Config, o.lx.Programs, o.lx.Telemetry, o.lx.Logger, o.lx.Out = cfg, args, tel, logger, cmd.OutOrStdout()
		return linuxnode.Run(ctx, o.lx)
	}
	c := cluster.NodeRoleConfig{Config: cfg, Programs: progs, Events: o.events, Mux: o.mux, Telemetry: tel, Logger: logger, Out: cmd.OutOrStdout()}
	if progs[0].User() {
		c.Stdout, c.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
	}
	return cluster.RunNodeRole(ctx, c)
}
