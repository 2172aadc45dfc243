package node

import (
	"dcpi/internal/testrand"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// model is a plain re-statement of the driver's specification, written
// without the driver's packing, cost tables or buffer indices: a table of
// Entry buckets, costs from CostModel's formulas, and the overflow buffer
// pair as counts of buffers in each state. TestDriverMatchesModel runs
// random operation sequences against both and compares every result.
type model struct {
	cfg     DriverConfig
	satAt   uint32
	buckets [][]Entry // Count 0: empty
	rr      int
	flush   bool

	// The buffer pair: the active buffer (if any) and how many buffers
	// are complete, handed, taken (copied, not released) or free.
	active    []Entry
	hasActive bool
	complete  [][]Entry
	handed    [][]Entry
	taken     int
	free      int

	st DriverStats
}

func newModel(cfg DriverConfig, satAt uint32) *model {
	m := &model{cfg: cfg, satAt: satAt, buckets: make([][]Entry, cfg.TableEntries/cfg.Assoc), hasActive: true, free: 1}
	for i := range m.buckets {
		m.buckets[i] = make([]Entry, cfg.Assoc)
	}
	return m
}

func (m *model) lookupCost(probes int) uint64 {
	c := m.cfg.Cost
	perLine, probe := 4, c.Probe
	if m.cfg.Assoc == 5 || m.cfg.Assoc == 6 {
		perLine, probe = 6, c.Probe+c.PackedProbe
	}
	lines := (probes + perLine - 1) / perLine
	return c.Base + probe*uint64(probes) + c.ExtraLine*uint64(lines-1)
}

// push appends e to the active buffer; ok false if there is none.
func (m *model) push(e Entry) (ok, full bool) {
	if !m.hasActive {
		return false, false
	}
	m.active = append(m.active, e)
	if len(m.active) < m.cfg.BufferEntries {
		return true, false
	}
	m.completeActive()
	return true, true
}

func (m *model) completeActive() {
	m.complete = append(m.complete, m.active)
	m.active, m.hasActive = nil, false
	m.st.BuffersCompleted++
	if m.free > 0 {
		m.free--
		m.hasActive = true
	}
}

func (m *model) sample(pid uint32, pc uint64, ev uint8) (uint64, bool) {
	c := m.cfg.Cost
	stf := m.cfg.Policy == SwapToFront
	key := Entry{PID: pid, PC: pc, Event: ev}
	if m.flush {
		m.st.DirectWrites++
		key.Count = 1
		ok, full := m.push(key)
		cost := c.Direct
		if !ok {
			m.st.Dropped++
		} else {
			m.st.EntriesOut++
			m.st.SamplesOut++
		}
		if full {
			cost += c.BufferSwitch
		}
		m.st.CyclesDirect += cost
		return cost, full
	}
	b := m.buckets[bucketIndex(hashKey(pid, pc, ev), uint64(len(m.buckets)))]
	for j := range b {
		if b[j].Count == 0 || b[j].PID != pid || b[j].PC != pc || b[j].Event != ev {
			continue
		}
		m.st.Hits++
		cost, full := m.lookupCost(j+1), false
		if stf && j > 0 {
			cost += 2 * c.Move
		}
		if b[j].Count >= m.satAt {
			var ok bool
			if ok, full = m.push(b[j]); ok {
				m.st.Saturations++
				m.st.EntriesOut++
				m.st.SamplesOut += uint64(b[j].Count)
				b[j].Count = 1
				cost += c.OverflowWrite
				if full {
					cost += c.BufferSwitch
				}
			} else {
				m.st.Dropped++
			}
		} else {
			b[j].Count++
		}
		if stf {
			b[0], b[j] = b[j], b[0]
		}
		m.st.CyclesHit += cost
		return cost, full
	}
	m.st.Misses++
	key.Count = 1
	empty := slices.IndexFunc(b, func(e Entry) bool { return e.Count == 0 })
	if empty < 0 && !m.hasActive {
		m.st.Dropped++
		cost := m.lookupCost(m.cfg.Assoc)
		m.st.CyclesMiss += cost
		return cost, false
	}
	cost := m.lookupCost(m.cfg.Assoc) + c.Replace
	var victim Entry
	switch {
	case stf && empty >= 0:
		copy(b[1:empty+1], b[:empty])
		b[0] = key
		cost += c.Move * uint64(empty)
	case stf:
		victim = b[len(b)-1]
		copy(b[1:], b[:len(b)-1])
		b[0] = key
		cost += c.Move * uint64(len(b)-1)
	case empty >= 0:
		b[empty] = key
	default:
		victim, b[m.rr] = b[m.rr], key
		m.rr = (m.rr + 1) % len(b)
	}
	if victim.Count == 0 {
		m.st.Fills++
		m.st.CyclesMiss += cost
		return cost, false
	}
	_, full := m.push(victim)
	m.st.Evictions++
	m.st.EntriesOut++
	m.st.SamplesOut += uint64(victim.Count)
	cost += c.OverflowWrite
	if full {
		cost += c.BufferSwitch
	}
	m.st.CyclesMiss += cost
	return cost, full
}

func (m *model) drainTable() []Entry {
	var out []Entry
	for _, b := range m.buckets {
		for j := range b {
			if b[j].Count != 0 {
				out = append(out, b[j])
				b[j] = Entry{}
			}
		}
	}
	return out
}

func (m *model) handOff(seal bool) int {
	if seal && m.hasActive && len(m.active) > 0 {
		m.completeActive()
	}
	m.handed = append(m.handed, m.complete...)
	m.complete = nil
	return len(m.handed)
}

func (m *model) takeFull() ([]Entry, bool) {
	if len(m.handed) == 0 {
		return nil, false
	}
	out := m.handed[0]
	m.handed = m.handed[1:]
	m.taken++
	return out, true
}

func (m *model) release() int {
	n := m.taken
	m.free += n
	m.taken = 0
	if !m.hasActive && m.free > 0 {
		m.free--
		m.hasActive = true
	}
	return n
}

func (m *model) stats() DriverStats {
	s := m.st
	s.Samples = s.Hits + s.Misses + s.DirectWrites
	return s
}

// TestDriverMatchesModel runs random sequences of samples and flush
// operations (in the order the protocol allows) against the driver and the
// model, over many configurations, and compares every returned value, every
// entry the daemon receives, and the counters. The seed is logged, and
// -seed N (internal/testrand) replays one.
func TestDriverMatchesModel(t *testing.T) {
	seed := testrand.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	var total DriverStats
	runs := 300
	if testing.Short() {
		runs = 60
	}
	for run := range runs {
		cfg := DefaultDriverConfig()
		cfg.Assoc = []int{1, 2, 4, 4, 6, 8}[rng.IntN(6)]
		cfg.Policy = Policy(rng.IntN(2))
		cfg.TableEntries = cfg.Assoc * (1 + rng.IntN(16))
		cfg.BufferEntries = 1 + rng.IntN(12)
		satAt := uint32(CountMax)
		if rng.IntN(3) == 0 {
			satAt = uint32(2 + rng.IntN(5))
		}
		name := fmt.Sprintf("run %d (%d-way %v, %d entries, buffers %d, saturation %d)",
			run, cfg.Assoc, cfg.Policy, cfg.TableEntries, cfg.BufferEntries, satAt)
		st, err := compareWithModel(rng, cfg, satAt, 2000)
		if err != nil {
			t.Fatalf("seed %d: %s: %v", seed, name, err)
		}
		total.Add(st)
	}
	// The sequences must have reached every path.
	t.Logf("over all runs: %+v", total)
	for name, n := range map[string]uint64{"hits": total.Hits, "fills": total.Fills, "evictions": total.Evictions,
		"saturations": total.Saturations, "direct writes": total.DirectWrites, "drops": total.Dropped,
		"completed buffers": total.BuffersCompleted} {
		if n == 0 {
			t.Errorf("no %s in any run", name)
		}
	}
}

func compareWithModel(rng *rand.Rand, cfg DriverConfig, satAt uint32, ops int) (DriverStats, error) {
	d, err := NewDriver(cfg)
	if err != nil {
		return DriverStats{}, err
	}
	d.satAt = uint64(satAt)
	m := newModel(cfg, satAt)
	nKeys := 1 + rng.IntN(3*cfg.TableEntries)
	// A few hot keys and a tail, so buckets see hits, misses and
	// saturations.
	key := func() (uint32, uint64, uint8) {
		k := rng.IntN(nKeys)
		if rng.IntN(2) == 0 {
			k %= 1 + nKeys/8
		}
		return uint32(1 + k%3), 0x120000000 + uint64(k/3)*4, uint8(k % 2 * 2)
	}
	var delivered uint64
	flushing := false
	for op := range ops {
		switch r := rng.IntN(100); {
		case r < 85:
			pid, pc, ev := key()
			c1, f1 := d.Sample(pid, pc, ev)
			c2, f2 := m.sample(pid, pc, ev)
			if c1 != c2 || f1 != f2 {
				return DriverStats{}, fmt.Errorf("op %d: Sample(%d, %#x, %d) = (%d, %v), model (%d, %v)", op, pid, pc, ev, c1, f1, c2, f2)
			}
		case r < 86 && !flushing:
			d.BeginFlush()
			m.flush, flushing = true, true
		case r < 89 && flushing:
			got := d.DrainTable(nil)
			want := m.drainTable()
			if !reflect.DeepEqual(got, want) {
				return DriverStats{}, fmt.Errorf("op %d: DrainTable = %v, model %v", op, got, want)
			}
			for _, e := range got {
				delivered += uint64(e.Count)
			}
		case r < 94 && flushing:
			d.EndFlush()
			m.flush, flushing = false, false
		case r < 97:
			seal := rng.IntN(2) == 0
			if n1, n2 := d.HandOff(seal), m.handOff(seal); n1 != n2 {
				return DriverStats{}, fmt.Errorf("op %d: HandOff(%v) = %d, model %d", op, seal, n1, n2)
			}
		case r < 98:
			got, ok1 := d.TakeFull(nil)
			want, ok2 := m.takeFull()
			if ok1 != ok2 || !reflect.DeepEqual(got, want) {
				return DriverStats{}, fmt.Errorf("op %d: TakeFull = %v %v, model %v %v", op, got, ok1, want, ok2)
			}
			for _, e := range got {
				delivered += uint64(e.Count)
			}
		default:
			if n1, n2 := d.Release(), m.release(); n1 != n2 {
				return DriverStats{}, fmt.Errorf("op %d: Release = %d, model %d", op, n1, n2)
			}
		}
		if got, want := d.Stats(), m.stats(); got != want {
			return DriverStats{}, fmt.Errorf("op %d: stats\n got %+v\nwant %+v", op, got, want)
		}
		// Conservation, at every step.
		_, inTable, _, inBuffers := d.Pending()
		st := d.Stats()
		if st.Samples != delivered+inTable+inBuffers+st.Dropped {
			return DriverStats{}, fmt.Errorf("op %d: %d samples, but delivered %d + table %d + buffers %d + dropped %d",
				op, st.Samples, delivered, inTable, inBuffers, st.Dropped)
		}
		if d.Delivered() != delivered {
			return DriverStats{}, fmt.Errorf("op %d: Delivered() = %d, counted %d", op, d.Delivered(), delivered)
		}
	}
	return d.Stats(), nil
}
