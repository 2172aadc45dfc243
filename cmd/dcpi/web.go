package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/pprof/profile"
	"github.com/spf13/cobra"

	"dcpi/analysis"
	"dcpi/analysis/pprofexport"
	"dcpi/analysis/symbolize"
	"dcpi/analysis/web"
	"dcpi/profiledb"
	"dcpi/storage"
	"dcpi/transport/auth"
)

func newWebCommand() *cobra.Command {
	var (
		qf         queryFlags
		addr       string
		imageDirs  []string
		sourceDirs []string
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
  /epochs   the epochs: open or sealed, who acknowledged
  /hosts    the hosts: labels, liveness and last heartbeat (cluster), samples
  /pprof    dcpi pprof's export of the selection, as a download

Every page takes the filters as URL parameters named as the flags (host,
label=K=V, epoch, epochs=A-B, image, event, pid; repeated or
comma-separated), so a page's URL is the query and can be shared. A bad
value gets the page with the tool's message and status 400. The pages are
rendered on the server; their styles are embedded in dcpi (no CDN). See
docs/web.md.

dcpi demo serves the same pages while it runs (--http, --serve), and so
does dcpi coordinator --http ADDR.`,
		Example: `  dcpi web --db /tmp/fleet/c1
  dcpi web --nats nats://127.0.0.1:4222 --addr 127.0.0.1:8080
  dcpi web --db /tmp/prof --source-dir workloads --addr :8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var o *openedSource
			if len(qf.nats) > 0 {
				nc, err := connectTool(natsConfig(cmd, qf.nats), auth.Query, "dcpi-web")
				if err != nil {
					return err
				}
				defer nc.Close()
				// No deadline: the server reads for as long as it runs.
				o = opened(profiledb.NewCluster(nc, qf.linearizable), func() {})
			} else {
				db, err := openLocalDB(qf.dbDir)
				if err != nil {
					return err
				}
				o = opened(&profiledb.Local{DB: db, Name: qf.dbDir}, func() {})
			}
			defer o.close()
			b := &webBackend{o: o, imageDirs: imageDirs, sourceDirs: sourceDirs}
			return serveWeb(ctx, cmd.OutOrStdout(), addr, b, "")
		},
	}
	f := cmd.Flags()
	f.StringVar(&qf.dbDir, "db", "dcpi-db", "directory of a local profile database (opened read-only)")
	f.StringSliceVar(&qf.nats, "nats", nil, "serve the cluster's profiles through this NATS server instead of a local --db")
	f.BoolVar(&qf.linearizable, "linearizable", false, "read from the Raft leader after it has applied every commit (cluster only)")
	f.StringVar(&addr, "addr", "127.0.0.1:8080", "listen at `HOST:PORT` (port 0: any free port)")
	f.StringArrayVar(&imageDirs, "image-dir", nil, "look for image files under `DIR` too (repeatable)")
	f.StringArrayVar(&sourceDirs, "source-dir", nil, "look for source files under `DIR` (repeatable)")
	return cmd
}

