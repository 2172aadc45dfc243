package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"dcpi/aggregator"
	"dcpi/analysis"
	"dcpi/config"
	"dcpi/coordinator"
	"dcpi/storage"
	"dcpi/transport"
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
	limit                              int
	verbose                            bool
	programs                           []program // after --; nil: the mix
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
				if o.programs, err = splitPrograms(args); err != nil {
					return err
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
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
	f.StringVar(&o.dir, "dir", "", "keep the cluster's data here (default: a temporary directory, removed)")
	f.BoolVar(&o.timing, "timing", true, "run the 21164 timing model (false: faster, one cycle per instruction)")
	f.IntVar(&o.limit, "limit", 20, "procedures in the profile table")
	f.BoolVar(&o.verbose, "verbose", false, "log what the cluster's roles say")
	return cmd
}

// demoCluster is everything dcpi demo started, for shutdown.
type demoCluster struct {
	srv      *transport.Server
	replicas []*coordinator.Replica
	conns    []*nats.Conn
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	aggs     []*aggregator.Aggregator
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

func (c *demoCluster) connect(url, name string, logf func(string, ...any)) (*nats.Conn, error) {
	nc, err := transport.Connect(transport.ConnConfig{URLs: []string{url}, Name: name, Logf: logf})
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
	if o.aggregators < 1 || o.seconds <= 0 || o.cutAt <= 0 || o.cutAt >= 1 {
		return fmt.Errorf("want --aggregators >= 1, --seconds > 0 and 0 < --cut-at < 1")
	}
	progs := o.programs
	if len(progs) == 0 {
		names, ok := workloads.Mixes()[o.mix]
		if !ok {
			return fmt.Errorf("no mix %q (mixes: %s)", o.mix, strings.Join(mixNames(), ", "))
		}
		progs, _ = embeddedPrograms(names)
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
	start := time.Now()
	cl := &demoCluster{}
	defer cl.close()

	// NATS with JetStream, embedded.
	srv, err := transport.StartServer(transport.ServerConfig{Dir: filepath.Join(dir, "nats"), Host: "127.0.0.1", Name: "dcpi-demo", Logf: logf})
	if err != nil {
		return err
	}
	cl.srv = srv
	url := srv.ClientURL()
	nc, err := cl.connect(url, "demo", logf)
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

	// The coordinator's Raft group, bootstrapped together.
	peers := make([]coordinator.Peer, o.replicas)
	for i := range peers {
		port, err := freePort()
		if err != nil {
			return err
		}
		peers[i] = coordinator.Peer{ID: fmt.Sprintf("c%d", i+1), Addr: fmt.Sprintf("127.0.0.1:%d", port)}
	}
	for _, p := range peers {
		rc, err := cl.connect(url, "coordinator-"+p.ID, logf)
		if err != nil {
			return err
		}
		r, err := coordinator.Start(coordinator.Config{ID: p.ID, RaftAddr: p.Addr, DataDir: filepath.Join(dir, p.ID),
			Bootstrap: peers, NATS: rc, HeartbeatTimeout: 3 * time.Second, Logf: logf})
		if err != nil {
			return err
		}
		cl.replicas = append(cl.replicas, r)
	}
	coord := coordinator.NewClient(nc)
	fmt.Fprintf(w, "dcpi demo: NATS at %s, coordinator %s, %d aggregators, %d hosts x %d CPUs running %s\n",
		url, peerList(peers), o.aggregators, o.hosts, o.cpus, programList(progs))

	runCtx, cancel := context.WithCancel(ctx)
	cl.cancel = cancel
	for i := range o.aggregators {
		ac, err := cl.connect(url, fmt.Sprintf("aggregator-%d", i+1), logf)
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
		a := aggregator.New(aggregator.Config{Logf: logf}, src, coordinator.NewClient(ac), src)
		cl.aggs = append(cl.aggs, a)
		cl.wg.Add(1)
		go func() { defer cl.wg.Done(); a.Run(runCtx) }()
	}

	// The hosts.
	sim := config.Defaults().Sim
	sim.CPUs, sim.Timing = o.cpus, o.timing
	var hosts []*clusterHost
	for i := range o.hosts {
		hnc, err := cl.connect(url, fmt.Sprintf("node-alpha%d", i), logf)
		if err != nil {
			return err
		}
		s := sim
		s.Hostname, s.Seed = fmt.Sprintf("alpha%d", i), uint64(1+i)
		h, err := startHost(runCtx, hostSpec{sim: s, progs: progs, seconds: o.seconds, flushEvery: 0.1,
			labels: map[string]string{"rack": fmt.Sprintf("r%d", i%2)}, heartbeat: 200 * time.Millisecond,
			maxBuffer: 16 << 20, events: []string{"cycles", "imiss"}, nc: hnc, coord: coordinator.NewClient(hnc), logf: logf})
		if err != nil {
			return err
		}
		hosts = append(hosts, h)
	}

	// Collect, with a progress line, cutting an epoch on the way.
	cut := uint64(0)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	finished := make([]bool, len(hosts))
	lastReport := time.Now()
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
		if time.Since(lastReport) < time.Second && done < len(hosts) {
			continue
		}
		lastReport = time.Now()
		var published uint64
		for _, h := range hosts {
			published += h.pub.Stats().SamplesPublished
		}
		tot, _ := coord.Totals(ctx, storage.Query{})
		fmt.Fprintf(w, "[%5.1fs] hosts at %.3f/%.3f simulated s | %d samples published | %d stored | epoch %s\n",
			time.Since(start).Seconds(), slowest, o.seconds, published, tot.Samples+tot.Unknown, epochNote(cut))
	}

	// Everything the hardware generated must now reach the database.
	var generated uint64
	for _, h := range hosts {
		generated += h.generated()
		if err := h.pub.Flush(ctx); err != nil {
			return fmt.Errorf("host %s: flushing its publisher: %w", h.name, err)
		}
	}
	stored, drops, err := waitStored(ctx, coord, generated, 60*time.Second)
	if err != nil {
		return err
	}
	if err := waitSealed(ctx, coord, cut, 30*time.Second); err != nil {
		fmt.Fprintf(w, "warning: %v\n", err)
	}

	// The fleet's profile.
	src := clusterSource{ctx: ctx, c: coord, linearizable: true}
	table, err := analysis.Prof(analysis.NewSymbolizer(src), analysis.ProfQuery{Limit: o.limit})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nFleet-wide profile (%d hosts, all epochs):\n\n", len(hosts))
	if err := analysis.WriteText(w, table); err != nil {
		return err
	}
	if err := printEpochs(ctx, w, coord); err != nil {
		return err
	}
	var dropTotal uint64
	var names []string
	for name, n := range drops {
		dropTotal += n
		names = append(names, fmt.Sprintf("%s %d", name, n))
	}
	slices.Sort(names)
	verdict := "balanced"
	if stored+dropTotal != generated {
		verdict = "NOT BALANCED"
	}
	fmt.Fprintf(w, "\nconservation: %d samples generated by the simulated hardware = %d stored + %d dropped (%s): %s\n",
		generated, stored, dropTotal, dropList(names), verdict)
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
	fmt.Fprintf(w, "wall time %.1f s\n", time.Since(start).Seconds())
	if verdict != "balanced" {
		return errors.New("conservation does not balance")
	}
	return nil
}

func epochNote(cut uint64) string {
	if cut == 0 {
		return "1 (open)"
	}
	return fmt.Sprintf("%d (cut from %d)", cut, cut-1)
}

func dropList(names []string) string {
	if len(names) == 0 {
		return "no drop counter is nonzero"
	}
	return strings.Join(names, ", ")
}

func peerList(peers []coordinator.Peer) string {
	var s []string
	for _, p := range peers {
		s = append(s, p.ID+"="+p.Addr)
	}
	return strings.Join(s, ",")
}

// waitStored waits until the database holds every generated sample, in a
// profile or a drop counter, and returns what it holds.
func waitStored(ctx context.Context, coord *coordinator.Client, generated uint64, timeout time.Duration) (stored uint64, drops map[string]uint64, err error) {
	deadline := time.Now().Add(timeout)
	for {
		tot, err := coord.Totals(ctx, storage.Query{})
		if err != nil {
			return 0, nil, err
		}
		stored = tot.Samples + tot.Unknown
		var d uint64
		for _, n := range tot.Drops {
			d += n
		}
		if stored+d >= generated || time.Now().After(deadline) {
			return stored, tot.Drops, nil
		}
		select {
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitSealed waits for the coordinator to seal epoch cut-1.
func waitSealed(ctx context.Context, coord *coordinator.Client, cut uint64, timeout time.Duration) error {
	if cut < 2 {
		return nil
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		eps, err := coord.Epochs(ctx)
		if err != nil {
			return err
		}
		for _, e := range eps {
			if e.Number == cut-1 && e.State == storage.EpochSealed {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
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
