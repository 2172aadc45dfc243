package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"dcpi/config"
	"dcpi/hwsim"
	"dcpi/loadgen"
	"dcpi/simhost"
	"dcpi/wire"
)

func newLoadgenCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "loadgen",
		Short: "Record a simulated host's agent output, replay it as many hosts against a cluster, and measure",
		Long: `dcpi loadgen measures how many hosts a cluster sustains (docs/loadgen.md).

"record" runs one simulated host with DCPI's driver and daemon, as dcpi
node does, and saves every sample batch and image record its agent
publishes, with the simulated time of each, in a versioned recording
file. "run" replays the recording as N agents at the recorded (real)
rate, each with its own host name and sequence numbers, against a real
cluster, and reports the generated and stored rates, exact conservation
after the drain, the delay from publish to queryable, and CPU and memory
per role.`,
		Example: `  dcpi loadgen record --out /tmp/host.dcpiload --seconds 4
  dcpi loadgen run --recording /tmp/host.dcpiload --hosts 16 --seconds 20
  dcpi loadgen run --recording /tmp/host.dcpiload --find-knee --hosts 8 --seconds 30`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newLoadgenRecordCommand(), newLoadgenRunCommand())
	return cmd
}

type recordOptions struct {
	out, mix, host string
	cpus           int
	seed           uint64
	seconds, flush float64
	publish        float64 // the daemon's publish window, simulated seconds
	timing         bool
	events         []string
}

func newLoadgenRecordCommand() *cobra.Command {
	var o recordOptions
	cmd := &cobra.Command{
		Use:   "record",
		Short: "Run a simulated host and save what its agent publishes",
		Long: `Run one simulated host — the workload mix on the 21164 model with DCPI's
driver and daemon, as dcpi node runs it, programs started again as they
exit — for --seconds of simulated time, and save every batch and image
record its agent would publish, in order, each with the simulated cycle
its batch was cut, to --out (a versioned file with a header and a
checksum; dcpi loadgen run refuses any other version or a damaged file).`,
		Example: `  dcpi loadgen record --out /tmp/host.dcpiload --seconds 4`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.out == "" {
				return fmt.Errorf("--out: name the recording file to write")
			}
			if o.seconds <= 0 || o.flush <= 0 {
				return fmt.Errorf("--seconds %g, --flush-every %g: want both > 0", o.seconds, o.flush)
			}
			if o.publish < 0 {
				return fmt.Errorf("--publish-every %g: want 0 (a batch per drain) or more simulated seconds", o.publish)
			}
			rec, err := recordHost(cmd.Context(), o, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			if err := rec.Encode(&buf); err != nil {
				return err
			}
			if err := os.WriteFile(o.out, buf.Bytes(), 0o644); err != nil {
				return err
			}
			batches, entries := 0, 0
			for _, it := range rec.Items {
				if it.Batch != nil {
					batches++
					entries += len(it.Batch.Entries)
				}
			}
			h := rec.Header
			secs := float64(h.Cycles) / float64(h.ClockHz)
			fmt.Fprintf(cmd.OutOrStdout(), "recorded %s: %g simulated s of a %d-CPU host, %d samples (%.0f/s per CPU), %d batches (%.1f/s), %d entries (%.0f a batch), %d image records, %d bytes\n",
				o.out, secs, h.CPUs, h.Generated, float64(h.Generated)/secs/float64(h.CPUs), batches, float64(batches)/secs,
				entries, float64(entries)/float64(max(batches, 1)), len(rec.Items)-batches, buf.Len())
			// What aggregating longer in the daemon would save
			// (docs/loadgen.md): the host's entries/s if its batches
			// were merged over longer windows.
			var rates []string
			for _, w := range []float64{o.flush, 1, secs} {
				if w < o.flush || w > secs {
					continue
				}
				rates = append(rates, fmt.Sprintf("%.0f merged over %.3g s", rec.EntryRate(uint64(w*float64(h.ClockHz))), w))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "entries/s of the host (CPUs merged, as stored): %s\n", strings.Join(rates, ", "))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "", "recording file to write (required)")
	f.Float64Var(&o.seconds, "seconds", 4, "simulated seconds to record")
	f.IntVar(&o.cpus, "cpus", 4, "simulated CPUs (DCPI's hosts had 4)")
	f.Uint64Var(&o.seed, "seed", 1, "seed for everything random on the machine")
	f.StringVar(&o.mix, "mix", "default", "embedded workload mix to run")
	f.StringVar(&o.host, "host", "alpha0", "the recorded host's name (replay renames it)")
	f.Float64Var(&o.flush, "flush-every", config.Defaults().Node.FlushEvery, "simulated seconds between full drains of the driver tables (dcpi node's default)")
	f.Float64Var(&o.publish, "publish-every", config.Defaults().Node.PublishEvery, "the daemon's publish window in simulated seconds (dcpi node's default; 0: a batch per drain)")
	f.BoolVar(&o.timing, "timing", false, "run the 21164 timing model (slower to record; the sample mix barely changes)")
	f.StringSliceVar(&o.events, "events", []string{"cycles", "imiss"}, "events to count, as dcpi node --events")
	return cmd
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

// recordHost runs the host and returns its recording, writing a
// progress line to progress every recordProgressEvery.
func recordHost(ctx context.Context, o recordOptions, progress io.Writer) (*loadgen.Recording, error) {
	progs, err := nodePrograms(o.mix, nil, nil)
	if err != nil {
		return nil, err
	}
	sim := config.Defaults().Sim
	sim.CPUs, sim.Seed, sim.Hostname, sim.Timing = o.cpus, o.seed, o.host, o.timing
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
	ncfg.Node.Host = o.host
	ncfg.Node.Epoch = 1
	ncfg.FlushEvery = uint64(o.flush * float64(hc.ClockHz))
	ncfg.Node.PublishEvery = uint64(o.publish * float64(hc.ClockHz))
	if ncfg.Profile, err = simhost.CounterProfile(o.events, false); err != nil {
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
	limit := uint64(o.seconds * float64(hc.ClockHz))
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
	out := &loadgen.Recording{Header: loadgen.Header{Host: o.host, CPUs: o.cpus, ClockHz: hc.ClockHz, FlushEvery: ncfg.FlushEvery,
		PublishEvery: ncfg.Node.PublishEvery, Cycles: sh.SimCycles(), Events: o.events, Programs: names, Generated: sh.Generated()}, Items: rec.items}
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
