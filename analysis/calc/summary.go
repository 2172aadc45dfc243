package calc

import (
	"math"

	"dcpi/analysis/sched"
	"dcpi/hwsim/alpha"
)

// staticCause maps a schedule's stall reason to Figure 4's row. hwsim's
// issue model reads no Rc, so RcDep stays 0.
func staticCause(r sched.Reason) StaticCause {
	switch r {
	case sched.Slotting:
		return Slotting
	case sched.DepRa:
		return RaDep
	case sched.DepRb:
		return RbDep
	}
	return FUDep
}

// causeEvent is the event that counts a cause's misses and the most
// cycles one of them can cost (for the procedure-level cap); ok false
// when no event counts it.
func (x *explainer) causeEvent(c Cause) (e alpha.Event, cost float64, ok bool) {
	tp := x.tp
	switch c {
	case ICache:
		return alpha.EvIMiss, float64(tp.IcacheMissMemory), true
	case ITB:
		return alpha.EvITBMiss, float64(tp.ITBMissCycles + tp.IcacheMissMemory), true
	case DCache:
		// A miss may hold up its consumer and, replaying on a full miss
		// address file, the load itself.
		return alpha.EvDMiss, float64(tp.MemoryLatency + x.replay(tp.MemoryLatency)), true
	case DTB:
		return alpha.EvDTBMiss, float64(tp.DTBMissCycles), true
	case WriteBuffer:
		return alpha.EvWBFull, float64(x.replay(uint64(tp.WriteBufferEntries) * tp.WriteBufferRetire)), true
	case Mispredict:
		return alpha.EvBranchMP, float64(tp.MispredictPenalty), true
	}
	return 0, 0, false
}

// summarize tallies Figure 4 over the instructions with a known
// frequency. Amounts are in samples until the last step divides them by
// Actual.
func (x *explainer) summarize(insns []InsnExplanation) Summary {
	var s Summary
	// Per cause, the Lo and Hi stall of candidates with a finite bound
	// (capped below by the procedure's events) and with none.
	var loFin, loInf, hiFin, hiInf [NumCauses]float64
	var issue, static, stall, gain float64
	for i := range insns {
		in := &insns[i]
		s.AllSamples += in.S
		if !in.Known {
			continue
		}
		s.Instructions += in.F
		s.BestCase += in.F * float64(in.M)
		s.Actual += in.S
		st := 0
		for _, t := range in.Static {
			s.Static[staticCause(t.Reason)] += in.F * float64(t.Cycles)
			st += t.Cycles
		}
		static += in.F * float64(st)
		issue += in.F * float64(in.M-st)

		diff := in.S - in.F*float64(in.M)
		if math.Abs(diff) <= x.opt.Margin*math.Sqrt(max(in.S, in.F*float64(in.M), 1)) {
			continue // sampling error: NetSamplingError
		}
		if diff < 0 {
			gain += diff
			continue
		}
		stall += diff
		var b [NumCauses]float64
		var inf [NumCauses]bool
		for _, c := range in.Candidates {
			if math.IsInf(c.Bound, 1) {
				inf[c.Cause] = true
			}
			b[c.Cause] = min(diff, b[c.Cause]+in.F*c.Bound)
		}
		sum := 0.0
		for c := range b {
			sum += b[c]
		}
		s.UnexplainedStall.Lo += max(0, diff-sum)
		for c := range b {
			if b[c] == 0 {
				continue
			}
			lo := max(0, min(b[c], diff-(sum-b[c])))
			if inf[c] {
				hiInf[c] += b[c]
				loInf[c] += lo
			} else {
				hiFin[c] += b[c]
				loFin[c] += lo
			}
		}
	}
	s.UnexplainedGain = Range{gain, gain}
	for c := range NumCauses {
		lo, hi := loFin[c], hiFin[c]
		if e, cost, ok := x.causeEvent(c); ok && x.prof.Periods[e] > 0 {
			n := 0.0
			for i := range insns {
				n += x.prof.At(insns[i].PC, e)
			}
			limit := x.upper(n) * x.prof.Periods[e] * cost / x.prof.Periods[alpha.EvCycles]
			lo, hi = min(lo, limit), min(hi, limit)
		}
		s.Dynamic[c] = Range{lo + loInf[c], hi + hiInf[c]}
	}
	if s.Actual <= 0 {
		return Summary{Instructions: s.Instructions, BestCase: s.BestCase, AllSamples: s.AllSamples}
	}
	share := func(v float64) float64 { return v / s.Actual }
	for c := range s.Dynamic {
		s.Dynamic[c] = Range{share(s.Dynamic[c].Lo), share(s.Dynamic[c].Hi)}
	}
	s.UnexplainedStall = Range{share(s.UnexplainedStall.Lo), share(s.UnexplainedStall.Lo)}
	s.UnexplainedGain = Range{share(gain), share(gain)}
	s.SubtotalDynamic = share(stall + gain)
	for c := range s.Static {
		s.Static[c] = share(s.Static[c])
	}
	s.SubtotalStatic = share(static)
	s.TotalStall = s.SubtotalDynamic + s.SubtotalStatic
	s.Execution = share(issue)
	s.NetSamplingError = 1 - s.TotalStall - s.Execution
	return s
}
