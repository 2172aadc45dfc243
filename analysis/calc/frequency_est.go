package calc

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"dcpi/analysis/sched"
	"dcpi/hwsim/alpha"
)

// FreqOptions tune the frequency heuristic (sec. 6.1.3) and the confidence
// rules (sec. 6.1.5). A zero field takes its default.
type FreqOptions struct {
	// ClusterWidth bounds a cluster of ratios: max <= ClusterWidth × min.
	// Default 1.5, the paper's example.
	ClusterWidth float64
	// MinClusterFraction is the smallest share of the class's issue points
	// a cluster must hold; a smaller one is taken as anomalous (an M too
	// large, a stall overlapped by the one before). Default 0.25.
	MinClusterFraction float64
	// MaxBelowFraction is the largest share of the class's issue points
	// that may lie significantly below a cluster's F: each of them would
	// have a negative dynamic stall (the schedule overestimated M), and
	// many such would make F an "unreasonably large stall" the other way.
	// Default 0.25.
	MaxBelowFraction float64
	// Sigmas is how many standard deviations of sampling error make a
	// difference significant. A ratio S/M whose issue point has no
	// dynamic stall is Poisson-distributed around F with variance F/M, so
	// within a cluster the largest ratio is dropped while it exceeds the
	// M-weighted mean of the others by more than Sigmas standard
	// deviations of that difference (it has a dynamic stall of its own),
	// and an issue point lies significantly below F when
	// S < F·M − Sigmas·√(F·M). Default 2.
	Sigmas float64
	// MinSamplesPerPoint: a class whose CYCLES samples average fewer than
	// this per issue point, or whose chosen cluster holds fewer than this
	// in all, has too few samples for ratios (relative sampling error
	// 1/√S, 25% at 16, about what a cluster width of 1.5 tolerates); its F
	// is ΣS/ΣM over all its instructions instead. Default 16.
	MinSamplesPerPoint float64
	// HighSamples and MediumSamples are the samples behind an estimate
	// (the used ratios' S) for high and medium confidence: relative
	// sampling errors of 10% and 15% at two standard deviations, so that
	// errors beyond 15% are low confidence. Defaults 400 and 180.
	HighSamples, MediumSamples float64
	// HighSpread is the widest max/min of the used ratios for high
	// confidence. Default 1.2.
	HighSpread float64
	// MinMeSamples is the fewest ProfileMe retire samples over a class
	// that replace its heuristic estimate (fewer only check it). Default
	// 16 (25% relative error, as MinSamplesPerPoint).
	MinMeSamples float64
	// MaxStallCycles is the most cycles one execution of an instruction
	// is taken to stall beyond its M (a memory miss after a DTB miss, a
	// divide): the least F a class's samples allow is max S/(M +
	// MaxStallCycles). Default 400.
	MaxStallCycles float64
}

func (o FreqOptions) withDefaults() FreqOptions {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.ClusterWidth, 1.5)
	def(&o.MinClusterFraction, 0.25)
	def(&o.MaxBelowFraction, 0.25)
	def(&o.Sigmas, 2)
	def(&o.MinSamplesPerPoint, 16)
	def(&o.HighSamples, 400)
	def(&o.MediumSamples, 180)
	def(&o.HighSpread, 1.2)
	def(&o.MinMeSamples, 16)
	def(&o.MaxStallCycles, 400)
	return o
}

// ErrBadOptions is wrapped when FreqOptions hold a value out of range.
var ErrBadOptions = errors.New("calc: bad frequency options")

func (o FreqOptions) check() error {
	for _, f := range []struct {
		name   string
		v, min float64
	}{{"ClusterWidth", o.ClusterWidth, 1}, {"MinClusterFraction", o.MinClusterFraction, 0},
		{"MaxBelowFraction", o.MaxBelowFraction, 0}, {"Sigmas", o.Sigmas, 0},
		{"MinSamplesPerPoint", o.MinSamplesPerPoint, 0}, {"HighSamples", o.HighSamples, 0},
		{"MediumSamples", o.MediumSamples, 0}, {"HighSpread", o.HighSpread, 1},
		{"MinMeSamples", o.MinMeSamples, 1}, {"MaxStallCycles", o.MaxStallCycles, 1}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < f.min {
			return fmt.Errorf("%w: %s = %v (at least %v)", ErrBadOptions, f.name, f.v, f.min)
		}
	}
	if o.MinClusterFraction > 1 || o.MaxBelowFraction > 1 {
		return fmt.Errorf("%w: fractions above 1", ErrBadOptions)
	}
	return nil
}

