// Package demo runs dcpi demo: the whole profiling cluster of package
// cluster in one process, simulated hosts running a workload mix or the
// user's programs, an epoch cut on the way, and then the fleet's profile,
// the epochs and the conservation lines, which must balance. It owns the
// demo's defaults and the shape of its hosts; the command only parses
// flags into Options. Errors name dcpi demo's flags.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"dcpi/analysis/report"
	"dcpi/analysis/symbolize"
	"dcpi/analysis/web"
	"dcpi/cluster"
	"dcpi/config"
	"dcpi/conservation"
	"dcpi/coordinator"
	"dcpi/hwsim/alpha"
	"dcpi/internal/progress"
	"dcpi/internal/slogf"
	"dcpi/profiledb"
	"dcpi/profiledb/webdb"
	"dcpi/simhost"
	"dcpi/transport"
	"dcpi/wire"
	"dcpi/workloads"
)

// Options are a demo's knobs (dcpi demo's flags).
type Options struct {
	Hosts, CPUs           int
	Replicas, Aggregators int
	// ExactReplicas: Replicas was asked for, so a continued fleet with
	// another count is refused rather than kept.
	ExactReplicas bool
	// Seconds of simulated time every host runs; an epoch is cut when
	// every host has run CutAt of them.
	Seconds, CutAt float64
	// EpochEvery is the period of the epochs the coordinator cuts on its
	// own besides that one (0: none).
	EpochEvery time.Duration
	// Mix is the embedded workload mix every host runs, unless Programs
	// names the programs.
	Mix      string
	Programs []simhost.Program
	// Dir keeps the cluster's data; a later run on it continues the
	// fleet ("": a temporary directory, removed).
	Dir    string
	Timing bool
	Model  string // the hosts' CPU model
	// Limit bounds the procedures in the printed profile.
	Limit int
	// The hosts' optional data (simhost.Features).
	Stacks, ProfileMe, MePaired bool
	Values                      string
	// MetricsAddr and HTTPAddr serve the fleet's metrics and the web UI
	// ("": none); Serve keeps both up after the results until ctx ends.
	MetricsAddr, HTTPAddr string
	Serve                 bool
	// Logger receives what the roles say (nil: nothing).
	Logger *slog.Logger
}

// Defaults are dcpi demo's defaults: four 4-CPU 21164 hosts running the
// default mix for 0.3 simulated seconds, three replicas, two aggregators,
// and epochs cut every 10 s besides the cut half way: the demo runs 25-70 s
// on a 2-core machine, so its epochs show a few cuts of each kind.
func Defaults() Options {
	return Options{Hosts: 4, CPUs: 4, Replicas: 3, Aggregators: 2, Seconds: 0.3, CutAt: 0.5, EpochEvery: 10 * time.Second, Mix: "default",
		Timing: true, Model: "ev5", Limit: 20, Stacks: wire.Version >= wire.StackVersion,
		MetricsAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0"}
}

// ErrUnbalanced: a conservation line of the demo does not balance.
var ErrUnbalanced = errors.New("conservation does not balance")

// Check validates o and returns the programs every host runs.
func (o Options) Check() ([]simhost.Program, error) {
	if o.Hosts < 1 || o.Hosts > 64 {
		return nil, fmt.Errorf("--hosts %d: want 1 to 64", o.Hosts)
	}
	if o.Replicas != 1 && o.Replicas != 3 && o.Replicas != 5 {
		return nil, fmt.Errorf("--replicas %d: want 1, 3 or 5", o.Replicas)
	}
	if o.MePaired && !o.ProfileMe {
		return nil, simhost.ErrPairedNeedsProfileMe
	}
	if o.Model != "" {
		if _, err := alpha.ModelByName(o.Model); err != nil {
			return nil, fmt.Errorf("--model: %w", err)
		}
	}
	if o.Aggregators < 1 || o.Seconds <= 0 || o.CutAt <= 0 || o.CutAt >= 1 {
		return nil, fmt.Errorf("want --aggregators >= 1, --seconds > 0 and 0 < --cut-at < 1")
	}
	if o.EpochEvery < 0 || o.EpochEvery > 0 && o.EpochEvery < coordinator.MinEpochEvery {
		return nil, fmt.Errorf("--epoch-every %v: want 0 (no schedule) or at least %v", o.EpochEvery, coordinator.MinEpochEvery)
	}
	if o.Values != "" {
		if _, err := simhost.ValuesConfig(o.Values); err != nil {
			return nil, err
		}
	}
	if len(o.Programs) > 0 {
		return o.Programs, nil
	}
	names, ok := workloads.Mixes()[o.Mix]
	if !ok {
		return nil, fmt.Errorf("no mix %q (mixes: %s)", o.Mix, strings.Join(workloads.MixNames(), ", "))
	}
	return simhost.EmbeddedPrograms(names)
}

// HostNames are a demo's n hosts: alpha0, alpha1, ...
func HostNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("alpha%d", i)
	}
	return names
}

