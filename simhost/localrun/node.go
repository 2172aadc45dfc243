package localrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"dcpi/conservation"
	"dcpi/hwsim"
	"dcpi/internal/datadir"
	"dcpi/internal/progress"
	"dcpi/internal/telemetry"
	"dcpi/node"
	"dcpi/simhost"
	"dcpi/storage"
)

// NodeConfig is one host profiled into a database that it continues
// (dcpi node --db): unlike Start's run, the database is written in place
// and a later run adds to it, each host's streams resuming after what it
// stored (ContinueHost).
type NodeConfig struct {
	Machine  hwsim.Config
	Node     simhost.Config
	Programs []simhost.Program
	// Seconds of simulated time (0: until the programs exit); with Keep
	// a program that exits starts again.
	Seconds float64
	Keep    bool
	DB      string
	// Stats adds the driver's and daemon's figures (Table 4 of the
	// paper) to the report.
	Stats bool
	// Register and Ready, when set, expose the host's metrics and
	// readiness.
	Register func(prometheus.Labels, ...prometheus.Collector) error
	Ready    *telemetry.Readiness
	// Out receives progress (on a terminal), the statistics and the
	// conservation lines.
	Out io.Writer
}

// ErrUnbalanced: samples were lost without a drop counter.
var ErrUnbalanced = errors.New("conservation does not balance: samples were lost without a drop counter")

// RunNode runs the host to its end and writes its conservation lines; it
// fails with ErrUnbalanced if they do not balance.
func RunNode(ctx context.Context, c NodeConfig) error {
	if c.Keep && c.Seconds <= 0 {
		return fmt.Errorf("--keep-running needs --seconds: the programs would run forever")
	}
	m, err := hwsim.New(c.Machine)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.DB, 0o755); err != nil {
		return err
	}
	db, err := storage.Open(c.DB, storage.Options{NoSync: true})
	if errors.Is(err, storage.ErrLocked) {
		return fmt.Errorf("--db %s: %w (another dcpi node or coordinator is writing this database); stop it first, or give another --db", c.DB, datadir.ErrInUse)
	}
	if err != nil {
		return err
	}
	defer db.Close()
	ncfg := c.Node
	prior, err := ContinueHost(ctx, db, &ncfg, c.Machine.CPUs)
	if err != nil {
		return err
	}
	sh, err := simhost.New(m, ncfg, simhost.LocalSink{DB: db}.ForHost(ncfg.Node.Host))
	if err != nil {
		return err
	}
	if err := c.expose(sh, db); err != nil {
		return err
	}
	for _, p := range c.Programs {
		if c.Keep {
			err = sh.KeepRunning(p.Path, p.Argv)
		} else {
			_, err = m.Spawn(p.Path, p.Argv, nil)
		}
		if err != nil {
			return err
		}
	}
	start := time.Now()
	limit := uint64(c.Seconds * float64(c.Machine.ClockHz))
	if err := progress.New(c.Out, start).WhileRunning(func() error { return sh.Run(limit) },
		func() string { return progress.SimulatedStatus(sh.SimCycles(), c.Machine.ClockHz, c.Seconds) }); err != nil {
		return err
	}
	if c.Stats {
		WriteNodeStats(c.Out, sh, time.Since(start))
	}
	if err := writeNodeConservation(ctx, c.Out, db, sh, ncfg, prior); err != nil {
		return err
	}
	fmt.Fprintf(c.Out, "profiles written to %s\n", c.DB)
	return nil
}

func (c NodeConfig) expose(sh *simhost.Host, db *storage.DB) error {
	if c.Register != nil {
		if err := c.Register(prometheus.Labels{"host": c.Node.Node.Host}, sh.Collector(), sh.Node().Collector(),
			storage.NewCollector(func(fn func(*storage.DB) error) error { return fn(db) })); err != nil {
			return err
		}
	}
	if c.Ready != nil {
		c.Ready.Add("database", db.Usable)
	}
	return nil
}

// writeNodeConservation writes what this run added to db beside what the
// host generated, and the value interpreter's accounting when it ran.
func writeNodeConservation(ctx context.Context, w io.Writer, db *storage.DB, sh *simhost.Host, ncfg simhost.Config, prior Baseline) error {
	now, err := Totals(db, storage.Query{})
	if err != nil {
		return err
	}
	lines, balanced := conservation.Lines(sh.Generated(), sh.Generated(), now.Since(prior.Totals),
		conservation.Views{Stacks: ncfg.Node.Driver.Stacks.Entries > 0, ProfileMe: ncfg.Node.Driver.Me.Entries > 0, MeTagged: sh.MeTagged()})
	fmt.Fprintf(w, "\n%s\n", strings.Join(lines, "\n"))
	if !balanced {
		return ErrUnbalanced
	}
	if ncfg.Node.Values.Module == "" {
		return nil
	}
	mods, s, err := db.ValueTotals(ctx, storage.ValueQuery{})
	if err != nil {
		return err
	}
	return simhost.WriteValueConservation(w, mods, conservation.SubtractValues(s, prior.Values), []*hwsim.Machine{sh.Machine()})
}