// EstimateFrequencies estimates the frequency of every class of p from the
// CYCLES samples in prof (sec. 6.1.3-6.1.5):
//
//  1. Each class holding instructions is estimated from its own samples
//     (estimateClass): the average of a cluster of small S/M ratios of its
//     issue points, recentered within sampling error; when it has few
//     samples, the F its issue points not significantly above F·M
//     support (consistent); or 0 (NoSamples) when
//     none of its instructions was sampled. A class whose code has no
//     issue point at all (ΣM = 0) is left to propagation.
//  2. Local propagation (propagate) gives the classes still unknown — those
//     of edges alone, and of code with no issue point — the values the
//     CFG's flow constraints imply. Estimates from samples, NoSamples
//     included, are never overridden: zero samples over a class's
//     instructions bound its F·ΣM to a few samples, tighter than a
//     difference of other estimates.
//  3. Every estimate gets a confidence (see Confidence's rules below), and
//     a low one its Reason.
//
// Around the heuristic, measurements in prof replace or bound it
// (measured_freq.go): ProfileMe's retire counts (useProfileMe, before
// propagation), value sampling's load latencies (boundByLatency), and,
// after propagation, the least F a class's own samples allow
// (boundBySamples), so that samples never sit on code estimated not to
// run. Each says what it did in the class's Method, Check and Reason.
//
// Confidence rules (sec. 6.1.5: issue points used, tightness, propagation,
// magnitude):
//
//   - Ratios: High when at least 3 ratios were averaged, their max/min is
//     at most HighSpread, they hold at least HighSamples samples and no
//     issue point was tolerated below the cluster (chooseCluster);
//     Medium when at least 2 were averaged with MediumSamples samples;
//     Low otherwise (one issue point: it may stall on every execution),
//     and Low with a Caveat when the one issue point tolerated below the
//     cluster is not at its block's entry: its M is the block's own, so
//     it is the issue point that did not stall and every one used did.
//   - FewSamples and NoSamples: Low.
//   - Propagated: Medium when every estimate it was computed from is High
//     and the result is at least a quarter of the largest of them (not a
//     small difference of large numbers, whose relative error is large);
//     Low otherwise.
//
// Samples are prof.At(pc, alpha.EvCycles). F is in executions per P
// cycles, P being prof.Periods[alpha.EvCycles]; the estimator itself does
// not need P.
func EstimateFrequencies(p *Procedure, prof *Profile, opt FreqOptions) (*Frequencies, error) {
	if p == nil || p.CFG == nil || len(p.Sched) != len(p.CFG.Blocks) {
		return nil, errors.New("calc: EstimateFrequencies: no procedure")
	}
	if prof == nil {
		prof = &Profile{}
	}
	opt = opt.withDefaults()
	if err := opt.check(); err != nil {
		return nil, err
	}
	for pc, c := range prof.Samples {
		if c == nil {
			continue
		}
		if s := c[alpha.EvCycles]; s < 0 || math.IsNaN(s) || math.IsInf(s, 0) {
			return nil, fmt.Errorf("calc: %s: %v CYCLES samples at %#x", p.CFG.Name, s, pc)
		}
	}
	f := &Frequencies{Class: make([]ClassEstimate, p.Classes.Count), p: p}
	byClass := make([][]int, p.Classes.Count)
	for b := range p.CFG.Blocks {
		c := p.Classes.Node[b]
		byClass[c] = append(byClass[c], b)
	}
	for c, blocks := range byClass {
		if len(blocks) > 0 {
			f.Class[c] = estimateClass(p, prof, blocks, opt)
		}
	}
	useProfileMe(p, prof, f, byClass, opt)
	boundByLatency(p, prof, f, byClass, opt)
	propagate(p, f)
	boundBySamples(p, prof, f, byClass, opt)
	return f, nil
}

