package calc

import (
	"fmt"
	"math"

	"dcpi/analysis/sched"
	"dcpi/hwsim/alpha"
)

// Measured counts and the least frequency samples allow: the two passes
// EstimateFrequencies runs around the heuristic of sec. 6.1.3, so that an
// estimate never contradicts what was measured.

// useProfileMe replaces or checks each class's heuristic estimate with
// ProfileMe's retire counts, where prof has them (the ProfileMe paper,
// sec. 5.1: k retire samples at interval S estimate k·S executions, with
// relative error 1/√k). Every instruction of a class executes equally
// often, so the class's F is Σk·S / n / P over its n instructions. With
// at least opt.MinMeSamples retire samples the measured F replaces the
// heuristic's (Method ProfileMe; confidence by the same sample counts as
// ratios); with fewer, the heuristic's F stays, checked: outside the
// measurement's Poisson band it is rated low.
func useProfileMe(p *Procedure, prof *Profile, f *Frequencies, byClass [][]int, opt FreqOptions) {
	P := prof.Periods[alpha.EvCycles]
	if len(prof.MeRetired) == 0 || prof.MeInterval <= 0 || P <= 0 {
		return
	}
	for c, blocks := range byClass {
		var k, n float64
		for _, b := range blocks {
			for _, in := range p.Sched[b].Insns {
				k += prof.MeRetired[in.PC]
				n++
			}
		}
		if k == 0 || n == 0 {
			continue
		}
		e := &f.Class[c]
		e.MeSamples = k
		fme := k * prof.MeInterval / n / P
		heur := "no estimate"
		if e.Known() {
			heur = fmt.Sprintf("%s (%s, %s confidence)", num(e.F), e.Method, e.Confidence)
		}
		// 2σ of a Poisson count k, as a band on F.
		lo, hi := poissonBand(k, opt.Sigmas)
		lo, hi = fme*lo/k, fme*hi/k
		agree := e.Known() && e.F >= lo && e.F <= hi
		if k < opt.MinMeSamples {
			switch {
			case !e.Known():
			case agree:
				e.Check = fmt.Sprintf("ProfileMe's %.0f retire samples agree (F = %s)", k, num(fme))
			default:
				e.Confidence = Low
				e.Reason = fmt.Sprintf("ProfileMe's %.0f retire samples measure F = %s (%s to %s), the CYCLES heuristic %s", k, num(fme), num(lo), num(hi), heur)
				e.Check = e.Reason
			}
			continue
		}
		check := fmt.Sprintf("frequency from ProfileMe's %.0f retire samples (±%.0f%%); the CYCLES heuristic gave %s", k, 100/math.Sqrt(k), heur)
		*e = ClassEstimate{F: fme, Method: ProfileMe, IssuePoints: e.IssuePoints, MeSamples: k, Check: check}
		switch {
		case k >= opt.HighSamples:
			e.Confidence = High
		case k >= opt.MediumSamples:
			e.Confidence = Medium
		default:
			e.Confidence = Low
			e.Reason = fmt.Sprintf("frequency from %.0f ProfileMe retire samples (±%.0f%%)", k, 100/math.Sqrt(k))
		}
	}
}

// poissonBand returns the range of means a Poisson count k is within
// sigmas standard deviations of (k ± sigmas·√k, the low end at least a
// tenth of k).
func poissonBand(k, sigmas float64) (lo, hi float64) {
	d := sigmas * math.Sqrt(k)
	return max(k-d, k/10), k + d
}

