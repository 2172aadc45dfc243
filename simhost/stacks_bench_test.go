package simhost

import (
	"io"
	"sync"
	"testing"
	"time"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
	"dcpi/node"
	"dcpi/node/unwind"
	"dcpi/wire"
	"dcpi/workloads"
)

// A recorded run for the driver benchmarks: recurse's samples with their
// user contexts, and for each the memory words its stack walk read, so
// that the walk replays exactly.
type recorded struct {
	samples []node.Sample
	space   *unwind.Space
}

// replayMem answers a recorded walk's reads.
type replayMem []struct{ addr, v uint64 }

func (m replayMem) Read8(addr uint64) (uint64, bool) {
	for _, r := range m {
		if r.addr == addr {
			return r.v, true
		}
	}
	return 0, false
}

// recorder walks each sample through a memory that logs its reads.
type recorder struct {
	space *unwind.Space
	out   *recorded
	limit int
}

type loggingMem struct {
	m   hwsim.UserMemory
	log replayMem
}

func (l *loggingMem) Read8(addr uint64) (uint64, bool) {
	v, ok := l.m.Read8(addr)
	if ok {
		l.log = append(l.log, struct{ addr, v uint64 }{addr, v})
	}
	return v, ok
}

func (r *recorder) CounterInterrupt(s hwsim.Sample) uint64 {
	if len(r.out.samples) >= r.limit {
		return 0
	}
	ns := node.Sample{Incarnation: s.Incarnation, PC: s.PC, Event: uint8(s.Event), SP: s.SP, FP: s.FP, RA: s.RA, T9: s.T9}
	if s.Mem != nil {
		lm := &loggingMem{m: s.Mem}
		var out [wire.MaxStackFrames]uint64
		r.space.Walk(unwind.Regs{PC: s.PC, SP: s.SP, FP: s.FP, RA: s.RA, T9: s.T9}, lm, out[:])
		ns.Mem = lm.log
	}
	r.out.samples = append(r.out.samples, ns)
	return 0
}

var (
	recordOnce sync.Once
	recordRun  recorded
	recordErr  error
)

func recordRecurse(b *testing.B) *recorded {
	recordOnce.Do(func() {
		data, err := workloads.Binary("recurse")
		if err != nil {
			recordErr = err
			return
		}
		im, err := elfimage.Parse(data, "/bin/recurse")
		if err != nil {
			recordErr = err
			return
		}
		base, hi := ^uint64(0), uint64(0)
		for _, s := range im.Segments {
			base, hi = min(base, s.Vaddr&^(alpha.PageSize-1)), max(hi, s.Vaddr+s.Memsz)
		}
		tab, err := UnwindTableOf(im, base)
		if err != nil {
			recordErr = err
			return
		}
		recordRun.space = unwind.NewSpace([]unwind.Image{{Base: base, Size: hi - base, Table: tab}})
		cfg := hwsim.DefaultConfig()
		cfg.CPUs, cfg.Timing = 1, false
		cfg.Files = map[string][]byte{"/bin/recurse": data}
		cfg.Stdout, cfg.Stderr = io.Discard, io.Discard
		m, err := hwsim.New(cfg)
		if err != nil {
			recordErr = err
			return
		}
		prof := hwsim.DefaultProfile()
		prof.Counters[0].PeriodMin, prof.Counters[0].PeriodMax = 3000, 3400
		if err := m.StartProfiling(prof, &recorder{space: recordRun.space, out: &recordRun, limit: 50_000}); err != nil {
			recordErr = err
			return
		}
		if _, err := m.Spawn("/bin/recurse", []string{"/bin/recurse"}, nil); err != nil {
			recordErr = err
			return
		}
		m.Run(0)
	})
	if recordErr != nil {
		b.Fatal(recordErr)
	}
	return &recordRun
}

// BenchmarkDriverSample replays recurse's samples through DCPI's flat
// handler: host ns and modelled cycles per sample, and the table's hit
// rate. BenchmarkDriverSampleStacks replays the same samples with stacks
// on: the flat handler and the stack walk and count, the figures of both
// and the stack table's hit rate. Run them together:
//
//	go test -run XXX -bench DriverSample ./simhost
func BenchmarkDriverSample(b *testing.B) { benchDriver(b, false) }

func BenchmarkDriverSampleStacks(b *testing.B) { benchDriver(b, true) }

func benchDriver(b *testing.B, stacks bool) {
	rec := recordRecurse(b)
	cfg := node.DefaultDriverConfig()
	if stacks {
		cfg.Stacks = node.DefaultStackConfig()
	}
	d, err := node.NewDriver(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var dst []node.Entry
	var sdst []node.StackSample
	n := len(rec.samples)
	b.ReportAllocs()
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		s := &rec.samples[i%n]
		_, full := d.Sample(s.Incarnation, s.PC, s.Event)
		if stacks {
			_, f := d.SampleStack(*s, rec.space)
			full = full || f
		}
		if full { // play the daemon at once
			d.HandOff(false)
			for ok := true; ok; {
				dst, ok = d.TakeFull(dst[:0])
			}
			for ok := true; ok; {
				sdst, ok = d.TakeFullStacks(sdst[:0])
			}
			d.Release()
		}
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N), "ns/sample")
	st := d.Stats()
	b.ReportMetric(float64(st.Cycles())/float64(st.Samples), "cycles/sample")
	b.ReportMetric(100*float64(st.Hits)/float64(st.Samples), "%hits")
	if stacks {
		b.ReportMetric(float64(st.CyclesStack)/float64(st.StackSamples), "stack-cycles/sample")
		b.ReportMetric(100*float64(st.StackHits)/float64(st.StackSamples), "%stack-hits")
		b.ReportMetric(float64(st.StackFrames)/float64(st.StackSamples), "frames/sample")
	}
}
