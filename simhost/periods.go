package simhost

import (
	"math"

	"dcpi/hwsim"
)

// EventsPerSample is, per event p's counters count, how many events each
// of its samples stands for (storage.Node.Periods): the counter's mean
// period, (PeriodMin+PeriodMax)/2, times the number of events multiplexed
// on it, since a counter moves to its next event at each interrupt and so
// counts each of k events about 1/k of the time. The factor k is exact
// when the multiplexed events occur at similar rates; a rare event holds
// the counter longer per sample than a frequent one, so its estimate is
// the rougher.
//
// An event on several counters (or named twice on one) is sampled by
// each: its samples come at the sum of their rates, so each stands for
// 1 / sum(1/(mean_i x k_i)) events.
func EventsPerSample(p hwsim.ProfileConfig) map[uint8]uint64 {
	rate := map[uint8]float64{} // samples per event, summed over the counters
	single := map[uint8]uint64{}
	for _, c := range p.Counters {
		k := uint64(len(c.Events))
		if k == 0 {
			continue
		}
		per := (c.PeriodMin + c.PeriodMax) / 2 * k
		for _, e := range c.Events {
			ev := uint8(e)
			if _, seen := rate[ev]; seen {
				delete(single, ev)
			} else {
				single[ev] = per
			}
			rate[ev] += 1 / float64(max(per, 1))
		}
	}
	out := make(map[uint8]uint64, len(rate))
	for e, r := range rate {
		if n, ok := single[e]; ok {
			out[e] = max(n, 1) // exact: no rounding for the usual one counter
			continue
		}
		out[e] = max(uint64(math.Round(1/r)), 1)
	}
	return out
}