// boundBySamples raises every class whose F its CYCLES samples cannot
// support to the least they allow: an instruction with S samples executed
// at least S / (M + MaxStallCycles) times per P, since no execution spends
// more than M + MaxStallCycles cycles at the head of the queue. Samples
// thus never sit on code estimated not to run (F = 0), whatever the
// heuristic or propagation said.
func boundBySamples(p *Procedure, prof *Profile, f *Frequencies, byClass [][]int, opt FreqOptions) {
	for c, blocks := range byClass {
		lb, at, s := 0.0, uint64(0), 0.0
		for _, b := range blocks {
			for _, in := range p.Sched[b].Insns {
				si := prof.At(in.PC, alpha.EvCycles)
				if v := si / (float64(in.M) + opt.MaxStallCycles); v > lb {
					lb, at, s = v, in.PC, si
				}
			}
		}
		e := &f.Class[c]
		if lb == 0 || e.Known() && e.F >= lb {
			continue
		}
		was := "no estimate"
		if e.Known() {
			was = fmt.Sprintf("%s (%s)", num(e.F), e.Method)
		}
		*e = ClassEstimate{F: lb, Method: SampleBound, Confidence: Low, IssuePoints: e.IssuePoints, MeSamples: e.MeSamples,
			Reason: fmt.Sprintf("a lower bound: %.0f samples at %#x need F ≥ %s (at most %.0f stall cycles an execution); the estimate was %s", s, at, num(lb), opt.MaxStallCycles, was)}
	}
}

// boundByLatency holds each heuristic estimate to the load latencies
// value sampling measured: an issue point i that waits for a load j of
// its block cannot issue until j's data is back, so the instructions
// from j up to i spend at least j's latency L at the head of the queue
// per execution, on average over executions: ΣS ≥ F·L, F ≤ ΣS/L (j
// included: the latency is measured from the load's own head of queue,
// its DTB refill within it). A class
// whose F is significantly above the least such bound (a loop whose every
// issue point stalls on misses, where the ratios of sec. 6.1.3 see a
// D-cache hit's schedule) takes the bound: Method LoadLatency, medium
// confidence when the span holds MediumSamples samples and the latency
// rests on MinMeSamples value samples, else low. ProfileMe's counts,
// when they replaced the estimate, are not bounded: they are measured.
func boundByLatency(p *Procedure, prof *Profile, f *Frequencies, byClass [][]int, opt FreqOptions) {
	if len(prof.LoadLatency) == 0 {
		return
	}
	for c, blocks := range byClass {
		e := &f.Class[c]
		if !e.Known() || e.Method == ProfileMe || e.F <= 0 {
			continue
		}
		best, bestS := math.Inf(1), 0.0
		var at, load uint64
		var lat Latency
		for _, b := range blocks {
			ins := p.Sched[b].Insns
			for i := range ins {
				for _, st := range ins[i].Stalls {
					if st.Reason != sched.DepRa && st.Reason != sched.DepRb || st.Culprit < ins[0].PC || st.Culprit >= ins[i].PC {
						continue
					}
					l, ok := prof.LoadLatency[st.Culprit]
					if !ok || l.Mean <= 0 {
						continue
					}
					j := int((st.Culprit - ins[0].PC) / 4)
					s := 0.0
					for k := j; k <= i; k++ {
						s += prof.At(ins[k].PC, alpha.EvCycles)
					}
					if v := s / l.Mean; v < best {
						best, bestS, at, load, lat = v, s, ins[i].PC, st.Culprit, l
					}
				}
			}
		}
		if math.IsInf(best, 1) || bestS <= 0 || e.F <= best*(1+opt.Sigmas/math.Sqrt(bestS)) {
			continue
		}
		was := fmt.Sprintf("%s (%s, %s confidence)", num(e.F), e.Method, e.Confidence)
		*e = ClassEstimate{F: best, Method: LoadLatency, Confidence: Low, IssuePoints: e.IssuePoints, MeSamples: e.MeSamples,
			Check: fmt.Sprintf("the load at %#x measured %.0f cycles mean latency (%.0f value samples), so its and %#x's %.0f samples allow F ≤ %s; the CYCLES heuristic gave %s",
				load, lat.Mean, lat.Samples, at, bestS, num(best), was)}
		if bestS >= opt.MediumSamples && lat.Samples >= opt.MinMeSamples {
			e.Confidence = Medium
		} else {
			e.Reason = "an upper bound from a measured load latency, on few samples: " + e.Check
		}
	}
}
