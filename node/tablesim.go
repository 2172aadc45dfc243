package node

import (
	"fmt"
	"io"
	"runtime"
	"sync"
	"text/tabwriter"
)

// The trace-driven simulator of sec. 5.4: replay a recorded sample trace
// against several designs of the driver's table and compare how well each
// aggregates and what it costs. The trace is replayed as a Host (its
// samples are the interrupts); on it run the real Driver (not a model of
// it), one per CPU of the trace, and a daemon that empties every overflow
// buffer as soon as it fills and drains the tables at the end.
// simhost.RecordTrace records traces on a simulated machine.

// Design is one table design to simulate.
type Design struct {
	Name   string
	Config DriverConfig
}

// Result is what one design did with a trace.
type Result struct {
	Design     Design
	Samples    uint64
	Hits       uint64
	Misses     uint64
	Evictions  uint64 // entries pushed out of the table by misses (and full counts)
	EntriesOut uint64 // entries the daemon received: evicted, and drained at the end
	Dropped    uint64 // samples lost (none: the simulated daemon never falls behind)

	HandlerCycles  uint64 // the handler's modelled cycles (Sample's costs)
	DeliveryCycles uint64 // interrupt delivery, CostModel.Delivery a sample
	DaemonCycles   uint64 // the daemon's, CostModel.Daemon an entry
}

func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// MissRate is the fraction of samples not found in the table (Table 4's
// "miss rate").
func (r Result) MissRate() float64 { return ratio(r.Misses, r.Samples) }

// EvictionRate is the fraction of samples that pushed an entry out.
func (r Result) EvictionRate() float64 { return ratio(r.Evictions, r.Samples) }

// Aggregation is the samples per entry leaving the table: how much the
// table cuts the daemon's work (the paper: "a factor of 20 or more").
func (r Result) Aggregation() float64 { return ratio(r.Samples, r.EntriesOut) }

// HandlerPerSample is the handler's average cost, cycles per sample (Table
// 4's "intr cost avg").
func (r Result) HandlerPerSample() float64 { return ratio(r.HandlerCycles, r.Samples) }

// DaemonPerSample is the daemon's cycles per sample (Table 4's "daemon
// cost").
func (r Result) DaemonPerSample() float64 { return ratio(r.DaemonCycles, r.Samples) }

// TotalCycles is the modelled cost of profiling: delivery, handler, daemon.
func (r Result) TotalCycles() uint64 { return r.DeliveryCycles + r.HandlerCycles + r.DaemonCycles }

// TotalPerSample is TotalCycles per sample.
func (r Result) TotalPerSample() float64 { return ratio(r.TotalCycles(), r.Samples) }