// Host is a demo's host i: the default machine with o's CPUs, model and
// timing, seeded by its index, in rack r0 or r1, running progs.
func Host(o Options, progs []simhost.Program, i int) cluster.HostConfig {
	sim := config.Defaults().Sim
	sim.CPUs, sim.Timing = o.CPUs, o.Timing
	if o.Model != "" {
		sim.Model = o.Model
	}
	sim.Hostname, sim.Seed = fmt.Sprintf("alpha%d", i), uint64(1+i)
	return cluster.HostConfig{Sim: sim, Programs: progs, Seconds: o.Seconds, FlushEvery: 0.1,
		Labels: map[string]string{"rack": fmt.Sprintf("r%d", i%2)}, Heartbeat: 200 * time.Millisecond,
		MaxBuffer: 16 << 20, Retain: transport.DefaultMaxRetainedBytes, Events: []string{"cycles", "imiss"},
		Stacks: o.Stacks, ProfileMe: o.ProfileMe, MePaired: o.MePaired, Values: o.Values}
}

// Run runs the demo's cluster and prints to w where it serves, its
// progress (on a terminal) and its results: the fleet's profile, the
// epochs and the conservation lines. It returns ErrUnbalanced when a
// conservation line does not balance.
func Run(ctx context.Context, w io.Writer, o Options) error {
	progs, err := o.Check()
	if err != nil {
		return err
	}
	start := time.Now()
	cl, err := cluster.Start(ctx, cluster.Config{Dir: o.Dir, Replicas: o.Replicas, ExactReplicas: o.ExactReplicas,
		Aggregators: o.Aggregators, EpochEvery: o.EpochEvery, MetricsAddr: o.MetricsAddr, Progress: progress.New(w, start), Logger: o.Logger})
	if err != nil {
		return err
	}
	defer cl.Close()
	fmt.Fprintf(w, "dcpi demo: NATS at %s, coordinator %s, %d aggregators, %d hosts x %d CPUs running %s\n",
		cl.URL(), cluster.PeerList(cl.Peers()), o.Aggregators, o.Hosts, o.CPUs, simhost.ProgramList(progs))
	if u := cl.Telemetry().URL(); u != "" {
		fmt.Fprintf(w, "dcpi demo: metrics at %s/metrics, health at %s/healthz and %s/readyz\n", u, u, u)
	}
	if o.HTTPAddr != "" {
		lf := func(string, ...any) {}
		if o.Logger != nil {
			lf = slogf.Printf(o.Logger)
		}
		srv, err := web.Start(o.HTTPAddr, webdb.New(profiledb.NewCluster(cl.Conn(), true), nil, nil), lf, web.Door{Generate: true})
		if err != nil {
			return err
		}
		defer srv.Close()
		fmt.Fprintf(w, "dcpi demo: web UI at %s (the epochs' trend chart at /trend, a differential flame graph at /diffflame)\n", srv.URL)
		if srv.Note != "" {
			fmt.Fprintf(w, "dcpi demo: %s\n", srv.Note)
		}
	}
	if cl.Continued() {
		fmt.Fprintf(w, "dcpi demo: continuing the fleet in %s (%d samples stored by earlier runs)\n", cl.Dir(), cl.Baseline().Totals.Stored)
	}
	balanced, err := collect(ctx, w, cl, o, progs, start)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "wall time %.1f s\n", time.Since(start).Seconds())
	if o.Serve {
		fmt.Fprintf(w, "dcpi demo: serving the cluster (NATS at %s) and the web UI until interrupted\n", cl.URL())
		<-ctx.Done()
	}
	if !balanced {
		return ErrUnbalanced
	}
	return nil
}

