package hwsim

import (
	"fmt"

	"dcpi/hwsim/alpha"
	"dcpi/hwsim/ev6"
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
	ms := &memSystem{h: h, itb: h.Params().ITBMissCycles, dtb: h.Params().DTBMissCycles}
	return alpha.NewTiming(cpu, ms), ms, nil
}

// memSystem adapts timing.Hierarchy to alpha.MemorySystem, translating its
// events into the performance counters' events.
// The Hierarchy charges a TLB miss its fixed cost before anything else
// (ITBMissCycles, DTBMissCycles), so the TLB's part of a stall is that cost
// when the miss event is set.
type memSystem struct {
	h        *timing.Hierarchy
	itb, dtb uint64 // the cycles of a TLB miss
}

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

func (m *memSystem) Fetch(vpc, ppc, cycle uint64) (stall, tlb uint64, ev alpha.EventSet) {
	stall, e := m.h.Fetch(vpc, ppc, cycle)
	if e&timing.EvITBMiss != 0 {
		tlb = m.itb
	}
	return stall, tlb, convert(e)
}

func (m *memSystem) Load(va, pa, cycle uint64) (stall, tlb, latency uint64, ev alpha.EventSet) {
	stall, lat, e := m.h.Load(va, pa, cycle)
	if e&timing.EvDTBMiss != 0 {
		tlb = m.dtb
	}
	return stall, tlb, lat, convert(e)
}

func (m *memSystem) Store(va, pa, cycle uint64) (stall, tlb uint64, ev alpha.EventSet) {
	stall, e := m.h.Store(va, pa, cycle)
	if e&timing.EvDTBMiss != 0 {
		tlb = m.dtb
	}
	return stall, tlb, convert(e)
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

// usesEV6 reports whether model m is timed by the 21264's out-of-order
// core rather than the 21164's issue model: the EV6 generation (IMPLVER
// 2, ev6 and ev67).
func usesEV6(m alpha.Model) bool { return m.Implver >= 2 }

// newCore returns a CPU's 21264 core (package ev6), installed in cpu.
func (m *Machine) newCore(cpu *alpha.CPU) (*ev6.Core, error) {
	p := m.cfg.EV6Params
	if p == (ev6.Params{}) {
		p = ev6.DefaultParams()
	}
	c, err := ev6.NewCore(cpu, p)
	if err != nil {
		return nil, fmt.Errorf("hwsim: 21264 core: %w", err)
	}
	return c, nil
}

// restartTiming tells cpu's timing model, whichever it has, that the next
// instruction issues no earlier than cycle, after time spent outside the
// pipeline (an interrupt, an IPI, an idle wait).
func restartTiming(cpu *alpha.CPU, cycle uint64) {
	switch {
	case cpu.Timing != nil:
		cpu.Timing.Restart(cycle)
	case cpu.Core != nil:
		cpu.Core.Restart(cycle)
	}
}
