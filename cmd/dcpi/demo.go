package main

import (
	"context"
	"dcpi/conservation"
	"dcpi/internal/progress"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"dcpi/aggregator"
	"dcpi/analysis"
	"dcpi/config"
	"dcpi/coordinator"
	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/simhost"
	"dcpi/storage"
	"dcpi/transport"
	"dcpi/transport/auth"
	"dcpi/wire"
	"dcpi/workloads"
)

func init() { subcommands = append(subcommands, newDemoCommand) }

// demoOptions are dcpi demo's knobs.
type demoOptions struct {
	hosts, cpus, replicas, aggregators int
	seconds, cutAt                     float64
	mix                                string
	dir                                string
	timing                             bool
	model                              string // the hosts' CPU model
	limit                              int
	verbose                            bool
	programs                           []simhost.Program // after --; nil: the mix
	replicasSet                        bool              // --replicas given, not defaulted
	stacks                             bool
	profileMe                          bool   // ProfileMe on every host
	values                             string // value-sampling module on every host ("": off)
	mePaired                           bool   // in pairs
	metrics                            string // host:port of the fleet's metrics endpoint ("": none)
	// whileUp, if set (tests), runs after the results are printed, with
	// the fleet still up, given the metrics endpoint's base URL.
	whileUp func(metricsURL string) error
	// tune, if set (tests), adjusts every host's configuration
	// (hostSpec.tune); inspect runs after the results, with the fleet
	// still up, given the coordinator and the hosts.
	tune     func(*hwsim.Config, *simhost.Config)
	inspect  func(ctx context.Context, natsURL string, coord *coordinator.Client, hosts []*clusterHost) error
	httpAddr string // the web UI's; "": none
	serve    bool   // keep serving it after the results
}