// collect adds the hosts, runs them through an epoch cut (and those of
// the schedule) until every sample is stored and every closed epoch
// sealed, and prints the results; start is when the run began.
func collect(ctx context.Context, w io.Writer, cl *cluster.Cluster, o Options, progs []simhost.Program, start time.Time) (bool, error) {
	var valueBase map[string]wire.ValueStats
	var err error
	if o.Values != "" {
		if valueBase, err = cl.ValueBaselines(ctx, HostNames(o.Hosts)); err != nil {
			return false, err
		}
	}
	for i := range o.Hosts {
		if _, err := cl.AddHost(ctx, Host(o, progs, i)); err != nil {
			return false, err
		}
	}
	cut, err := cl.Collect(ctx, o.Seconds, o.CutAt)
	if err != nil {
		return false, err
	}
	run, err := cl.WaitStored(ctx, 30*time.Second)
	if err != nil {
		return false, err
	}
	if o.Values != "" {
		if err := cl.WaitValuesStored(ctx, valueBase, 30*time.Second); err != nil {
			return false, err
		}
	}
	// The schedule may have cut after the hand cut: wait for every
	// epoch closed by now.
	rc := runCuts{start: start, byHand: cut}
	eps, err := cl.Coordinator().Epochs(ctx)
	if err != nil {
		return false, err
	}
	if len(eps) > 0 {
		cut = eps[len(eps)-1].Number
	}
	if err := cl.WaitSealed(ctx, cut, 30*time.Second); err != nil {
		fmt.Fprintf(w, "warning: %v\n", err)
	}
	return writeResults(ctx, w, cl, o, run, valueBase, rc)
}

// writeResults prints the fleet's profile, the epochs, the conservation
// lines and the aggregators' work, and says whether every conservation
// line balances.
func writeResults(ctx context.Context, w io.Writer, cl *cluster.Cluster, o Options, run cluster.Run, valueBase map[string]wire.ValueStats, rc runCuts) (bool, error) {
	src := coordinator.NewReader(cl.Coordinator(), true)
	table, err := report.Prof(ctx, symbolize.New(src), report.ProfQuery{Limit: o.Limit})
	if err != nil {
		return false, err
	}
	fmt.Fprintf(w, "\nFleet-wide profile (%d hosts, all epochs%s):\n\n", len(cl.Hosts()), map[bool]string{true: ", earlier runs' too"}[cl.Continued()])
	if err := table.WriteText(w); err != nil {
		return false, err
	}
	eps, err := cl.Coordinator().Epochs(ctx)
	if err == nil {
		err = coordinator.WriteEpochs(w, eps)
	}
	if err != nil {
		return false, err
	}
	fmt.Fprintln(w, rc.line(eps, o.EpochEvery))
	if cl.Continued() {
		b := cl.Baseline()
		fmt.Fprintf(w, "\nthis run continued the fleet in %s: the figures below are this run's (the database held %d samples and %d drops before it; its hosts' predecessors lost %d samples, stored now as %s)",
			cl.Dir(), b.Totals.Stored, b.Totals.Dropped(), b.Lost, wire.DropCrashLost)
	}
	lines, balanced, err := cl.Conservation(ctx, run, conservation.Views{Stacks: o.Stacks, ProfileMe: o.ProfileMe})
	if err != nil {
		return false, err
	}
	fmt.Fprintf(w, "\n%s\n", strings.Join(lines, "\n"))
	if o.Values != "" {
		vls, err := cl.ValueConservation(ctx, valueBase)
		if err != nil {
			return false, err
		}
		fmt.Fprintf(w, "value sampling (%s), as the cluster stored it:\n", o.Values)
		for _, l := range vls {
			fmt.Fprintf(w, "  %-8s %s\n", l.Host, l.Line)
			balanced = balanced && l.Balanced
		}
	}
	as, vs := cl.AggregatorStats()
	fmt.Fprintf(w, "aggregators: %d batch entries merged into %d delta entries in %d Raft proposals; %d messages rejected\n",
		as.EntriesIn, as.EntriesOut, as.Proposals, as.Rejected)
	if o.Values != "" {
		fmt.Fprintf(w, "aggregators: %d value records applied through %d Raft proposals (merged runs, retries included); %d value records rejected\n",
			vs.Applied, vs.Proposals, vs.Rejected)
	}
	return balanced, nil
}

// runCuts is what a run knows of its epoch cuts: when it began, and the
// epoch its cut by hand opened (0: none).
type runCuts struct {
	start  time.Time
	byHand uint64
}

// line says how many epochs the run cut (those that ended after it
// began) and how: one by hand, the others by the coordinator's schedule.
func (rc runCuts) line(eps []coordinator.EpochInfo, every time.Duration) string {
	n := 0
	for _, e := range eps {
		if !e.End.IsZero() && !e.End.Before(rc.start) {
			n++
		}
	}
	hand := "none by hand"
	if rc.byHand != 0 {
		hand = fmt.Sprintf("1 by hand (epoch %d to %d, at --cut-at)", rc.byHand-1, rc.byHand)
		n--
	}
	if every == 0 {
		return fmt.Sprintf("epochs cut in this run: %s; no schedule (--epoch-every 0)", hand)
	}
	return fmt.Sprintf("epochs cut in this run: %s and %d by the coordinator's schedule (every %v, at multiples of %v of wall-clock time)", hand, n, every, every)
}
