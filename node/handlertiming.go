package node

import (
	"slices"
	"time"

	"dcpi/node/unwind"
)

// timingStride is how often the handler is timed in host time: one sample
// in 64 keeps the clock reads (tens of ns) off the rest.
const timingStride = 64

// timingKeep is how many timings per CPU and path are kept for the
// median: a mean would be dominated by the rare call that the Go
// scheduler or a GC pause interrupts.
const timingKeep = 4096

// handlerTiming keeps one CPU's most recent timed handler calls, split by
// path, in rings allocated up front (the handler path allocates nothing).
type handlerTiming struct {
	tick         uint64
	hits, misses uint64 // timed calls
	hitNS        []float32
	missNS       []float32
	clocks       uint64    // timed empty intervals
	clockNS      []float32 // an empty interval, timed where a handler runs
	stacks       uint64    // timed stack walks and counts (SampleStack)
	stackNS      []float32
}

func newHandlerTiming() handlerTiming {
	return handlerTiming{hitNS: make([]float32, timingKeep), missNS: make([]float32, timingKeep),
		clockNS: make([]float32, timingKeep), stackNS: make([]float32, timingKeep)}
}

// timedStack times the stack side of a handler call, on the calls whose
// flat side timed does.
func (t *handlerTiming) timedStack(d *Driver, s Sample, space *unwind.Space, clockNS float64) (uint64, bool) {
	start := time.Now()
	cost, full := d.SampleStack(s, space)
	t.stackNS[t.stacks%timingKeep] = float32(max(float64(time.Since(start))-clockNS, 0))
	t.stacks++
	return cost, full
}

// timed runs the handler, keyed by key, between two clock reads and
// classifies the call by whether the driver counted a miss.
func (t *handlerTiming) timed(d *Driver, key uint32, pc uint64, event uint8, clockNS float64) (uint64, bool) {
	misses := d.stats.Misses
	start := time.Now()
	cost, full := d.Sample(key, pc, event)
	ns := max(float64(time.Since(start))-clockNS, 0)
	if d.stats.Misses != misses {
		t.missNS[t.misses%timingKeep] = float32(ns)
		t.misses++
	} else {
		t.hitNS[t.hits%timingKeep] = float32(ns)
		t.hits++
	}
	return cost, full
}

// timeClock times nothing, at an interrupt, the way timed times the
// handler: what the two clock reads cost there, cold, beyond their warm
// cost (already subtracted).
func (t *handlerTiming) timeClock(clockNS float64) {
	start := time.Now()
	ns := max(float64(time.Since(start))-clockNS, 0)
	t.clockNS[t.clocks%timingKeep] = float32(ns)
	t.clocks++
}

// HandlerTiming is the interrupt handler's cost in host time, measured
// during a run on one sample in 64, with the clock's own cost subtracted:
// the median of the most recent timings per path, which includes the
// cache misses a handler takes between stretches of simulation (the
// benchmarks measure it warm).
type HandlerTiming struct {
	Hits, Misses                   uint64 // timed calls by path
	MedianHitNanos, MedianMissNano float64
	// MedianClockNanos is what timing an empty interval at an interrupt
	// adds, beyond the warm clock cost already subtracted from all three:
	// the measurement's own floor in the cold cache.
	MedianClockNanos float64
	// Stacks and MedianStackNanos time what the stack side adds to a
	// handler call (SampleStack: walk and count), with stacks on.
	Stacks           uint64
	MedianStackNanos float64
}

func summarize(ts []handlerTiming) HandlerTiming {
	var h HandlerTiming
	var hit, miss, clock, stack []float32
	for _, t := range ts {
		h.Stacks += t.stacks
		stack = append(stack, t.stackNS[:min(t.stacks, timingKeep)]...)
		h.Hits += t.hits
		h.Misses += t.misses
		hit = append(hit, t.hitNS[:min(t.hits, timingKeep)]...)
		miss = append(miss, t.missNS[:min(t.misses, timingKeep)]...)
		clock = append(clock, t.clockNS[:min(t.clocks, timingKeep)]...)
	}
	h.MedianHitNanos, h.MedianMissNano, h.MedianClockNanos = median(hit), median(miss), median(clock)
	h.MedianStackNanos = median(stack)
	return h
}

func median(s []float32) float64 {
	if len(s) == 0 {
		return 0
	}
	slices.Sort(s)
	return float64(s[len(s)/2])
}

// clockReadCost estimates what timing an empty call costs: the smallest
// of many back-to-back clock read pairs.
func clockReadCost() float64 {
	best := time.Duration(1 << 62)
	for range 200 {
		start := time.Now()
		if d := time.Since(start); d < best {
			best = d
		}
	}
	return float64(best)
}