// point is one issue point's ratio while a class is estimated.
type point struct {
	Ratio
	v float64 // S/M
	// entry: the ratio spans from its block's first instruction, so its
	// M depends on how the block was entered (hwsim may issue the first
	// instruction with its predecessor's last, making M too large).
	entry bool
}

// estimateClass estimates one class from the samples of its blocks.
func estimateClass(p *Procedure, prof *Profile, blocks []int, opt FreqOptions) ClassEstimate {
	var pts []point
	var sumS, sumM float64
	for _, b := range blocks {
		ins := p.Sched[b].Insns
		s := make([]float64, len(ins))
		for i := range ins {
			s[i] = prof.At(ins[i].PC, alpha.EvCycles)
			sumS += s[i]
			sumM += float64(ins[i].M)
		}
		for i := range ins {
			if ins[i].M <= 0 {
				continue
			}
			from := spanStart(ins, i)
			r := Ratio{PC: ins[i].PC, From: ins[from].PC}
			for k := from; k <= i; k++ {
				r.S += s[k]
				r.M += float64(ins[k].M)
			}
			pts = append(pts, point{Ratio: r, v: r.S / r.M, entry: from == 0})
		}
	}
	est := ClassEstimate{IssuePoints: len(pts)}
	if sumM == 0 {
		// Code with no issue point (a short block dual-issued with its
		// predecessor): its samples cannot be factored; only
		// propagation can tell.
		return est
	}
	if sumS == 0 {
		est.Method, est.Confidence = NoSamples, Low
		return est
	}
	fewSamples := func() ClassEstimate {
		// ΣS/ΣM over every instruction bounds F from above (stalls only
		// add samples); the issue points consistent with a lower F, cut
		// Poisson draws and all, give F.
		used, f := consistent(pts, sumS/sumM, opt.Sigmas)
		est.F, est.Method, est.Confidence = f, FewSamples, Low
		est.Reason = fmt.Sprintf("%.1f samples per issue point (%.0f wanted): too few to tell stalls from sampling noise", sumS/float64(max(len(pts), 1)), opt.MinSamplesPerPoint)
		est.Ratios = ratiosOf(pts, used)
		return est
	}
	if sumS < opt.MinSamplesPerPoint*float64(len(pts)) {
		return fewSamples()
	}
	used, ok, below := chooseCluster(pts, opt)
	if ok {
		used = recenter(pts, used, opt.Sigmas)
	}
	var cs, cm float64
	for _, k := range used {
		cs += pts[k].S
		cm += pts[k].M
	}
	if cs < opt.MinSamplesPerPoint || cm == 0 {
		return fewSamples()
	}
	est.F, est.Method = cs/cm, Ratios
	est.Ratios = ratiosOf(pts, used)
	lo, hi := math.Inf(1), 0.0
	for _, k := range used {
		lo, hi = min(lo, pts[k].v), max(hi, pts[k].v)
	}
	switch {
	case !ok:
		est.Confidence = Low
		est.Reason = fmt.Sprintf("no cluster of its %d issue points' ratios agreed; F is the largest group's", len(pts))
	case len(used) < 2:
		est.Confidence = Low
		est.Reason = fmt.Sprintf("frequency rests on 1 of %d issue points (%#x); the others' stalls exceed the static schedule, and if that one stalled too, F is too high and every CPI too low",
			len(pts), pts[used[0]].PC)
	case cs < opt.MediumSamples:
		est.Confidence = Low
		est.Reason = fmt.Sprintf("frequency rests on %.0f samples at %d issue points (%.0f wanted for 15%%)", cs, len(used), opt.MediumSamples)
	case below >= 0 && !pts[below].entry:
		// The point below cannot owe it to an M too large: its M is set
		// by its own block's schedule. Its ratio is then the one issue
		// point that did not stall, and the cluster's all stalled
		// dynamically on every execution: the heuristic's limit (sec.
		// 6.1.3 assumes some issue points do not stall), so F is an
		// upper bound only.
		est.Confidence = Low
		fm := est.F * pts[below].M
		est.Caveat = fmt.Sprintf("issue point %#x ran with S = %.0f where F·M = %.0f: the issue points used all stalled dynamically", pts[below].PC, pts[below].S, fm)
		est.Reason = est.Caveat
	case below < 0 && len(used) >= 3 && hi <= opt.HighSpread*lo && cs >= opt.HighSamples:
		est.Confidence = High
	default:
		est.Confidence = Medium
	}
	return est
}

