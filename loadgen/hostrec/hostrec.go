// Package hostrec records what one simulated host's agent publishes
// (dcpi loadgen record): it runs the host as dcpi node runs it, programs
// started again as they exit, behind a publisher that keeps a copy of
// every batch and image record in order, each at the simulated cycle its
// batch was cut; loadgen/fleet replays the recording as many hosts.
package hostrec

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"dcpi/config"
	"dcpi/hwsim"
	"dcpi/loadgen"
	"dcpi/simhost"
	"dcpi/wire"
	"dcpi/workloads"
)

// Options are the recorded host and how long it runs.
type Options struct {
	Seconds      float64 // simulated
	CPUs         int
	Seed         uint64
	Mix          string // embedded workload mix
	Host         string
	FlushEvery   float64 // simulated seconds between full drains
	PublishEvery float64 // the daemon's publish window (0: a batch per drain)
	Timing       bool
	Events       []string
}

// Check refuses options out of range before anything runs.
func (o Options) Check() error {
	if o.Seconds <= 0 || o.FlushEvery <= 0 {
		return fmt.Errorf("--seconds %g, --flush-every %g: want both > 0", o.Seconds, o.FlushEvery)
	}
	if o.PublishEvery < 0 {
		return fmt.Errorf("--publish-every %g: want 0 (a batch per drain) or more simulated seconds", o.PublishEvery)
	}
	return nil
}

// WriteSummary writes what a recording of o holds, saved to file in size
// bytes: its batches, entries and image records, and the host's entries
// per second were its batches merged over longer windows (what
// aggregating longer in the daemon would save; docs/loadgen.md).
func WriteSummary(w io.Writer, rec *loadgen.Recording, o Options, file string, size int) {
	batches, entries := 0, 0
	for _, it := range rec.Items {
		if it.Batch != nil {
			batches++
			entries += len(it.Batch.Entries)
		}
	}
	h := rec.Header
	secs := float64(h.Cycles) / float64(h.ClockHz)
	fmt.Fprintf(w, "recorded %s: %g simulated s of a %d-CPU host, %d samples (%.0f/s per CPU), %d batches (%.1f/s), %d entries (%.0f a batch), %d image records, %d bytes\n",
		file, secs, h.CPUs, h.Generated, float64(h.Generated)/secs/float64(h.CPUs), batches, float64(batches)/secs,
		entries, float64(entries)/float64(max(batches, 1)), len(rec.Items)-batches, size)
	var rates []string
	for _, win := range []float64{o.FlushEvery, 1, secs} {
		if win < o.FlushEvery || win > secs {
			continue
		}
		rates = append(rates, fmt.Sprintf("%.0f merged over %.3g s", rec.EntryRate(uint64(win*float64(h.ClockHz))), win))
	}
	fmt.Fprintf(w, "entries/s of the host (CPUs merged, as stored): %s\n", strings.Join(rates, ", "))
}

// recordProgress is a progress line: simulated seconds done of the
// total, and the wall time left at the rate so far.
func recordProgress(done, limit, clockHz uint64, wall time.Duration) string {
	line := fmt.Sprintf("loadgen record: %.1f of %.0f simulated s", float64(done)/float64(clockHz), float64(limit)/float64(clockHz))
	if done > 0 && done < limit {
		left := time.Duration(float64(wall) * float64(limit-done) / float64(done))
		line += fmt.Sprintf(", about %v left", left.Round(time.Minute))
	}
	return line
}

// recorder is the recorded agent's publisher: it keeps a copy of
// everything, in call order, each batch at its End cycle and each image
// record at the last batch's (it precedes the batch that uses it).
type recorder struct {
	mu    sync.Mutex
	items []loadgen.Item
	at    uint64
}

func (r *recorder) PublishBatch(b *wire.Batch) error {
	data, err := b.MarshalBinary() // validates, and copies: b is reused
	if err != nil {
		return err
	}
	c := new(wire.Batch)
	if err := c.UnmarshalBinary(data); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.at = max(r.at, c.End)
	r.items = append(r.items, loadgen.Item{Kind: loadgen.KindBatch, At: r.at, Batch: c})
	return nil
}

func (r *recorder) PublishImage(img *wire.ImageRecord) error {
	data, err := img.MarshalBinary()
	if err != nil {
		return err
	}
	c := new(wire.ImageRecord)
	if err := c.UnmarshalBinary(data); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items = append(r.items, loadgen.Item{Kind: loadgen.KindImage, At: r.at, Image: c})
	return nil
}

// recordProgressEvery is how often a recording says how far it is: a
// long window's recording runs for an hour or two.
const recordProgressEvery = time.Minute

// Record runs the host and returns its recording, writing a progress
// line to progress every recordProgressEvery.
func Record(ctx context.Context, o Options, progress io.Writer) (*loadgen.Recording, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	mixNames, ok := workloads.Mixes()[o.Mix]
	if !ok {
		return nil, fmt.Errorf("no mix %q (mixes: %s)", o.Mix, strings.Join(workloads.MixNames(), ", "))
	}
	progs, err := simhost.EmbeddedPrograms(mixNames)
	if err != nil {
		return nil, err
	}
	sim := config.Defaults().Sim
	sim.CPUs, sim.Seed, sim.Hostname, sim.Timing = o.CPUs, o.Seed, o.Host, o.Timing
	hc, err := simhost.MachineConfig(sim)
	if err != nil {
		return nil, err
	}
	simhost.InstallPrograms(&hc, progs)
	m, err := hwsim.New(hc)
	if err != nil {
		return nil, err
	}
	ncfg := simhost.DefaultConfig()
	ncfg.Node.Host = o.Host
	ncfg.Node.Epoch = 1
	ncfg.FlushEvery = uint64(o.FlushEvery * float64(hc.ClockHz))
	ncfg.Node.PublishEvery = uint64(o.PublishEvery * float64(hc.ClockHz))
	if ncfg.Profile, err = simhost.CounterProfile(o.Events, false); err != nil {
		return nil, err
	}
	rec := &recorder{}
	sh, err := simhost.New(m, ncfg, rec)
	if err != nil {
		return nil, err
	}
	for _, p := range progs {
		if err := sh.KeepRunning(p.Path, p.Argv); err != nil {
			return nil, err
		}
	}
	limit := uint64(o.Seconds * float64(hc.ClockHz))
	done := make(chan error, 1)
	go func() { done <- sh.Run(limit) }()
	tick := time.NewTicker(recordProgressEvery)
	defer tick.Stop()
	began := time.Now()
waiting:
	for {
		select {
		case err = <-done:
			break waiting
		case <-tick.C:
			fmt.Fprintln(progress, recordProgress(sh.SimCycles(), limit, hc.ClockHz, time.Since(began)))
		case <-ctx.Done():
			sh.Stop()
			<-done
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range progs {
		names = append(names, p.Path)
	}
	out := &loadgen.Recording{Header: loadgen.Header{Host: o.Host, CPUs: o.CPUs, ClockHz: hc.ClockHz, FlushEvery: ncfg.FlushEvery,
		PublishEvery: ncfg.Node.PublishEvery, Cycles: sh.SimCycles(), Events: o.Events, Programs: names, Generated: sh.Generated()}, Items: rec.items}
	if out.Header.Cycles == 0 {
		out.Header.Cycles = limit
	}
	// The last batches are cut at the end of the run; a loop of the
	// replay starts after them.
	for _, it := range out.Items {
		out.Header.Cycles = max(out.Header.Cycles, it.At)
	}
	return out, out.Check()
}
