package node

import (
	"fmt"
	"io"
	"runtime"
	"sync"
	"text/tabwriter"

	"dcpi/hwsim"
)

// The trace-driven simulator of sec. 5.4: replay a recorded sample trace
// against several designs of the driver's table and compare how well each
// aggregates and what it costs. It drives the real Driver (not a model of
// it), one per CPU of the trace, and plays a daemon that empties every
// overflow buffer as soon as it fills and drains the tables at the end.

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

func simulateOne(t *Trace, design Design) (Result, error) {
	r := Result{Design: design}
	drivers := make([]*Driver, t.CPUs)
	for i := range drivers {
		d, err := NewDriver(design.Config)
		if err != nil {
			return r, err
		}
		drivers[i] = d
	}
	var delivered uint64
	buf := make([]Entry, 0, design.Config.BufferEntries)
	take := func(d *Driver) {
		for ok := true; ok; {
			buf, ok = d.TakeFull(buf[:0])
			r.EntriesOut += uint64(len(buf))
		}
		d.Release()
	}
	for _, s := range t.Samples {
		d := drivers[s.CPU]
		if _, full := d.Sample(s.Key(), s.PC, s.Event); full {
			d.HandOff(false)
			take(d)
		}
	}
	for _, d := range drivers {
		d.BeginFlush()
		buf = d.DrainTable(buf[:0])
		r.EntriesOut += uint64(len(buf))
		d.EndFlush()
		d.HandOff(true)
		take(d)
		st := d.Stats()
		r.Samples += st.Samples
		r.Hits += st.Hits
		r.Misses += st.Misses
		r.Evictions += st.Evictions + st.Saturations
		r.Dropped += st.Dropped
		r.HandlerCycles += st.Cycles()
		delivered += d.Delivered()
	}
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

// RecordOptions says what to run to record a trace.
type RecordOptions struct {
	Machine hwsim.Config        // with the programs in Machine.Files
	Profile hwsim.ProfileConfig // what the counters count (DCPI's default: hwsim.DefaultProfile)
	// Programs are the argument vectors of the programs to run at once;
	// argv[0] is the program's path.
	Programs [][]string
	Env      []string
	// Cycles, if not zero, is how long to run, in machine cycles: a program
	// that exits before then is started again (as a new process), so the
	// CPUs stay as busy as the mix makes them. Zero runs each program once,
	// until all have exited.
	Cycles uint64
}

// RecordSummary describes a recorded trace.
type RecordSummary struct {
	Samples   uint64
	Cycles    uint64 // machine time at the end
	Processes int    // programs started (not counting their children)
}

// RecordTrace runs programs on a simulated machine and writes every
// counter interrupt to w as a trace.
func RecordTrace(w io.Writer, o RecordOptions) (RecordSummary, error) {
	var sum RecordSummary
	if len(o.Programs) == 0 {
		return sum, fmt.Errorf("node: record: no programs to run")
	}
	m, err := hwsim.New(o.Machine)
	if err != nil {
		return sum, err
	}
	rec, err := NewTraceRecorder(w, o.Machine.CPUs)
	if err != nil {
		return sum, err
	}
	if err := m.StartProfiling(o.Profile, rec); err != nil {
		return sum, err
	}
	procs := make([]*hwsim.Process, len(o.Programs))
	spawn := func(i int) error {
		argv := o.Programs[i]
		p, err := m.Spawn(argv[0], argv, o.Env)
		if err != nil {
			return fmt.Errorf("node: record: run %s: %w", argv[0], err)
		}
		procs[i] = p
		sum.Processes++
		return nil
	}
	for i := range o.Programs {
		if err := spawn(i); err != nil {
			return sum, err
		}
	}
	if o.Cycles == 0 {
		m.Run(0)
	} else {
		chunk := max(o.Machine.ClockHz/1000, o.Machine.Quantum) // about 1 ms
		for m.Now() < o.Cycles {
			m.RunFor(min(chunk, o.Cycles-m.Now()))
			for i, p := range procs {
				if p.State() >= hwsim.ProcZombie && m.Now() < o.Cycles {
					if err := spawn(i); err != nil {
						return sum, err
					}
				}
			}
		}
	}
	m.StopProfiling()
	sum.Samples, sum.Cycles = rec.Count(), m.Now()
	return sum, rec.Close()
}