// Simulate replays t against each design and returns their results in
// order. Designs run in parallel; the results do not depend on it.
func Simulate(t *Trace, designs []Design) ([]Result, error) {
	for _, d := range designs {
		if err := d.Config.Validate(); err != nil {
			return nil, fmt.Errorf("design %q: %w", d.Name, err)
		}
	}
	for i, s := range t.Samples {
		if s.CPU < 0 || s.CPU >= t.CPUs {
			return nil, fmt.Errorf("node: simulate: sample %d on cpu %d of %d", i, s.CPU, t.CPUs)
		}
	}
	out := make([]Result, len(designs))
	errs := make([]error, len(designs))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, d := range designs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			out[i], errs[i] = simulateOne(t, d)
			<-sem
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// replayHost is the Host a trace is replayed on: its CPUs are the trace's,
// its counter interrupts the trace's samples in order, its time the
// number of samples replayed. It has one goroutine, like a simulated
// machine: an IPI runs at once, between two interrupts, as a CPU takes
// one between two instructions. A trace records no loader events.
type replayHost struct {
	t       *Trace
	handler InterruptHandler
	now     uint64
}

var _ Host = (*replayHost)(nil)

func (r *replayHost) CPUs() int { return r.t.CPUs }

func (r *replayHost) StartProfiling(h InterruptHandler) error {
	r.handler = h
	return nil
}

func (r *replayHost) SendIPI(cpu int, fn func() uint64) error {
	if cpu < 0 || cpu >= r.t.CPUs {
		return fmt.Errorf("node: replay: IPI to cpu %d of %d", cpu, r.t.CPUs)
	}
	fn()
	return nil
}

func (r *replayHost) Now() uint64 { return r.now }

// SetIPISync does nothing: a replay's IPIs run at once, on its goroutine,
// and its daemon (replayDaemon) runs there too.
func (r *replayHost) SetIPISync(func()) {}

func (r *replayHost) Subscribe(LoaderSink) {}

// replay delivers every sample, calling between(cpu) after each.
func (r *replayHost) replay(between func(cpu int) error) error {
	for _, s := range r.t.Samples {
		r.now++
		r.handler.CounterInterrupt(Sample{CPU: s.CPU, Incarnation: s.Key(), PC: s.PC, Event: s.Event})
		if err := between(s.CPU); err != nil {
			return err
		}
	}
	return nil
}

// replayDaemon is the daemon of sec. 5.4's simulations, on a host: one
// driver per CPU, every overflow buffer emptied by the IPI protocol as
// soon as it fills, the tables drained at the end. Unlike Node's daemon it
// runs on the host's goroutine, between interrupts, so a replay is a
// function of the trace and the design alone.
type replayDaemon struct {
	host    Host
	drivers []*Driver
	full    []bool // a CPU's driver said a buffer filled
	buf     []Entry
	out     uint64 // entries received
}

func (d *replayDaemon) CounterInterrupt(s Sample) uint64 {
	cost, full := d.drivers[s.CPU].Sample(s.Incarnation, s.PC, s.Event)
	d.full[s.CPU] = d.full[s.CPU] || full
	return cost
}

// ipi runs fn on cpu's driver.
func (d *replayDaemon) ipi(cpu int, fn func(*Driver)) error {
	return d.host.SendIPI(cpu, func() uint64 { fn(d.drivers[cpu]); return 0 })
}

// take receives every buffer cpu has handed off and gives them back.
func (d *replayDaemon) take(cpu int) error {
	for ok := true; ok; {
		d.buf, ok = d.drivers[cpu].TakeFull(d.buf[:0])
		d.out += uint64(len(d.buf))
	}
	return d.ipi(cpu, func(dr *Driver) { dr.Release() })
}

// afterSample empties cpu's buffer if it filled.
func (d *replayDaemon) afterSample(cpu int) error {
	if !d.full[cpu] {
		return nil
	}
	d.full[cpu] = false
	if err := d.ipi(cpu, func(dr *Driver) { dr.HandOff(false) }); err != nil {
		return err
	}
	return d.take(cpu)
}

// drainAll drains every table by the full protocol.
func (d *replayDaemon) drainAll() error {
	for cpu, dr := range d.drivers {
		if err := d.ipi(cpu, func(dr *Driver) { dr.BeginFlush() }); err != nil {
			return err
		}
		d.buf = dr.DrainTable(d.buf[:0])
		d.out += uint64(len(d.buf))
		if err := d.ipi(cpu, func(dr *Driver) { dr.EndFlush(); dr.HandOff(true) }); err != nil {
			return err
		}
		if err := d.take(cpu); err != nil {
			return err
		}
	}
	return nil
}

func simulateOne(t *Trace, design Design) (Result, error) {
	r := Result{Design: design}
	host := &replayHost{t: t}
	d := &replayDaemon{host: host, full: make([]bool, t.CPUs), buf: make([]Entry, 0, design.Config.BufferEntries)}
	for range t.CPUs {
		dr, err := NewDriver(design.Config)
		if err != nil {
			return r, err
		}
		d.drivers = append(d.drivers, dr)
	}
	if err := host.StartProfiling(d); err != nil {
		return r, err
	}
	if err := host.replay(d.afterSample); err != nil {
		return r, err
	}
	if err := d.drainAll(); err != nil {
		return r, err
	}
	var delivered uint64
	for _, dr := range d.drivers {
		st := dr.Stats()
		r.Samples += st.Samples
		r.Hits += st.Hits
		r.Misses += st.Misses
		r.Evictions += st.Evictions + st.Saturations
		r.Dropped += st.Dropped
		r.HandlerCycles += st.Cycles()
		delivered += dr.Delivered()
	}
	r.EntriesOut = d.out
	if r.Samples != uint64(len(t.Samples)) || delivered+r.Dropped != r.Samples {
		return r, fmt.Errorf("node: simulate %q: %d samples in the trace, %d counted, %d delivered, %d dropped",
			design.Name, len(t.Samples), r.Samples, delivered, r.Dropped)
	}
	c := design.Config.Cost
	r.DeliveryCycles = c.Delivery * r.Samples
	r.DaemonCycles = c.Daemon * r.EntriesOut
	return r, nil
}

// CompulsoryMisses counts the samples whose key (process key, PC, event)
// the trace has not shown on their CPU before: every design misses on
// them, so CompulsoryMisses/len(Samples) is a floor under any design's
// miss rate, and the part of a miss rate that associativity, replacement
// policy and size can remove is what lies above it.
func CompulsoryMisses(t *Trace) uint64 {
	type key struct {
		cpu   int
		inc   uint32
		pc    uint64
		event uint8
	}
	seen := make(map[key]struct{})
	var n uint64
	for _, s := range t.Samples {
		k := key{s.CPU, s.Key(), s.PC, s.Event}
		if _, ok := seen[k]; !ok {
			seen[k] = struct{}{}
			n++
		}
	}
	return n
}

// DesignVariant is one associativity and policy of Designs.
type DesignVariant struct {
	Assoc  int
	Policy Policy
}

// DefaultVariants are the designs sec. 5.4 compares: 4-, 6- and 8-way,
// round-robin and swap-to-front with insert-at-front. DCPI's is the first.
func DefaultVariants() []DesignVariant {
	return []DesignVariant{
		{4, RoundRobin}, {4, SwapToFront},
		{6, RoundRobin}, {6, SwapToFront},
		{8, RoundRobin}, {8, SwapToFront},
	}
}

// DefaultTableLines are the table sizes of DefaultDesigns, in 64-byte
// lines of the modelled Alpha: 16 KB, 64 KB and DCPI's 256 KB.
var DefaultTableLines = []int{256, 1024, 4096}

// Designs returns one design per size and variant, sizes being the
// table's memory in 64-byte lines, as the paper compares them: a 4-way
// table has four 16-byte entries a line; a 6-way one packs six entries
// into a line (sec. 5.4: "by packing more entries per processor cache
// line (which would also increase the total number of entries)"), so
// the same memory holds 1.5 times as many; an 8-way bucket spans two
// lines. Buffers are DCPI's 8K entries.
func Designs(lines []int, variants []DesignVariant) []Design {
	var out []Design
	for _, n := range lines {
		for _, v := range variants {
			cfg := DefaultDriverConfig()
			cfg.Assoc, cfg.Policy = v.Assoc, v.Policy
			perLine, _ := layout(v.Assoc)
			buckets := n * perLine / v.Assoc
			cfg.TableEntries = max(1, buckets) * v.Assoc
			out = append(out, Design{
				Name:   fmt.Sprintf("%dKB %d-way %v", n*64/1024, v.Assoc, v.Policy),
				Config: cfg,
			})
		}
	}
	return out
}

// DefaultDesigns is Designs(DefaultTableLines, DefaultVariants()).
func DefaultDesigns() []Design { return Designs(DefaultTableLines, DefaultVariants()) }

// tableBytes is a design's modelled table memory on the Alpha.
func tableBytes(cfg DriverConfig) int {
	perLine, _ := layout(cfg.Assoc)
	linesPerBucket := (cfg.Assoc + perLine - 1) / perLine
	return cfg.TableEntries / cfg.Assoc * linesPerBucket * 64
}

// WriteResults prints results as an aligned table. Each design's total is
// compared with the 4-way round-robin design of the same table memory
// (DCPI's), when there is one.
func WriteResults(w io.Writer, rs []Result) error {
	base := map[int]float64{}
	for _, r := range rs {
		if c := r.Design.Config; c.Assoc == 4 && c.Policy == RoundRobin {
			base[tableBytes(c)] = r.TotalPerSample()
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "table\tentries\tassoc\tpolicy\tmiss %\tevict %\tsamples/entry\thandler cyc/sample\tdaemon cyc/sample\ttotal cyc/sample\tvs 4-way rr\t")
	for _, r := range rs {
		c := r.Design.Config
		vs := "-"
		if b, ok := base[tableBytes(c)]; ok && b > 0 {
			vs = fmt.Sprintf("%+.1f%%", 100*(r.TotalPerSample()/b-1))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%v\t%.2f\t%.2f\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t\n",
			sizeString(tableBytes(c)), c.TableEntries, c.Assoc, c.Policy, 100*r.MissRate(), 100*r.EvictionRate(),
			r.Aggregation(), r.HandlerPerSample(), r.DaemonPerSample(), r.TotalPerSample(), vs)
	}
	return tw.Flush()
}

func sizeString(bytes int) string {
	if bytes%1024 != 0 {
		return fmt.Sprintf("%dB", bytes)
	}
	return fmt.Sprintf("%dKB", bytes/1024)
}