// WriteNodeStats writes what Table 4 of the paper reports for a host:
// samples, the driver table's miss rate, the aggregation factor, the
// handler's modelled cost per sample on the hit and miss paths, the
// daemon's cost per sample, memory, and the figures per image.
func WriteNodeStats(w io.Writer, sh *simhost.Host, elapsed time.Duration) {

	m, n := sh.Machine(), sh.Node()
	ds, drivers := n.Stats()
	delivered := sh.Generated()
	var tot node.DriverStats
	for _, d := range drivers {
		tot.Add(d)
	}
	div := func(a, b uint64) float64 {
		if b == 0 {
			return 0
		}
		return float64(a) / float64(b)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(w, "--- dcpi node stats (cf. Table 4) ---\n")
	fmt.Fprintf(w, "simulated time          %.3f s on %d CPUs (%d program restarts)\n", m.Seconds(sh.SimCycles()), len(drivers), sh.Restarts())
	fmt.Fprintf(w, "samples                 %d delivered, %d published, %d dropped, %d unknown (%.3f%%)\n",
		delivered, ds.Samples, tot.Dropped, ds.Unknown, 100*div(ds.Unknown, ds.Samples))
	fmt.Fprintf(w, "hash table miss rate    %.1f%% (%d misses, %d evictions)\n", 100*div(tot.Misses, tot.Samples), tot.Misses, tot.Evictions)
	fmt.Fprintf(w, "aggregation factor      %.1f samples per entry leaving the driver\n", div(ds.Samples, ds.Entries))
	fmt.Fprintf(w, "handler cost            %.0f cycles/sample avg (hit %.0f, miss %.0f), modelled\n",
		div(tot.CyclesHit+tot.CyclesMiss, tot.Hits+tot.Misses), div(tot.CyclesHit, tot.Hits), div(tot.CyclesMiss, tot.Misses))
	ht := n.HandlerTiming()
	net := func(v float64) float64 { return max(v-ht.MedianClockNanos, 0) }
	fmt.Fprintf(w, "handler host time       %.0f ns/sample hit, %.0f ns/sample miss, in the run's cold caches (medians of %d of %d samples, net of the %.0f ns an empty timed interval takes there)\n",
		net(ht.MedianHitNanos), net(ht.MedianMissNano), ht.Hits+ht.Misses, tot.Samples, ht.MedianClockNanos)
	if tot.StackSamples > 0 {
		fmt.Fprintf(w, "call stacks             %d samples, %d dropped, %.1f%% stack table hits, %.1f frames/sample, %.1f%% truncated, %.2f heuristic frames/sample\n",
			tot.StackSamples, tot.StackDropped, 100*div(tot.StackHits, tot.StackSamples), div(tot.StackFrames, tot.StackSamples),
			100*div(tot.StackTruncated, tot.StackSamples), div(tot.StackHeuristic, tot.StackSamples))
		fmt.Fprintf(w, "stack cost              %.0f cycles/sample more, modelled (%.1f memory reads/sample); %.0f host ns/sample (median of %d)\n",
			div(tot.CyclesStack, tot.StackSamples), div(tot.StackReads, tot.StackSamples), net(ht.MedianStackNanos), ht.Stacks)
	}
	fmt.Fprintf(w, "daemon                  %d batches, %d full drains, %d buffer drains, %d images\n",
		ds.Batches, ds.FullDrains, ds.BufferDrains, ds.Images)
	fmt.Fprintf(w, "daemon cost             %.0f host ns/sample (attribution and publishing, Pebble included)\n",
		div(ds.HostNanos, ds.Samples))
	fmt.Fprintf(w, "memory                  driver %d KB per CPU; daemon %.1f KB (image maps, attribution, drain buffer), estimated\n",
		n.DriverMemoryBytes()>>10, float64(n.DaemonMemoryBytes())/1024)
	fmt.Fprintf(w, "host time               %.2f s; Go heap in use %.1f MB (the simulated machine included)\n", elapsed.Seconds(), float64(ms.HeapInuse)/(1<<20))
	fmt.Fprintf(w, "\nby image (a miss is an entry leaving the driver: table evictions, flushed entries, direct writes)\n")
	fmt.Fprintf(w, "%10s %9s %9s %10s  %s\n", "samples", "entries", "miss rate", "samp/entry", "image")
	for _, f := range n.ImageFigures() {
		fmt.Fprintf(w, "%10d %9d %8.1f%% %10.1f  %s\n", f.Samples, f.Entries, 100*div(f.Entries, f.Samples), div(f.Samples, f.Entries), f.Path)
	}
}
