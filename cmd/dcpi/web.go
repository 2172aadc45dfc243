package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"dcpi/analysis/web"
	"dcpi/cluster"
	"dcpi/internal/slogf"
	"dcpi/profiledb"
	"dcpi/profiledb/webdb"
)

func newWebCommand() *cobra.Command {
	var (
		qf         queryFlags
		addr       string
		tokenFile  string
		imageDirs  []string
		sourceDirs []string
		watch      string
	)
	cmd := &cobra.Command{
		Use:   "web",
		Short: "Serve the fleet's profiles as web pages: hot procedures, listings, flame graphs, diff, epochs, hosts",
		Long: `Serve a web UI over a local profile database (--db) or the cluster
(--nats URL), reading the same samples the command-line tools read, with
the same filters:

  /         the hot procedures (dcpi prof's table), with a search box
  /list     a procedure's annotated disassembly with source lines (dcpi
            list) and dcpicalc's frequency, CPI and culprits (dcpi calc)
  /flame    a flame graph (view=icicle: an icicle) of the sampled call
            stacks, the flat profile where none were recorded
  /diff     two selections compared per procedure (dcpi diff), a=SPEC and
            b=SPEC as dcpi stats --set, significance marked
  /regressions  the newest sealed epoch against the ones before it
  /epochs   the epochs: open or sealed, who acknowledged
  /hosts    the hosts: labels, liveness and last heartbeat (cluster), samples
  /pprof    dcpi pprof's export of the selection, as a download

Every page takes the filters as URL parameters named as the flags (host,
label=K=V, epoch, epochs=A-B, image, event, pid; repeated or
comma-separated), so a page's URL is the query and can be shared. A bad
value gets the page with the tool's message and status 400. The pages are
rendered on the server; their styles are embedded in dcpi (no CDN). See
docs/web.md.

On loopback (the default, 127.0.0.1:8080) the pages are open, as the
data directory is to any process of the machine. An address beyond
loopback (":8080" is every interface) needs a bearer token: the one in
--token-file (or $DCPI_HTTP_TOKEN_FILE; one line, mode 600), or one made
for this run, printed in the URL. A browser's first visit with ?token=
keeps it in a cookie; scripts send "Authorization: Bearer TOKEN".

dcpi demo serves the same pages while it runs (--http, --serve), and so
does dcpi coordinator --http ADDR.`,
		Example: `  dcpi web --db /tmp/fleet/c1
  dcpi web --nats nats://127.0.0.1:4222 --addr 127.0.0.1:8080
  dcpi web --db /tmp/prof --source-dir workloads --addr :8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cmd.SetContext(ctx) // an interrupt also ends the wait to connect
			// No deadline: the server reads for as long as it runs.
			o, err := qf.open(cmd, "dcpi-web", &profiledb.Selection{})
			if err != nil {
				return err
			}
			if l, ok := o.DB.(*profiledb.Local); ok {
				l.Name = qf.dbDir // the pages say which database they show
			}
			defer o.close()
			b := webdb.New(o.DB, imageDirs, sourceDirs)
			stopWatch, err := cluster.WatchRegressions(ctx, o.DB, watch, cmd.Flag("metrics").Value.String(), slogf.Role("web"))
			if err != nil {
				return err
			}
			defer stopWatch()
			return web.Serve(ctx, cmd.OutOrStdout(), addr, b, web.Door{TokenFile: tokenFile, Generate: true})
		},
	}
	f := cmd.Flags()
	f.StringVar(&qf.dbDir, "db", "dcpi-db", "directory of a local profile database (opened read-only)")
	f.StringSliceVar(&qf.nats, "nats", nil, "serve the cluster's profiles through this NATS server instead of a local --db")
	f.BoolVar(&qf.linearizable, "linearizable", false, "read from the Raft leader after it has applied every commit (cluster only)")
	f.StringVar(&addr, "addr", "127.0.0.1:8080", "listen at `HOST:PORT` (port 0: any free port)")
	f.StringVar(&tokenFile, "token-file", "", "beyond loopback, require the bearer token in `FILE` (default: $DCPI_HTTP_TOKEN_FILE, else one made for this run)")
	f.StringArrayVar(&imageDirs, "image-dir", nil, "look for image files under `DIR` too (repeatable)")
	f.StringArrayVar(&sourceDirs, "source-dir", nil, "look for source files under `DIR` (repeatable)")
	f.StringVar(&watch, "watch", "", "export regression alerts as metrics (--metrics): `SPEC` on, or baseline=6,top=20,z=3,min=100,every=30s (docs/alerts.md)")
	addMetricsFlag(f, "")
	return cmd
}
