package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"dcpi/cluster"
	"dcpi/internal/slogf"
	"dcpi/transport"
	"dcpi/transport/auth"
	"dcpi/transport/auth/enroll"
)

func newNATSServerCommand() *cobra.Command {
	var dir, host string
	var port int
	var syncAlways bool
	var syncInterval time.Duration
	cmd := &cobra.Command{
		Use:   "nats-server",
		Short: "Run a standalone NATS server with JetStream for the cluster's roles",
		Long: `Run the NATS server that dcpi coordinator embeds by default, as a process of
its own: JetStream stores the batch stream and the image bucket under
--dir, and a server started again on the same --dir recovers both. It
runs until SIGTERM or SIGINT.

Point the roles at it with --nats nats://HOST:PORT. On first start it
generates the cluster's credentials in --dir/auth (see docs/security.md):
roles of the same user on this machine find them; a host elsewhere needs
the file "dcpi nats-server add-host NAME" issues. Beyond loopback
(--host 0.0.0.0) clients must use TLS with the generated CA (auth/ca.pem). Running it apart from
the coordinators lets it be stopped and restarted on its own (the failure
test kills it with SIGKILL and starts it again on the same directory and
port).`,
		Example: `  dcpi nats-server --dir /var/dcpi/nats --port 4222
  dcpi nats-server --dir /var/dcpi/nats --port 4222 --metrics 127.0.0.1:9100
  dcpi coordinator --nats nats://127.0.0.1:4222 --id c1 ...`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log := slogf.Role("nats-server: ")
			logf := slogf.Printf(log)
			tel, err := startRoleTelemetry(cmd, logf)
			if err != nil {
				return err
			}
			defer tel.Close()
			return cluster.ServeNATS(ctx, transport.ServerConfig{Dir: dir, Host: host, Port: port, Name: "dcpi-nats", Logger: log,
				SyncAlways: syncAlways, SyncInterval: syncInterval}, tel, cmd.OutOrStdout(), logf)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "directory of JetStream's store (required)")
	f.StringVar(&host, "host", "127.0.0.1", "address to listen on")
	f.IntVar(&port, "port", 4222, "client port (0: chosen by the OS, printed on start)")
	f.BoolVar(&syncAlways, "sync-always", false, "fsync every message before acknowledging it (nats-server's sync_interval: always; docs/durability.md)")
	f.DurationVar(&syncInterval, "sync-interval", 0, "the store's fsync period without --sync-always (0: nats-server's 2 minutes)")
	addMetricsFlag(f, "")
	cmd.AddCommand(newAddHostCommand(), newRevokeHostCommand())
	return cmd
}

func newAddHostCommand() *cobra.Command {
	var req enroll.Request
	var out string
	cmd := keyStoreCommand(cobra.Command{
		Use:   "add-host NAME",
		Short: "Issue a host's NATS credentials (a new key beside any it has)",
		Long: `Issue a new NKey for host NAME in --dir/auth/hosts/NAME and print its file:
the node agent of NAME connects with it (nats.creds or DCPI_NATS_CREDS)
and may publish only NAME's subjects. A running server loads it within a
second. With --url, write instead the host's enrollment bundle (-o, mode
0600): the key, the CA, the URLs and --label's labels in one file, which
"dcpi enroll" installs on the host (docs/deploy.md). To rotate: add-host
again, restart the agent with the new key, then revoke-host NAME --key OLD.`,
		Example: `  dcpi nats-server add-host alpha1 --dir /var/dcpi/nats
  dcpi nats-server add-host alpha7 --dir /var/lib/dcpi/nats --url tls://nats.example:4222 --label rack=r1`,
	}, auth.OpenExisting, func(w io.Writer, st *auth.Store, host string) error {
		req.Host = host
		return enroll.AddHost(w, st, req, out, time.Now())
	})
	f := cmd.Flags()
	f.StringSliceVar(&req.URLs, "url", nil, "write an enrollment bundle for these NATS URL(s) (tls://HOST:PORT beyond loopback)")
	f.StringToStringVar(&req.Labels, "label", nil, "the bundle's host label `key=value` (node.labels)")
	f.DurationVar(&req.Valid, "valid", enroll.DefaultValid, "how long the bundle may be installed (the key lasts until revoked)")
	f.StringVarP(&out, "output", "o", "", "the bundle's file (default NAME.dcpi-bundle; never replaced)")
	return cmd
}

func newRevokeHostCommand() *cobra.Command {
	var key string
	cmd := keyStoreCommand(cobra.Command{
		Use:   "revoke-host NAME",
		Short: "Revoke a host's NATS credentials (one key with --key, else all)",
		Long: `Delete host NAME's key --key (or every key of NAME) from --dir/auth: a
running server stops accepting it within a second and disconnects the
clients that used it.`,
		Example: `  dcpi nats-server revoke-host alpha1 --dir /var/dcpi/nats --key UABC...`,
	}, auth.OpenExisting, func(w io.Writer, st *auth.Store, host string) error {
		n, err := st.RevokeHost(host, key)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "host %s: %d key(s) revoked\n", host, n)
		return nil
	})
	cmd.Flags().StringVar(&key, "key", "", "the public key to revoke (empty: all of the host's)")
	return cmd
}

// keyStoreCommand is meta, a command of one argument on the cluster's key
// store (--dir), which open opens for run.
func keyStoreCommand(meta cobra.Command, open func(string) (*auth.Store, error), run func(w io.Writer, st *auth.Store, arg string) error) *cobra.Command {
	var dir string
	meta.Args = cobra.ExactArgs(1)
	meta.RunE = func(cmd *cobra.Command, args []string) error {
		st, err := open(dir)
		if err != nil {
			return err
		}
		return run(cmd.OutOrStdout(), st, args[0])
	}
	meta.Flags().StringVar(&dir, "dir", "", "the cluster's key store: the NATS server's --dir (a coordinator's embedded one is DATA_DIR/nats)")
	meta.MarkFlagRequired("dir")
	return &meta
}
