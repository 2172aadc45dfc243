package node

import (
	"slices"
	"time"

	"dcpi/hwsim"
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
}

func newHandlerTiming() handlerTiming {
	return handlerTiming{hitNS: make([]float32, timingKeep), missNS: make([]float32, timingKeep)}
}

// timed runs the handler between two clock reads and classifies the call
// by whether the driver counted a miss.
func (t *handlerTiming) timed(d *Driver, s hwsim.Sample, clockNS float64) (uint64, bool) {
	misses := d.stats.Misses
	start := time.Now()
	cost, full := d.Sample(s.Incarnation, s.PC, uint8(s.Event))
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

// HandlerTiming is the interrupt handler's cost in host time, measured
// during a run on one sample in 64, with the clock's own cost subtracted:
// the median of the most recent timings per path, which includes the
// cache misses a handler takes between stretches of simulation (the
// benchmarks measure it warm).
type HandlerTiming struct {
	Hits, Misses                   uint64 // timed calls by path
	MedianHitNanos, MedianMissNano float64
}

func summarize(ts []handlerTiming) HandlerTiming {
	var h HandlerTiming
	var hit, miss []float32
	for _, t := range ts {
		h.Hits += t.hits
		h.Misses += t.misses
		hit = append(hit, t.hitNS[:min(t.hits, timingKeep)]...)
		miss = append(miss, t.missNS[:min(t.misses, timingKeep)]...)
	}
	h.MedianHitNanos, h.MedianMissNano = median(hit), median(miss)
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