// serveWeb serves the UI over b at addr until ctx ends, saying on w where
// (prefix before the URL, "dcpi web: serving" by default).
func serveWeb(ctx context.Context, w io.Writer, addr string, b *webBackend, prefix string) error {
	srv, url, err := startWeb(addr, b, nil)
	if err != nil {
		return err
	}
	if prefix == "" {
		prefix = "dcpi web: serving " + b.Where() + " at"
	}
	fmt.Fprintf(w, "%s %s\n", prefix, url)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// startWeb starts the UI over b at addr in the background and returns the
// server (Shutdown stops it) and its URL. logf hears of internal errors
// (nil: standard error).
func startWeb(addr string, b *webBackend, logf func(string, ...any)) (*http.Server, string, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("web: listen at %s: %w", addr, err)
	}
	if logf == nil {
		logf = log.New(os.Stderr, "", log.LstdFlags).Printf
	}
	srv := &http.Server{Handler: web.New(b, logf), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	host, port, _ := net.SplitHostPort(l.Addr().String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return srv, "http://" + net.JoinHostPort(host, port) + "/", nil
}

// webBackend is the UI's data: an opened source, with the command-line
// tools' filter parsing, image finder and sampling periods.
type webBackend struct {
	o                     *openedSource
	imageDirs, sourceDirs []string
}

var _ web.Backend = (*webBackend)(nil)

func (b *webBackend) Source() analysis.Source { return b.o.src }

func (b *webBackend) Where() string { return b.o.Where() }

// Select checks the filters with queryFlags.selection, as the tools check
// their flags (the messages name the flags; the pages' parameters have the
// same names).
func (b *webBackend) Select(ctx context.Context, f web.Filters) (web.Selection, error) {
	qf := queryFlags{epochs: f.Epochs, ranges: f.EpochRanges, hosts: f.Hosts, images: f.Images, events: f.Events}
	for _, p := range f.PIDs {
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return web.Selection{}, fmt.Errorf("pid %q: want a process number", p)
		}
		qf.pids = append(qf.pids, uint(n))
	}
	sel, err := qf.selection()
	if err == nil {
		err = b.o.SelectLabels(ctx, f.Labels, &sel.Filter)
	}
	if err != nil {
		return web.Selection{}, errors.New(strings.TrimPrefix(err.Error(), "--"))
	}
	return web.Selection(sel), nil
}

func (b *webBackend) Set(ctx context.Context, base web.Selection, spec string) (analysis.SampleSet, error) {
	return profiledb.ParseSetSpec(ctx, b.o.DB, base.Filter, spec)
}

func (b *webBackend) Hint(ctx context.Context, sel web.Selection) string {
	return b.o.selectionHint(ctx, profiledb.Selection(sel))
}

func (b *webBackend) Files() symbolize.ImageFinder { return newImageFinder(nil, b.o, b.imageDirs) }

func (b *webBackend) SourceFile(name string) ([]byte, error) { return sourceReader(b.sourceDirs)(name) }

func (b *webBackend) CalcPeriods(ctx context.Context, hosts []string) (map[string]map[uint8]float64, error) {
	return profiledb.CalcPeriods(ctx, b.o.DB, hosts, nil, io.Discard)
}

// Pprof exports sel as dcpi pprof does without flags: the hosts'
// registered periods, the images' DWARF where found, call stacks where
// recorded.
func (b *webBackend) Pprof(ctx context.Context, sel web.Selection) (*profile.Profile, error) {
	pc, err := profiledb.SelectedPeriods(ctx, b.o.DB, sel.Filter.Hosts, nil)
	if err != nil {
		return nil, err
	}
	p, err := pprofexport.Pprof(ctx, b.o.src, pprofexport.PprofQuery{Filter: sel.Filter, Events: sel.Events, ImagePaths: sel.ImagePaths,
		Periods: pc.Periods, Files: b.Files()})
	if err != nil {
		return nil, err
	}
	return p, pc.Check(pprofexport.SampleTypes(p), len(p.Sample), io.Discard)
}

func (b *webBackend) Epochs(ctx context.Context) ([]web.Epoch, error) {
	infos, err := b.o.Epochs(ctx)
	if err != nil {
		return nil, err
	}
	eps := make([]web.Epoch, len(infos))
	for i, e := range infos {
		eps[i] = web.Epoch{Number: e.Number, State: e.State.String(), Start: e.Start, End: e.End, Acked: e.AckedBy(), Waiting: e.Waiting}
	}
	return eps, nil
}

// Hosts lists the node registry with each host's stored samples (one
// totals query per host).
func (b *webBackend) Hosts(ctx context.Context) ([]web.Host, error) {
	infos, err := b.o.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	hosts := make([]web.Host, len(infos))
	for i, n := range infos {
		h := web.Host{Name: n.Host, Labels: n.Labels, CPUs: n.CPUs, Registered: n.Registered, Updated: n.Updated, LastHeartbeat: n.LastHeartbeat}
		if n.LivenessKnown {
			h.Liveness = map[bool]string{true: "live", false: "down"}[n.Live]
		}
		if h.Samples, err = b.o.Totals(ctx, storage.Query{Hosts: []string{n.Host}}); err != nil {
			return nil, err
		}
		hosts[i] = h
	}
	slices.SortFunc(hosts, func(a, b web.Host) int { return strings.Compare(a.Name, b.Name) })
	return hosts, nil
}
