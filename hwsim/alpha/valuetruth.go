package alpha

// ValueTruth is value sampling's ground truth (Burrows et al.): per
// instruction address, the histograms of what its executions computed —
// the register it wrote, its register operands — and, for a load, the
// cycles each execution's access took as the timing model charged it,
// with the level of the memory hierarchy its data came from. Value
// sampling's hot lists estimate exactly these, so tests hold their
// estimates to it. Like GroundTruth it is gathered only with ground truth
// on (hwsim's Config.GroundTruth) and nothing on the profiling path reads
// it. docs/groundtruth.md describes it.
//
// Memory is bounded: each histogram keeps exact counts of the first
// TruthValues distinct values it sees and counts every later value in
// Other, so a value with an entry has its exact count, and Other says
// how much the entries miss.
type ValueTruth struct {
	PCs map[uint64]*PCValues
	// a and b are the operands of the instruction being executed, read
	// before it (operands), for recordValues after it.
	a, b uint64
}

// TruthValues is how many distinct values a histogram counts exactly:
// twice a hot list's capacity (internal/hotlist.M), so every value a hot
// list can list is covered when it appeared among the first 32.
const TruthValues = 32

// Memory-hierarchy levels a load's data comes from (the 21164's).
const (
	LevelDcache = iota
	LevelScache
	LevelBcache
	LevelMemory
	NumLevels
)

// PCValues is one instruction's value histograms.
type PCValues struct {
	// Result is the register the instruction wrote, after it (integer
	// or FP bits); OperandA and OperandB its register operands before it
	// (Rb only when it is not a literal).
	Result, OperandA, OperandB Histogram
	// Latency, for a load, is its executions by cycles: the load's issue
	// cycle, the memory system's stall (DTB miss, replay traps) and its
	// load-to-use latency — what an interpreter's cycle counter reads
	// around the load when it issues at once.
	Latency Histogram
	// Levels counts a load's executions by the level its data came from
	// (LevelDcache...), by the load's own D-, S- and B-cache miss events;
	// exact, with no cap.
	Levels [NumLevels]uint64
	// LevelLatency is, per level, its executions by cycles as Latency.
	LevelLatency [NumLevels]Histogram
}

// Histogram counts values: exact for the first TruthValues distinct
// values, in order of first appearance; Other counts the rest.
type Histogram struct {
	Values []ValueCount
	Other  uint64
}

// ValueCount is one value and how often it occurred.
type ValueCount struct{ Value, Count uint64 }

// Total is every occurrence the histogram counted.
func (h *Histogram) Total() uint64 {
	n := h.Other
	for _, v := range h.Values {
		n += v.Count
	}
	return n
}

// Count returns v's exact count and true, or false if v has no entry
// (it never occurred, or only after the histogram was full).
func (h *Histogram) Count(v uint64) (uint64, bool) {
	for _, e := range h.Values {
		if e.Value == v {
			return e.Count, true
		}
	}
	return 0, false
}

// add counts n occurrences of v.
func (h *Histogram) add(v, n uint64) {
	for i := range h.Values {
		if h.Values[i].Value == v {
			h.Values[i].Count += n
			return
		}
	}
	if len(h.Values) < TruthValues {
		h.Values = append(h.Values, ValueCount{v, n})
		return
	}
	h.Other += n
}

// merge adds o's counts to h's: o's Other stays other, its entries are
// added as values.
func (h *Histogram) merge(o *Histogram) {
	for _, e := range o.Values {
		h.add(e.Value, e.Count)
	}
	h.Other += o.Other
}

// NewValueTruth returns an empty collection.
func NewValueTruth() *ValueTruth { return &ValueTruth{PCs: make(map[uint64]*PCValues)} }

func (g *ValueTruth) pc(pc uint64) *PCValues {
	e := g.PCs[pc]
	if e == nil {
		e = &PCValues{}
		g.PCs[pc] = e
	}
	return e
}

// Add adds o's histograms to g's.
func (g *ValueTruth) Add(o *ValueTruth) {
	for pc, v := range o.PCs {
		e := g.pc(pc)
		e.Result.merge(&v.Result)
		e.OperandA.merge(&v.OperandA)
		e.OperandB.merge(&v.OperandB)
		e.Latency.merge(&v.Latency)
		for l := range NumLevels {
			e.Levels[l] += v.Levels[l]
			e.LevelLatency[l].merge(&v.LevelLatency[l])
		}
	}
}

// LevelOf returns the level a load's data came from by the load's own
// events.
func LevelOf(ev EventSet) int {
	switch {
	case !ev.Has(EvDMiss):
		return LevelDcache
	case !ev.Has(EvSMiss):
		return LevelScache
	case !ev.Has(EvBMiss):
		return LevelBcache
	}
	return LevelMemory
}

// operands notes d's register operands from the register files r and f
// before it executes. (Kept out of Run's registers: the common path with
// no value truth tests one pointer.)
func (g *ValueTruth) operands(d *Decoded, r, f *[64]uint64) {
	cl := &classOf[d.Op]
	g.a, g.b = r[d.Ra&63], r[d.Rb&63]
	if cl.FPA {
		g.a = f[d.Ra&63]
	}
	if cl.FPB {
		g.b = f[d.Rb&63]
	}
}

// recordValues adds one execution of d at pc: its operands as operands
// noted them before it, its result from c's registers after it, and, for
// a load, the access t timed.
func (g *ValueTruth) recordValues(c *CPU, t *Timing, d *Decoded, pc uint64) {
	cl := &classOf[d.Op]
	e := g.pc(pc)
	if cl.ReadsA {
		e.OperandA.add(g.a, 1)
	}
	if cl.ReadsB && !d.Lit {
		e.OperandB.add(g.b, 1)
	}
	if cl.Writes != 0 {
		r := d.Rc
		if cl.Writes == 'a' {
			r = d.Ra
		}
		v := c.R[r&63]
		if cl.FPDst {
			v = c.F[r&63]
		}
		e.Result.add(v, 1)
	}
	if t != nil && t.loadTimed && cl.Load {
		t.loadTimed = false
		lv := LevelOf(t.loadEv)
		e.Levels[lv]++
		e.Latency.add(t.loadCycles, 1)
		e.LevelLatency[lv].add(t.loadCycles, 1)
	}
}
