package hwsim

import (
	"fmt"

	"dcpi/hwsim/alpha"
	"dcpi/hwsim/timing"
)

// newTiming returns a CPU's timing model: the 21164 issue model (package
// alpha) over the caches, TLBs, write buffer and branch prediction of
// package timing.
func (m *Machine) newTiming(cpu *alpha.CPU) (*alpha.Timing, *memSystem, error) {
	p := m.cfg.MemoryParams
	p.ClockMHz = int(m.cfg.ClockHz / 1_000_000)
	p.Seed = m.cfg.Seed + uint64(cpu.ID)
	h, err := timing.NewHierarchy(p)
	if err != nil {
		return nil, nil, fmt.Errorf("hwsim: memory system: %w", err)
	}
	ms := &memSystem{h: h}
	return alpha.NewTiming(cpu, ms), ms, nil
}

// memSystem adapts timing.Hierarchy to alpha.MemorySystem, translating its
// events into the performance counters' events.
type memSystem struct{ h *timing.Hierarchy }

// eventMap maps timing's events to counter events.
var eventMap = [...]struct {
	from timing.Events
	to   alpha.Event
}{
	{timing.EvIcacheMiss, alpha.EvIMiss},
	{timing.EvITBMiss, alpha.EvITBMiss},
	{timing.EvDcacheMiss, alpha.EvDMiss},
	{timing.EvDTBMiss, alpha.EvDTBMiss},
	{timing.EvScacheMiss, alpha.EvSMiss},
	{timing.EvBcacheMiss, alpha.EvBMiss},
	{timing.EvWBFull, alpha.EvWBFull},
	{timing.EvBranchMispredict, alpha.EvBranchMP},
	{timing.EvPCMispredict, alpha.EvBranchMP},
}

func convert(ev timing.Events) alpha.EventSet {
	if ev == 0 {
		return 0
	}
	var s alpha.EventSet
	for _, e := range eventMap {
		if ev&e.from != 0 {
			s = s.With(e.to)
		}
	}
	return s
}

func (m *memSystem) Fetch(vpc, ppc, cycle uint64) (uint64, alpha.EventSet) {
	stall, ev := m.h.Fetch(vpc, ppc, cycle)
	return stall, convert(ev)
}

func (m *memSystem) Load(va, pa, cycle uint64) (uint64, uint64, alpha.EventSet) {
	stall, lat, ev := m.h.Load(va, pa, cycle)
	return stall, lat, convert(ev)
}

func (m *memSystem) Store(va, pa, cycle uint64) (uint64, alpha.EventSet) {
	stall, ev := m.h.Store(va, pa, cycle)
	return stall, convert(ev)
}

func (m *memSystem) Barrier(cycle uint64) uint64 { return m.h.Barrier(cycle) }

func (m *memSystem) Branch(pc, target uint64, taken bool) (uint64, alpha.EventSet) {
	pen, ev := m.h.Branch(pc, target, taken)
	return pen, convert(ev)
}

func (m *memSystem) Jump(pc uint64, hint uint16, target uint64) (uint64, alpha.EventSet) {
	pen, ev := m.h.Jump(pc, hint, target)
	return pen, convert(ev)
}

func (m *memSystem) Call(ret uint64) { m.h.Call(ret) }

func (m *memSystem) Return(target uint64) (uint64, alpha.EventSet) {
	pen, ev := m.h.Return(target)
	return pen, convert(ev)
}
