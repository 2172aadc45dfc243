package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"dcpi/cluster"
	"dcpi/config"
	"dcpi/coordinator"
	"dcpi/internal/slogf"
	"dcpi/transport/auth"
)

func newCoordinatorCommand() *cobra.Command {
	var natsURLs []string
	var embed bool
	var httpAddr string
	cmd := &cobra.Command{
		Use:   "coordinator",
		Short: "Run one replica of the Raft-replicated coordinator (and, by default, an embedded NATS server)",
		Long: `Run one replica of the coordinator: hashicorp/raft with a durable log and
stable store (raft-wal) and TCP transport, whose state machine applies
aggregators' deltas to a Pebble profile database, keeps the fleet's
members and epochs, and answers queries over NATS. With --raft-tls FILE
("dcpi coordinator raft-cert ID" issues it) Raft runs over mutual TLS 1.3;
without, plain TCP, allowed beyond loopback only with --raft-insecure.

With --embed-nats (the default when no --nats URL is given) the process
also runs a NATS server with JetStream, storing under DATA_DIR/nats, at
nats.embed_host:nats.embed_port (127.0.0.1:4222).

A new group is formed from --peers (id=host:port for every voter,
identical on each) the first time; afterwards the data directory holds
the membership. Add and remove replicas with "dcpi coordinator add-voter"
and "dcpi coordinator remove".

With --http ADDR the replica also serves the web UI of dcpi web over the
cluster's profiles at ADDR (docs/web.md).`,
		Example: `  dcpi coordinator --id c1 --raft-addr 127.0.0.1:7001 --data-dir /var/dcpi/c1 \
      --peers c1=127.0.0.1:7001,c2=127.0.0.1:7002,c3=127.0.0.1:7003
  dcpi coordinator --config examples/coordinator-c2.yaml --metrics 127.0.0.1:9112`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadRoleConfig(cmd)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			tel, err := startRoleTelemetry(cmd, nil)
			if err != nil {
				return err
			}
			defer tel.Close()
			return runCoordinator(ctx, cfg, embed || len(cfg.NATS.URLs) == 0, tel, httpAddr)
		},
	}
	f := cmd.Flags()
	f.String("id", "c1", "this replica's ID")
	f.String("raft-addr", "127.0.0.1:7001", "host:port of this replica's Raft transport")
	f.String("raft-tls", "", "this replica's Raft credential `FILE` (dcpi coordinator raft-cert): Raft over mutual TLS")
	f.Bool("raft-insecure", false, "allow plain TCP Raft beyond loopback (a network only the replicas reach)")
	f.String("data-dir", "dcpi-coord", "directory of the Raft log, snapshots and the profile database")
	f.StringSlice("peers", nil, "the initial voters, id=host:port each (used only when the data directory is new)")
	f.Duration("epoch-every", 0, "as leader, cut an epoch at every multiple of this period of wall-clock time, e.g. 1h cuts on the hour (0: by hand only; coordinator.epoch_every, docs/cluster.md)")
	f.StringSliceVar(&natsURLs, "nats", nil, "NATS server(s) to use instead of an embedded one")
	f.BoolVar(&embed, "embed-nats", false, "run an embedded NATS server even when --nats is given")
	f.Int("nats-port", 4222, "port of the embedded NATS server")
	addMetricsFlag(f, "")
	f.StringVar(&httpAddr, "http", "", "serve the web UI (dcpi web) at `HOST:PORT` too")
	cmd.AddCommand(newRaftCertCommand(), membershipCommand(cobra.Command{
		Use:   "add-voter [flags] ID HOST:PORT",
		Short: "Add a replica to the Raft group (ID HOST:PORT)",
		Long: `Add replica ID, whose Raft transport listens at HOST:PORT, to the group as
a voter, through the current leader. Start the new replica first, with an
empty data directory and no --peers: it waits to be added, then receives a
snapshot of the profile database and the log after it.`,
		Example: `  dcpi coordinator --id c4 --raft-addr 127.0.0.1:7004 --data-dir /var/dcpi/c4 --nats nats://127.0.0.1:4222
  dcpi coordinator add-voter c4 127.0.0.1:7004 --nats nats://127.0.0.1:4222`,
	}, 2),
		membershipCommand(cobra.Command{
			Use:   "remove [flags] ID",
			Short: "Remove a replica from the Raft group (ID)",
			Long: `Remove replica ID from the Raft group, through the current leader. The
replica stops receiving the log; stop its process afterwards. Removing
the leader makes the others elect a new one.`,
			Example: `  dcpi coordinator remove c3 --nats nats://127.0.0.1:4222`,
		}, 1))
	return cmd
}

func runCoordinator(ctx context.Context, cfg config.Config, embed bool, tel *cluster.Telemetry, httpAddr string) error {
	log := slogf.Role("coordinator " + cfg.Coordinator.ID)
	if u := tel.URL(); u != "" {
		slogf.Printf(log)("metrics at %s/metrics, readiness at %s/readyz", u, u)
	}
	r, err := cluster.StartReplica(ctx, cluster.ReplicaConfig{Config: cfg, EmbedNATS: embed, Telemetry: tel, Logger: log, HTTPAddr: httpAddr})
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Wait(ctx)
}

func newRaftCertCommand() *cobra.Command {
	return keyStoreCommand(cobra.Command{
		Use:     "raft-cert ID",
		Short:   "Issue replica ID's Raft credential (mutual TLS between the replicas)",
		Long:    `Issue replica ID its Raft credential (--raft-tls) in --dir/auth/raft/ID.pem; docs/security.md.`,
		Example: `  dcpi coordinator raft-cert c2 --dir /var/dcpi/nats`,
	}, auth.Open, func(w io.Writer, st *auth.Store, id string) error {
		cred, err := st.IssueRaftCredential(id)
		if err == nil {
			fmt.Fprintf(w, "replica %s: Raft credential, valid until %s\n%s\n", cred.ID, cred.NotAfter.Format(time.DateOnly), cred.File)
		}
		return err
	})
}

// membershipCommand is add-voter (nargs 2) or remove (nargs 1), with the
// help text of meta.
func membershipCommand(meta cobra.Command, nargs int) *cobra.Command {
	var natsURLs []string
	cmd := &cobra.Command{
		Use:     meta.Use,
		Short:   meta.Short,
		Long:    meta.Long,
		Example: meta.Example,
		Args:    cobra.ExactArgs(nargs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withCoordinator(cmd, natsURLs, "dcpi-membership", func(ctx context.Context, c *coordinator.Client) (err error) {
				if nargs == 2 {
					err = c.AddVoter(ctx, args[0], args[1])
				} else {
					err = c.RemoveServer(ctx, args[0])
				}
				if err != nil {
					return fmt.Errorf("%s: %w", cmd.Name(), err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %v: committed\n", cmd.Name(), args)
				return nil
			})
		},
	}
	cmd.Flags().StringSliceVar(&natsURLs, "nats", []string{"nats://127.0.0.1:4222"}, "NATS server(s) of the cluster")
	return cmd
}

// withCoordinator runs op with a client of the coordinator, connected
// through natsURLs with the coordinator role's credentials, under a 30 s
// deadline: an administrative command's one request.
func withCoordinator(cmd *cobra.Command, natsURLs []string, name string, op func(context.Context, *coordinator.Client) error) error {
	nc, err := connectTool(cmd, natsURLs, auth.Coordinator, name)
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
	defer cancel()
	return op(ctx, coordinator.NewClient(nc))
}