func newDemoCommand() *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo [flags] [-- PROG [ARGS...] [: PROG [ARGS...]]...]",
		Short: "Run a whole profiling cluster in one process and print the fleet's profile",
		Long: `Run the embedded default cluster in one process: an embedded NATS server
with JetStream, a 3-replica Raft coordinator owning a Pebble profile
database, aggregators, and simulated 4-CPU Alpha hosts running the
embedded workload mix (or the programs given after --, each restarted
as it exits; several separated by a lone :), each with DCPI's driver and
daemon publishing sample batches.

The demo collects until every host has run --seconds of simulated time,
cutting an epoch fleet-wide on the way (every node flushes its driver by
IPI into the closing epoch and acknowledges; the coordinator seals the
epoch once the acknowledged batches are stored). Then it prints the
fleet-wide dcpiprof table, the epochs, and a conservation line: samples
the simulated hardware generated against samples stored plus every drop
counter, which must balance exactly.

With --dir the cluster's data stays; a second run on the same directory
continues that fleet (same replicas and Raft addresses, recorded in
DIR/demo.json; the hosts' streams resume) and its conservation line counts
what this run added. On a terminal the demo prints a progress line every
second, saying what it waits for; into a file or pipe only the results.
It serves the whole fleet's Prometheus metrics, /healthz and /readyz at
--metrics (every instance labelled by host, replica or aggregator; see
docs/metrics.md), prints their URL, and starts its hosts once /readyz
would answer ready.

The demo serves the web UI of dcpi web over the fleet while it runs, at
--http (any free port by default; "" for none) and prints its URL; with
--serve it keeps serving it (and the cluster) after printing the results,
until interrupted, so the pages and the tools' --nats URL can be explored.

The same roles run as separate processes: dcpi coordinator, dcpi
aggregator, dcpi node --nats URL (see examples/).`,
		Example: `  dcpi demo
  dcpi demo --hosts 2 --seconds 0.2
  dcpi demo --dir /tmp/fleet && dcpi prof --db /tmp/fleet/c1
  dcpi demo --hosts 2 -- ./myprog 1000`,
		Args: programsOnlyAfterDash("dcpi demo -- ./prog ARGS"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				if cmd.Flags().Changed("mix") {
					return fmt.Errorf("programs after -- and --mix: give one or the other")
				}
				var err error
				if o.programs, err = simhost.SplitPrograms(args); err != nil {
					return err
				}
			}
			if o.stacks {
				if err := checkStacks(); err != nil {
					return err
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if o.values != "" {
				if _, err := valuesConfig(o.values); err != nil {
					return err
				}
			}
			o.replicasSet = cmd.Flags().Changed("replicas")
			return runDemo(ctx, cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.hosts, "hosts", 4, "simulated hosts")
	f.IntVar(&o.cpus, "cpus", 4, "CPUs per host")
	f.IntVar(&o.replicas, "replicas", 3, "coordinator replicas (1, 3 or 5)")
	f.IntVar(&o.aggregators, "aggregators", 2, "aggregators")
	f.Float64Var(&o.seconds, "seconds", 0.3, "simulated seconds each host runs")
	f.Float64Var(&o.cutAt, "cut-at", 0.5, "cut an epoch when every host has run this fraction of --seconds")
	f.StringVar(&o.mix, "mix", "default", "embedded workload mix every host runs (restarting programs as they exit)")
	f.StringVar(&o.dir, "dir", "", "keep the cluster's data here; a later run on it continues the fleet (default: a temporary directory, removed)")
	f.BoolVar(&o.timing, "timing", true, "run the timing model: the 21164's, or the 21264's out-of-order core with --model ev6 or ev67 (false: faster, one cycle per instruction)")
	f.StringVar(&o.model, "model", "ev5", "CPU model of every host: ev5 (21164), ev56, pca56, ev6, ev67")
	f.IntVar(&o.limit, "limit", 20, "procedures in the profile table")
	f.BoolVar(&o.verbose, "verbose", false, "log what the cluster's roles say")
	f.StringVar(&o.metrics, "metrics", "127.0.0.1:0", "serve the whole fleet's Prometheus metrics, /healthz and /readyz at this host:port (port 0: any; \"\": none); the demo prints the URL")
	f.StringVar(&o.httpAddr, "http", "127.0.0.1:0", "serve the web UI at `HOST:PORT` while the demo runs (\"\": not at all)")
	f.BoolVar(&o.serve, "serve", false, "after the results, keep the cluster and the web UI up until interrupted")
	f.BoolVar(&o.stacks, "stacks", wire.Version >= wire.StackVersion, "record sampled call stacks on every host, for call trees and flame graphs (dcpi stacks, dcpi pprof)")
	f.BoolVar(&o.profileMe, "profileme", false, "sample instructions with ProfileMe on every host (docs/profileme.md; dcpi me)")
	f.StringVar(&o.values, "values", "", "value sampling with customization `MODULE` on every host (loadlat, regvals, semiinv; docs/values.md; dcpi values)")
	f.BoolVar(&o.mePaired, "me-paired", false, "with --profileme, sample instructions in pairs (ProfileMe sec. 4.2; docs/profileme.md)")
	return cmd
}

// demoCluster is everything dcpi demo started, for shutdown.
type demoCluster struct {
	srv      *auth.Server
	creds    *auth.Store
	replicas []*coordinator.Replica
	conns    []*nats.Conn
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	aggs     []*aggregator.Aggregator
	vfs      []*aggregator.ValuesForwarder
}

func (c *demoCluster) close() {
	if c.cancel != nil {
		c.cancel()
	}
	c.wg.Wait()
	for _, r := range c.replicas {
		r.Shutdown()
	}
	for _, nc := range c.conns {
		nc.Close()
	}
	if c.srv != nil {
		c.srv.Shutdown()
	}
}

// connect connects a role of the demo with its credentials (a node's are
// host's, issued on first use).
func (c *demoCluster) connect(url string, role auth.Role, host, name string, logf func(string, ...any)) (*nats.Conn, error) {
	creds, err := c.creds.ForRole(role, host)
	if err != nil {
		return nil, err
	}
	nc, err := transport.Connect(transport.ConnConfig{URLs: []string{url}, Name: name, CredsFile: creds.File, CAFile: creds.CA, Logf: logf})
	if err == nil {
		c.conns = append(c.conns, nc)
	}
	return nc, err
}

func runDemo(ctx context.Context, w io.Writer, o demoOptions) error {
	if o.hosts < 1 || o.hosts > 64 {
		return fmt.Errorf("--hosts %d: want 1 to 64", o.hosts)
	}
	if o.replicas != 1 && o.replicas != 3 && o.replicas != 5 {
		return fmt.Errorf("--replicas %d: want 1, 3 or 5", o.replicas)
	}
	if o.mePaired && !o.profileMe {
		return errPairedNeedsProfileMe
	}
	if o.model != "" {
		if _, err := alpha.ModelByName(o.model); err != nil {
			return fmt.Errorf("--model: %w", err)
		}
	}
	if o.aggregators < 1 || o.seconds <= 0 || o.cutAt <= 0 || o.cutAt >= 1 {
		return fmt.Errorf("want --aggregators >= 1, --seconds > 0 and 0 < --cut-at < 1")
	}
	progs := o.programs
	if len(progs) == 0 {
		names, ok := workloads.Mixes()[o.mix]
		if !ok {
			return fmt.Errorf("no mix %q (mixes: %s)", o.mix, strings.Join(workloads.MixNames(), ", "))
		}
		progs, _ = simhost.EmbeddedPrograms(names)
	}
	dir := o.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "dcpi-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	logf := func(string, ...any) {}
	if o.verbose {
		logf = stderrLog("")
	}
	dd, err := prepareDemoDir(dir, o.replicas, o.replicasSet)
	if err != nil {
		return err
	}
	defer dd.release()
	peers := dd.peers
	start := time.Now()
	pr := progress.New(w, start)
	cl := &demoCluster{}
	defer cl.close()

	// NATS with JetStream, embedded.
	srv, err := auth.StartServer(transport.ServerConfig{Dir: filepath.Join(dir, "nats"), Host: "127.0.0.1", Name: "dcpi-demo", Logf: logf})
	if err != nil {
		return err
	}
	cl.srv, cl.creds = srv, srv.Store
	// One metrics endpoint for the whole fleet, every instance labelled.
	tel, err := startTelemetry(o.metrics)
	if err != nil {
		return err
	}
	defer tel.close()
	if err := tel.register(nil, srv.Collector()); err != nil {
		return err
	}
	tel.ready.Add("nats server", srv.Ready)
	url := srv.ClientURL()
	nc, err := cl.connect(url, auth.Coordinator, "", "demo", logf)
	if err != nil {
		return err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if err := transport.EnsureStream(ctx, js, 1); err != nil {
		return err
	}
	if err := transport.EnsureValuesStream(ctx, js, 1); err != nil {
		return err
	}

	// The coordinator's Raft group, bootstrapped together (or restarted
	// on an earlier run's directory, at the addresses its log records).
	for _, p := range peers {
		rc, err := cl.connect(url, auth.Coordinator, "", "coordinator-"+p.ID, logf)
		if err != nil {
			return err
		}
		r, err := coordinator.Start(coordinator.Config{ID: p.ID, RaftAddr: p.Addr, DataDir: filepath.Join(dir, p.ID),
			Bootstrap: peers, NATS: rc, HeartbeatTimeout: 3 * time.Second, Logf: logf})
		if err != nil {
			return err
		}
		cl.replicas = append(cl.replicas, r)
		if err := tel.register(prometheus.Labels{"replica": p.ID}, r.Collector()); err != nil {
			return err
		}
		tel.ready.Add("coordinator "+p.ID, r.Ready)
	}
	coord := coordinator.NewClient(nc)
	fmt.Fprintf(w, "dcpi demo: NATS at %s, coordinator %s, %d aggregators, %d hosts x %d CPUs running %s\n",
		url, peerList(peers), o.aggregators, o.hosts, o.cpus, simhost.ProgramList(progs))
	if u := tel.url(); u != "" {
		fmt.Fprintf(w, "dcpi demo: metrics at %s/metrics, health at %s/healthz and %s/readyz\n", u, u, u)
	}
	if err := waitLeader(ctx, coord, pr, peers); err != nil {
		return err
	}
	if o.httpAddr != "" {
		srv, url, err := startWeb(o.httpAddr, &webBackend{o: clusterOpened(ctx, nc, true)}, logf)
		if err != nil {
			return err
		}
		defer srv.Close()
		fmt.Fprintf(w, "dcpi demo: web UI at %s\n", url)
	}

	runCtx, cancel := context.WithCancel(ctx)
	cl.cancel = cancel
	for i := range o.aggregators {
		ac, err := cl.connect(url, auth.Aggregator, "", fmt.Sprintf("aggregator-%d", i+1), logf)
		if err != nil {
			return err
		}
		ajs, err := jetstream.New(ac)
		if err != nil {
			return err
		}
		cons, err := transport.NewConsumer(runCtx, ajs, transport.ConsumerConfig{})
		if err != nil {
			return err
		}
		src := transport.BatchSource{Consumer: cons, JS: ajs}
		a := aggregator.New(aggregator.Config{Logf: logf, Limits: aggregator.Limits{FoldHosts: true}}, src, coordinator.NewClient(ac), src)
		cl.aggs = append(cl.aggs, a)
		if err := tel.register(prometheus.Labels{"aggregator": fmt.Sprint(i + 1)}, a.Collector()); err != nil {
			return err
		}
		tel.ready.Add(fmt.Sprintf("aggregator %d", i+1), natsReady(ac))
		cl.wg.Add(2)
		go func() { defer cl.wg.Done(); a.Run(runCtx) }()
		go func() { defer cl.wg.Done(); runPathUploads(runCtx, ajs, coordinator.NewClient(ac), logf) }()
		cl.vfs = append(cl.vfs, startValueRecords(runCtx, &cl.wg, ajs, coordinator.NewClient(ac), 1, logf))
	}

	// A continued fleet: what earlier runs stored is this run's baseline.
	var base demoBaseline
	if dd.continued {
		if base, err = continueFleet(ctx, w, pr, js, coord, dir); err != nil {
			return err
		}
	}

	// The hosts start once every role is ready (/readyz).
	if err := waitReady(ctx, pr, tel.ready, time.Minute); err != nil {
		return err
	}
	sim := config.Defaults().Sim
	sim.CPUs, sim.Timing = o.cpus, o.timing
	if o.model != "" {
		sim.Model = o.model
	}
	var valueBase map[string]wire.ValueStats
	if o.values != "" {
		var names []string
		for i := range o.hosts {
			names = append(names, fmt.Sprintf("alpha%d", i))
		}
		if valueBase, err = valueBaselines(ctx, coord, names); err != nil {
			return err
		}
	}
	var hosts []*clusterHost
	for i := range o.hosts {
		hnc, err := cl.connect(url, auth.Host, fmt.Sprintf("alpha%d", i), fmt.Sprintf("node-alpha%d", i), logf)
		if err != nil {
			return err
		}
		s := sim
		s.Hostname, s.Seed = fmt.Sprintf("alpha%d", i), uint64(1+i)
		h, err := startHost(runCtx, hostSpec{sim: s, progs: progs, seconds: o.seconds, flushEvery: 0.1,
			labels: map[string]string{"rack": fmt.Sprintf("r%d", i%2)}, heartbeat: 200 * time.Millisecond,
			maxBuffer: 16 << 20, retain: transport.DefaultMaxRetainedBytes, events: []string{"cycles", "imiss"}, nc: hnc, coord: coordinator.NewClient(hnc), logf: logf,
			stacks: o.stacks, profileMe: o.profileMe, mePaired: o.mePaired, values: o.values, tune: o.tune})
		if err != nil {
			return err
		}
		hosts = append(hosts, h)
		if err := tel.register(prometheus.Labels{"host": h.name}, h.collectors()...); err != nil {
			return err
		}
		tel.ready.Add("node "+h.name, natsReady(hnc))
		base.lost += h.resumed.Lost
	}

	// Collect, with a progress line, cutting an epoch on the way.
	cut := uint64(0)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	finished := make([]bool, len(hosts))
	for done := 0; done < len(hosts); {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		slowest := o.seconds
		for i, h := range hosts {
			if !finished[i] {
				select {
				case err := <-h.ran:
					if err != nil {
						return fmt.Errorf("host %s: %w", h.name, err)
					}
					finished[i] = true
					done++
				default:
					slowest = min(slowest, h.simSeconds())
				}
			}
		}
		if cut == 0 && slowest >= o.cutAt*o.seconds {
			if cut, err = coord.CutEpoch(ctx); err != nil {
				return fmt.Errorf("epoch cut: %w", err)
			}
		}
		if !pr.Due() {
			continue
		}
		var published uint64
		for _, h := range hosts {
			published += h.pub.Stats().SamplesPublished
		}
		tot, _ := coord.Totals(ctx, storage.Query{})
		pr.Printf("hosts at %.3f/%.3f simulated s | %d samples published | %d stored | epoch %s",
			slowest, o.seconds, published, tot.Samples+tot.Unknown-base.stored, epochNote(cut))
	}

	// Everything the hardware generated must now reach the database.
	generated := base.lost // samples the hosts' predecessors lost, stored as drops now
	var meTagged uint64
	for _, h := range hosts {
		generated += h.generated()
		meTagged += h.meTagged()
		if err := h.pub.Flush(ctx); err != nil {
			return fmt.Errorf("host %s: flushing its publisher: %w", h.name, err)
		}
	}
	stored, drops, err := waitStored(ctx, coord, pr, base, generated, 30*time.Second)
	if err != nil {
		return err
	}
	if o.values != "" {
		if err := waitValuesStored(ctx, coord, pr, hosts, valueBase, 30*time.Second); err != nil {
			return err
		}
	}
	if err := waitSealed(ctx, coord, pr, cut, 30*time.Second); err != nil {
		fmt.Fprintf(w, "warning: %v\n", err)
	}

	// The fleet's profile.
	src := clusterSource{ctx: ctx, c: coord, linearizable: true}
	table, err := analysis.Prof(analysis.NewSymbolizer(src), analysis.ProfQuery{Limit: o.limit})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nFleet-wide profile (%d hosts, all epochs%s):\n\n", len(hosts), map[bool]string{true: ", earlier runs' too"}[dd.continued])
	if err := analysis.WriteText(w, table); err != nil {
		return err
	}
	if err := printEpochs(ctx, w, coord); err != nil {
		return err
	}
	line, balanced := conservation.SamplesLine(generated, stored, drops)
	if dd.continued {
		fmt.Fprintf(w, "\nthis run continued the fleet in %s: the figures below are this run's (the database held %d samples and %d drops before it; its hosts' predecessors lost %d samples, stored now as %s)",
			dir, base.stored, base.drops, base.lost, wire.DropCrashLost)
	}
	fmt.Fprintf(w, "\n%s\n", line)
	if o.stacks {
		tot, err := coord.Totals(ctx, storage.Query{})
		if err != nil {
			return err
		}
		sdrops := map[string]uint64{}
		for name, n := range tot.StackDrops {
			sdrops[name] = n - min(base.stackDropsByName[name], n)
		}
		// A predecessor's crash-lost samples are drops of the flat view
		// only: the stack view counts what this run's drivers delivered.
		sline, sbalanced := conservation.StacksLine(generated-base.lost, tot.StackSamples-min(base.stackStored, tot.StackSamples), sdrops)
		fmt.Fprintln(w, sline)
		balanced = balanced && sbalanced
	}
	if o.profileMe {
		tot, err := coord.Totals(ctx, storage.Query{})
		if err != nil {
			return err
		}
		stored := tot.MeSamples + tot.MeUnknown
		mline, mbalanced := conservation.ProfileMeLine(meTagged, stored-min(base.meStored, stored), conservation.Since(tot.MeDrops, base.meDropsByName))
		fmt.Fprintln(w, mline)
		balanced = balanced && mbalanced
	}
	if o.values != "" {
		vbalanced, err := printClusterValueConservation(ctx, w, coord, o.values, hosts, valueBase)
		if err != nil {
			return err
		}
		balanced = balanced && vbalanced
	}
	var as aggregator.Stats
	for _, a := range cl.aggs {
		s := a.Stats()
		as.Proposals += s.Proposals
		as.EntriesIn += s.EntriesIn
		as.EntriesOut += s.EntriesOut
		as.Rejected += s.Rejected
	}
	fmt.Fprintf(w, "aggregators: %d batch entries merged into %d delta entries in %d Raft proposals; %d messages rejected\n",
		as.EntriesIn, as.EntriesOut, as.Proposals, as.Rejected)
	if o.values != "" {
		var vs aggregator.ValuesStats
		for _, f := range cl.vfs {
			s := f.Stats()
			vs.Fetched += s.Fetched
			vs.Applied += s.Applied
			vs.Proposals += s.Proposals
			vs.Rejected += s.Rejected
		}
		fmt.Fprintf(w, "aggregators: %d value records applied through %d Raft proposals (merged runs, retries included); %d value records rejected\n",
			vs.Applied, vs.Proposals, vs.Rejected)
	}
	fmt.Fprintf(w, "wall time %.1f s\n", time.Since(start).Seconds())
	if o.inspect != nil {
		if err := o.inspect(ctx, url, coord, hosts); err != nil {
			return err
		}
	}
	if o.whileUp != nil {
		if err := o.whileUp(tel.url()); err != nil {
			return err
		}
	}
	if o.serve {
		fmt.Fprintf(w, "dcpi demo: serving the cluster (NATS at %s) and the web UI until interrupted\n", url)
		<-ctx.Done()
	}
	if !balanced {
		return errors.New("conservation does not balance")
	}
	return nil
}

func epochNote(cut uint64) string {
	if cut == 0 {
		return "open, not cut yet"
	}
	return fmt.Sprintf("%d (cut from %d)", cut, cut-1)
}

func peerList(peers []coordinator.Peer) string {
	var s []string
	for _, p := range peers {
		s = append(s, p.ID+"="+p.Addr)
	}
	return strings.Join(s, ",")
}

// demoBaseline is what a continued fleet's database held before this run,
// and what the resumed hosts' predecessors lost (stored as drops during
// this run): the conservation line counts only what this run added.
type demoBaseline struct {
	stored, drops uint64
	dropsByName   map[string]uint64
	lost          uint64
	// The stack view's totals before this run.
	stackStored      uint64
	stackDropsByName map[string]uint64
	// The ProfileMe view's.
	meStored      uint64
	meDropsByName map[string]uint64
}

// waitLeader waits for the coordinator's Raft group to answer as a group
// (a heartbeat needs the leader), saying so on a terminal; it gives up,
// naming the replicas, if no leader is elected in a minute.
func waitLeader(ctx context.Context, coord *coordinator.Client, pr *progress.Progress, peers []coordinator.Peer) error {
	const limit = time.Minute
	deadline := time.Now().Add(limit)
	for {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := coord.Heartbeat(actx, "alpha0")
		cancel()
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case time.Now().After(deadline):
			return fmt.Errorf("the coordinator's replicas (%s) elected no leader in %v; run with --verbose to see Raft's log", peerList(peers), limit)
		}
		pr.Printf("waiting for the coordinator's %d replicas to elect a leader", len(peers))
	}
}

// continueFleet prepares a run on an earlier run's fleet: it waits for the
// aggregators to store any batches an interrupted run left in the stream,
// then reads the totals this run starts from.
func continueFleet(ctx context.Context, w io.Writer, pr *progress.Progress, js jetstream.JetStream, coord *coordinator.Client, dir string) (demoBaseline, error) {
	var b demoBaseline
	stream, err := js.Stream(ctx, transport.StreamName)
	if err != nil {
		return b, err
	}
	const stall = 30 * time.Second
	last, lastChange := uint64(0), time.Now()
	for {
		info, err := stream.Info(ctx)
		if err != nil {
			return b, err
		}
		n := info.State.Msgs
		if n == 0 {
			break
		}
		if n != last {
			last, lastChange = n, time.Now()
		} else if time.Since(lastChange) > stall {
			return b, fmt.Errorf("the stream holds %d batches of an earlier run that no aggregator stored in %v; run with --verbose to see why, or give a new --dir", n, stall)
		}
		pr.Printf("waiting for the aggregators to store %d batches an earlier run left in the stream", n)
		select {
		case <-ctx.Done():
			return b, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	// Nothing is being written now; a replica still applying the log
	// answers with less, so read until the answers agree.
	var prev coordinator.TotalsReply
	for agree := 0; agree < 5; {
		tot, err := coord.Totals(ctx, storage.Query{})
		if err != nil {
			return b, err
		}
		if totalsEqual(tot, prev) {
			agree++
		} else {
			agree, prev = 0, tot
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.stored = prev.Samples + prev.Unknown
	b.dropsByName = prev.Drops
	b.stackStored, b.stackDropsByName = prev.StackSamples, prev.StackDrops
	b.meStored, b.meDropsByName = prev.MeSamples+prev.MeUnknown, prev.MeDrops
	for _, n := range prev.Drops {
		b.drops += n
	}
	fmt.Fprintf(w, "dcpi demo: continuing the fleet in %s (%d samples stored by earlier runs)\n", dir, b.stored)
	return b, nil
}

func totalsEqual(a, b coordinator.TotalsReply) bool {
	if a.Samples != b.Samples || a.Unknown != b.Unknown || len(a.Drops) != len(b.Drops) ||
		a.StackSamples != b.StackSamples || len(a.StackDrops) != len(b.StackDrops) {
		return false
	}
	for k, v := range a.StackDrops {
		if b.StackDrops[k] != v {
			return false
		}
	}
	for k, v := range a.Drops {
		if b.Drops[k] != v {
			return false
		}
	}
	return true
}

// waitStored waits until the database holds every sample this run
// generated beyond base, in a profile or a drop counter, and returns what
// this run added. It says on a terminal what it waits for, and gives up
// only when storage has made no progress for stall.
func waitStored(ctx context.Context, coord *coordinator.Client, pr *progress.Progress, base demoBaseline, generated uint64, stall time.Duration) (stored uint64, drops map[string]uint64, err error) {
	last, lastChange := uint64(0), time.Now()
	for {
		tot, err := coord.Totals(ctx, storage.Query{})
		if err != nil {
			return 0, nil, err
		}
		stored = tot.Samples + tot.Unknown - min(base.stored, tot.Samples+tot.Unknown)
		drops = map[string]uint64{}
		var d uint64
		for name, n := range tot.Drops {
			if n -= min(base.dropsByName[name], n); n > 0 {
				drops[name] = n
				d += n
			}
		}
		if stored+d >= generated {
			return stored, drops, nil
		}
		if stored+d != last {
			last, lastChange = stored+d, time.Now()
		} else if time.Since(lastChange) > stall {
			// The conservation line says what is missing.
			return stored, drops, nil
		}
		pr.Printf("waiting for storage: %d of the %d samples generated are stored or counted as dropped", stored+d, generated)
		select {
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitSealed waits for the coordinator to seal epoch cut-1, saying on a
// terminal which hosts' acknowledgements it still waits for.
func waitSealed(ctx context.Context, coord *coordinator.Client, pr *progress.Progress, cut uint64, timeout time.Duration) error {
	if cut < 2 {
		return nil
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		eps, err := coord.Epochs(ctx)
		if err != nil {
			return err
		}
		waiting := "its stored batches"
		for _, e := range eps {
			if e.Number != cut-1 {
				continue
			}
			if e.State == storage.EpochSealed {
				return nil
			}
			if len(e.Waiting) > 0 {
				waiting = "acknowledgements from " + strings.Join(e.Waiting, ", ")
			}
		}
		pr.Printf("waiting for epoch %d to be sealed: waiting for %s", cut-1, waiting)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("epoch %d not sealed after %v", cut-1, timeout)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