// spanStart returns the first instruction of issue point i's ratio: j+1
// when i waits statically for an earlier instruction j of its block (a
// register or a busy unit; the last such stall is the one that sets M_i),
// i otherwise. Dynamic stalls between j and i overlap j's latency and
// shorten i's head time, but not the time from j to i (sec. 6.1.3).
func spanStart(ins []sched.Insn, i int) int {
	from := i
	for _, st := range ins[i].Stalls {
		if st.Reason == sched.Slotting {
			continue
		}
		if st.Culprit >= ins[0].PC && st.Culprit < ins[i].PC {
			from = int((st.Culprit-ins[0].PC)/4) + 1
		}
	}
	return from
}

func ratiosOf(pts []point, used []int) []Ratio {
	out := make([]Ratio, len(pts))
	for i := range pts {
		out[i] = pts[i].Ratio
	}
	for _, k := range used {
		out[k].Used = true
	}
	return out
}

// chooseCluster picks the ratios to average (sec. 6.1.3). The ratios are
// sorted; each run starting at one of them and reaching every ratio up to
// ClusterWidth times it is a candidate cluster, taken lowest first. Its
// largest ratios are dropped while they exceed the mean of the rest by
// more than sampling error (those issue points stalled too). A cluster is
// discarded if it then holds fewer than MinClusterFraction of the issue
// points, or if its F puts more than MaxBelowFraction of them
// significantly below F (negative dynamic stalls). The first cluster kept
// wins; if all are discarded, the one with the most issue points (the
// lowest on a tie), with ok false. below is the one issue point tolerated
// significantly below the cluster's F, -1 if none.
func chooseCluster(pts []point, opt FreqOptions) (used []int, ok bool, below int) {
	order := make([]int, len(pts))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case pts[a].v < pts[b].v:
			return -1
		case pts[a].v > pts[b].v:
			return 1
		}
		return 0
	})
	n := float64(len(pts))
	var best []int
	// A cluster of one ratio is taken only when no cluster of two or more
	// passes: one issue point cannot show that it did not stall, nor that
	// its M is not too large (hwsim issues a block's first instruction
	// with its predecessor's last more often than a schedule from one
	// predecessor can see), while two or more that agree within sampling
	// error rarely stalled alike.
	for _, minSize := range []int{2, 1} {
		for a := 0; a < len(order); a++ {
			if a > 0 && pts[order[a]].v == pts[order[a-1]].v {
				continue // the same cluster as the one before, or a subset of it
			}
			b := a + 1
			for b < len(order) && pts[order[b]].v <= opt.ClusterWidth*pts[order[a]].v {
				b++
			}
			c := trim(pts, order[a:b], opt.Sigmas)
			if len(c) > len(best) {
				best = c
			}
			if len(c) < minSize || float64(len(c)) < opt.MinClusterFraction*n {
				continue
			}
			var s, m float64
			for _, k := range c {
				s, m = s+pts[k].S, m+pts[k].M
			}
			f := s / m
			below, lone := 0, -1
			for k := range pts {
				fm := f * pts[k].M
				if pts[k].S < fm-opt.Sigmas*math.Sqrt(fm) {
					below, lone = below+1, k
				}
			}
			// One point below is always tolerated: one M too large (see
			// above) is no reason to take a lower cluster; in a class of
			// three it is already a third of the points. But the lone
			// point may as well be the one that did not stall, so the
			// estimate is then medium confidence at most (low when its
			// M cannot be too large; see estimateClass).
			if below > 1 && float64(below) > opt.MaxBelowFraction*n {
				continue
			}
			if below != 1 {
				lone = -1
			}
			return slices.Clone(c), true, lone
		}
	}
	return slices.Clone(best), false, -1
}

