package ev6

import (
	"math/bits"

	"dcpi/hwsim/alpha"
)

// StageTruth is the 21264's ground truth beyond alpha.GroundTruth, per
// instruction address: how often it retired and aborted (fetched on a
// wrong path and squashed), and the cycles its retired executions spent
// between the stages — fetch to map, map to issue, issue to retire — for
// the skid and ProfileMe's latencies to be judged against.
type StageTruth struct {
	PCs map[uint64]*PCStages
}

// PCStages is one instruction address's stage truth.
type PCStages struct {
	Retired uint64
	// Aborted counts wrong-path fetches; AbortedMapped and AbortedIssued
	// those of them that mapped, and issued, before the squash.
	Aborted, AbortedMapped, AbortedIssued uint64
	// Replayed counts the times it trapped at issue (an order trap, a
	// DTB miss) and was fetched again: a killed execution on the correct
	// path, not counted in Aborted.
	Replayed uint64
	// SpecAborted counts its issues aborted because they fell in the
	// speculative window of a load that missed (HRM §2.7.1): it stayed in
	// the issue queue and issued again, not fetched again.
	SpecAborted                           uint64
	FetchToMap, MapToIssue, IssueToRetire uint64
}

// NewStageTruth returns an empty collection.
func NewStageTruth() *StageTruth { return &StageTruth{PCs: make(map[uint64]*PCStages)} }

// Add adds o's counts to s's.
func (s *StageTruth) Add(o *StageTruth) {
	for pc, v := range o.PCs {
		e := s.PCs[pc]
		if e == nil {
			e = &PCStages{}
			s.PCs[pc] = e
		}
		e.Retired += v.Retired
		e.Aborted += v.Aborted
		e.AbortedMapped += v.AbortedMapped
		e.AbortedIssued += v.AbortedIssued
		e.Replayed += v.Replayed
		e.SpecAborted += v.SpecAborted
		e.FetchToMap += v.FetchToMap
		e.MapToIssue += v.MapToIssue
		e.IssueToRetire += v.IssueToRetire
	}
}

func (c *Core) stagesFor(pc uint64) *PCStages {
	if c.Stages == nil {
		return nil
	}
	e := c.Stages.PCs[pc]
	if e == nil {
		e = &PCStages{}
		c.Stages.PCs[pc] = e
	}
	return e
}

func pcTruth(g *alpha.GroundTruth, pc uint64) *alpha.PCTruth {
	e := g.PCs[pc]
	if e == nil {
		e = &alpha.PCTruth{}
		g.PCs[pc] = e
	}
	return e
}

// record adds the retired instruction pd at pc to the ground truth. Its
// head cycles are those since the previous retire (or stop): the cycles
// it was the oldest instruction in flight, which is what counter samples,
// taken at the next instruction to retire, estimate; they add up to the
// cycles of the run.
func (c *Core) record(d *alpha.Decoded, pd *pending, pc, next uint64) {
	if st := c.stagesFor(pc); st != nil {
		st.Retired++
		st.FetchToMap += pd.mapc - pd.fetch
		st.MapToIssue += pd.issue - pd.mapc
		st.IssueToRetire += pd.retire - pd.issue
	}
	if c.Truth == nil {
		c.acct = max(c.acct, pd.retire)
		return
	}
	e := pcTruth(c.Truth, pc)
	e.Executed++
	if pd.retire > c.acct {
		e.HeadCycles += pd.retire - c.acct
		c.stalls(e, pd)
		c.acct = pd.retire
	}
	for s := pd.ev; s != 0; s &= s - 1 {
		e.Events[bits.TrailingZeros32(uint32(s))]++
	}
	cl := &c.classes[min(int(d.Op), len(c.classes)-1)]
	if (cl.base.Branch || cl.base.Jump || d.Op == alpha.OpBR) && next != pc+4 {
		c.Truth.Edges[alpha.Edge{From: pc, To: next}]++
	}
}

// stalls charges the head cycles of pd — from c.acct, the previous
// retire, to its own — to the 21164's stall causes where one names why
// the instruction was late, walking its stages: the front end (up to its
// earliest issue after fetch) to why fetch waited; from the earliest
// issue its map allowed to its issue, to why it did not issue then; from
// issue to retire, to the D-cache for a load's miss beyond the hit
// latency. Cycles no cause names stay uncharged (the map waiting for the
// window, a queue or registers; an order trap's refetch; the
// instruction's own latency and the retire stages): the columns add up to
// at most the head cycles, as on the 21164.
func (c *Core) stalls(e *alpha.PCTruth, pd *pending) {
	charge := func(from, to uint64, cause alpha.StallCause) {
		from = max(from, c.acct)
		to = min(to, pd.retire)
		if cause < alpha.NumStallCauses && to > from {
			e.Stall[cause] += to - from
		}
	}
	frontEnd := pd.fetch + uint64(c.p.FetchToMap+c.p.MapToIssue)
	charge(c.acct, frontEnd, pd.feCause)
	if pd.ev.Has(alpha.EvIMiss) && pd.feCause == noCause {
		charge(c.acct, frontEnd, alpha.StallICache)
	}
	charge(pd.mapc+uint64(c.p.MapToIssue), pd.issue, pd.issueCause)
	if pd.ev.Has(alpha.EvDMiss) && pd.done > pd.issue+pd.baseLat {
		charge(pd.issue+pd.baseLat, pd.done, alpha.StallDCache)
	}
}
