package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"dcpi/transport"
)

func init() { subcommands = append(subcommands, newNATSServerCommand) }

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

Point the roles at it with --nats nats://HOST:PORT. Running it apart from
the coordinators lets it be stopped and restarted on its own (the failure
test kills it with SIGKILL and starts it again on the same directory and
port).`,
		Example: `  dcpi nats-server --dir /var/dcpi/nats --port 4222
  dcpi nats-server --dir /var/dcpi/nats --port 4222 --metrics 127.0.0.1:9100
  dcpi coordinator --nats nats://127.0.0.1:4222 --id c1 ...`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return errors.New("--dir: the JetStream store directory is required")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			logf := stderrLog("nats-server: ")
			release, err := lockDataDir(dir, "--dir", "dcpi nats-server")
			if err != nil {
				return err
			}
			defer release()
			tel, err := startRoleTelemetry(cmd, logf)
			if err != nil {
				return err
			}
			defer tel.close()
			srv, err := transport.StartServer(transport.ServerConfig{Dir: dir, Host: host, Port: port, Name: "dcpi-nats", Logf: logf,
				SyncAlways: syncAlways, SyncInterval: syncInterval})
			if err != nil {
				return err
			}
			if err := tel.register(nil, srv.Collector()); err != nil {
				srv.Shutdown()
				return err
			}
			tel.ready.Add("nats server", srv.Ready)
			logf("serving at %s, JetStream in %s", srv.ClientURL(), dir)
			fmt.Fprintln(cmd.OutOrStdout(), srv.ClientURL())
			<-ctx.Done()
			logf("shutting down")
			srv.Shutdown()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "directory of JetStream's store (required)")
	f.StringVar(&host, "host", "127.0.0.1", "address to listen on")
	f.IntVar(&port, "port", 4222, "client port (0: chosen by the OS, printed on start)")
	f.BoolVar(&syncAlways, "sync-always", false, "fsync every message before acknowledging it (nats-server's sync_interval: always; docs/durability.md)")
	f.DurationVar(&syncInterval, "sync-interval", 0, "the store's fsync period without --sync-always (0: nats-server's 2 minutes)")
	addMetricsFlag(f, "")
	return cmd
}