// trim drops the largest ratios of a cluster (sorted ascending) while each
// exceeds the M-weighted mean of those below it by more than sigmas
// standard deviations of Poisson sampling error: var(S/M) = F/M, so the
// difference has variance F·(1/M_top + 1/ΣM_rest).
func trim(pts []point, c []int, sigmas float64) []int {
	for len(c) > 1 {
		var s, m float64
		for _, k := range c[:len(c)-1] {
			s, m = s+pts[k].S, m+pts[k].M
		}
		top := pts[c[len(c)-1]]
		f := s / m
		if top.v-f <= sigmas*math.Sqrt(f*(1/top.M+1/m)) {
			break
		}
		c = c[:len(c)-1]
	}
	return c
}

// consistent returns the issue points consistent with F, and F: the
// largest F at most f0 such that the points consistent with it (S not
// significantly above F·M: S ≤ c = ⌊F·M + sigmas·√(F·M)⌋) hold as many
// samples as Poisson(F·M) draws cut at c would, in expectation. Stalls only
// add samples, so F is sought from above: each step drops the points that
// stalled significantly at the current F and refits, stopping at the
// first fixpoint. The expectation of the cut draws (not F·M itself) keeps
// the cut from biasing F down: with F·M below 1, cutting Poisson's upper
// tail at 2σ lowers its mean by some 13%.
func consistent(pts []point, f0, sigmas float64) ([]int, float64) {
	f := f0
	var used []int
	for range 64 {
		used = used[:0]
		var s, e float64
		for k := range pts {
			fm := f * pts[k].M
			c := math.Floor(fm + sigmas*math.Sqrt(fm))
			if pts[k].S <= c {
				used = append(used, k)
				s += pts[k].S
				e += truncatedMean(fm, c)
			}
		}
		if e == 0 {
			return used, 0
		}
		nf := f * s / e
		if nf >= f*(1-1e-6) {
			return used, f
		}
		f = nf
	}
	return used, f
}

// truncatedMean is the mean of a Poisson(lambda) draw given it is at most
// c: lambda·P(X ≤ c−1)/P(X ≤ c); from the normal approximation when
// lambda is large.
func truncatedMean(lambda, c float64) float64 {
	if lambda <= 0 {
		return 0
	}
	if lambda > 100 {
		sd := math.Sqrt(lambda)
		t := (c + 0.5 - lambda) / sd
		phi := math.Exp(-t*t/2) / math.Sqrt(2*math.Pi)
		cdf := 0.5 * math.Erfc(-t/math.Sqrt2)
		return lambda - sd*phi/cdf
	}
	term := math.Exp(-lambda) // P(X = 0)
	below, upto := 0.0, term  // P(X ≤ k−1), P(X ≤ k)
	for k := 1.0; k <= c; k++ {
		term *= lambda / k
		below = upto
		upto += term
	}
	if c < 1 {
		below = 0
	}
	return lambda * below / upto
}

// recenter moves a cluster to the issue points consistent with its F
// within sampling error (|S − F·M| ≤ sigmas·√(F·M)) and refits F, until
// the set no longer changes: a cluster of width 1.5 begun at a ratio that
// sampling error put low holds only the low half of the stall-free issue
// points when each has a few dozen samples (±2σ is then wider than 1.5×),
// and so F comes out low. With many samples per point the band is narrow
// and the cluster stays as it was.
func recenter(pts []point, used []int, sigmas float64) []int {
	var s, m float64
	for _, k := range used {
		s, m = s+pts[k].S, m+pts[k].M
	}
	if m == 0 {
		return used
	}
	for range 32 {
		f := s / m
		var next []int
		var ns, nm float64
		for k := range pts {
			fm := f * pts[k].M
			if math.Abs(pts[k].S-fm) <= sigmas*math.Sqrt(fm) {
				next = append(next, k)
				ns, nm = ns+pts[k].S, nm+pts[k].M
			}
		}
		if nm == 0 {
			return used
		}
		same := slices.Equal(next, used)
		used, s, m = next, ns, nm
		if same {
			break
		}
	}
	return used
}
