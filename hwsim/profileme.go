package hwsim

import (
	"fmt"

	"dcpi/hwsim/alpha"
	"dcpi/hwsim/ev6"
)

// ProfileMe (the ProfileMe paper, sec. 4): instruction sampling on the
// simulated 21164 and 21264. The hardware is in package alpha
// (alpha.ProfileMe, which says what the counter counts and what a record
// holds); this file programs it, feeds it the 21264 core's fetched
// instructions (meObserver; the 21164's issue model feeds it in package
// alpha), tags records with the process, and delivers its interrupt to
// the driver, charging the interrupt's cost to the CPU as counter
// interrupts are.

// ProfileMeConfig programs every CPU's ProfileMe hardware.
type ProfileMeConfig struct {
	// One instruction is tagged every IntervalMin to IntervalMax fetched
	// instructions, uniformly (the paper's S is their mean).
	IntervalMin, IntervalMax uint64
	// Copies is the number of profile register copies: one interrupt
	// delivers that many samples (sec. 4.3).
	Copies int
	// Paired turns on paired sampling (sec. 4.2): the major interval
	// above chooses the first instruction of a pair, a minor interval
	// uniform in [1, PairWindow] after it the second; both records are
	// delivered together, in consecutive register copies.
	Paired bool
	// PairWindow is W, the largest intra-pair fetch distance; 0 takes the
	// model's default, DefaultPairWindow. On the 21264 it must cover the
	// core's in-flight window (80 instructions), so that every pair of
	// instructions that can be in flight together can be sampled.
	PairWindow uint32
	// CountFetchSlots makes the counter count fetch opportunities (four a
	// cycle) instead of fetched instructions (sec. 4.1.1): an opportunity
	// may hold a predicted-path instruction, a wrong-path one or nothing,
	// and a tag on an empty one is spent without a record (MeStats.Empty).
	// On the 21264 the opportunities are its fetch cycles' four slots; on
	// the 21164, whose model fetches only the correct path and has no
	// fetch stage of its own, they are its issue cycles' four slots, so an
	// empty one is a stall or a dual-issue slot left unused.
	CountFetchSlots bool
}

// DefaultPairWindow is the pair window W used when PairWindow is 0: 128
// on the 21264 core (at least its 80-instruction in-flight window), 16 on
// the 21164 (whose in-order pipeline holds far fewer instructions at
// once). outOfOrder says which: the machine runs the 21264 core when the
// model is an EV6 and timing is on.
func DefaultPairWindow(outOfOrder bool) uint32 {
	if outOfOrder {
		return 128
	}
	return 16
}

// ev6InFlight is the 21264's in-flight window (HRM §2.1): the least pair
// window that can sample every pair of instructions in flight together.
const ev6InFlight = 80

// DefaultProfileMe tags one instruction in 3840 to 4352 fetched (S =
// 4096, about the paper's 10^3-10^5 range) and buffers 4 samples an
// interrupt.
func DefaultProfileMe() ProfileMeConfig {
	return ProfileMeConfig{IntervalMin: 3840, IntervalMax: 4352, Copies: 4}
}

// MeanInterval is S, the mean fetched instructions per sample.
func (p ProfileMeConfig) MeanInterval() float64 {
	return float64(p.IntervalMin+p.IntervalMax) / 2
}

// Validate reports the first problem with p.
func (p ProfileMeConfig) Validate() error {
	if p.IntervalMin < 1 || p.IntervalMax < p.IntervalMin || p.IntervalMax > 1<<32 {
		return fmt.Errorf("hwsim: ProfileMe interval [%d, %d]: want 1 <= min <= max <= %d", p.IntervalMin, p.IntervalMax, uint64(1)<<32)
	}
	if p.Copies < 1 || p.Copies > 64 {
		return fmt.Errorf("hwsim: ProfileMe register copies %d: want 1 to 64", p.Copies)
	}
	if p.Paired {
		if p.Copies < 2 {
			return fmt.Errorf("hwsim: paired ProfileMe with %d register copy: a pair needs 2", p.Copies)
		}
		if p.PairWindow != 0 && uint64(p.PairWindow) >= p.IntervalMin {
			return fmt.Errorf("hwsim: ProfileMe pair window %d: want it below the major interval's minimum %d", p.PairWindow, p.IntervalMin)
		}
	} else if p.PairWindow != 0 {
		return fmt.Errorf("hwsim: ProfileMe pair window %d without paired sampling", p.PairWindow)
	}
	return nil
}

// validateFor adds the checks that depend on the core: outOfOrder for the
// 21264's.
func (p ProfileMeConfig) validateFor(outOfOrder bool) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if !p.Paired {
		return nil
	}
	w := p.window(outOfOrder)
	if uint64(w) >= p.IntervalMin {
		return fmt.Errorf("hwsim: ProfileMe pair window %d: want it below the major interval's minimum %d", w, p.IntervalMin)
	}
	if outOfOrder && w < ev6InFlight {
		return fmt.Errorf("hwsim: ProfileMe pair window %d on the 21264 core: want at least its in-flight window, %d", w, ev6InFlight)
	}
	return nil
}

// window is W on the core outOfOrder says.
func (p ProfileMeConfig) window(outOfOrder bool) uint32 {
	if p.PairWindow != 0 {
		return p.PairWindow
	}
	return DefaultPairWindow(outOfOrder)
}

// MeSample is one ProfileMe record as the driver receives it.
type MeSample struct {
	alpha.MeRecord
	CPU int
	// PID and Incarnation are the process the instruction ran in (0: the
	// CPU was idle), decoded from the record's context.
	PID         int
	Incarnation uint32
}

// ProfileMeHandler is the driver's ProfileMe interrupt handler. It runs
// on the simulation goroutine like CounterHandler, receives the buffered
// samples (the slice is reused after it returns) and the records lost
// since the last interrupt because every register copy was full, and
// returns its cost in cycles.
type ProfileMeHandler interface {
	ProfileMeInterrupt(cpu int, samples []MeSample, lost uint64) (cycles uint64)
}

// MeStats is one CPU's ProfileMe hardware counts: Tags = Delivered + Lost
// + Buffered, in records (a pair's tags count two). Empty is the fetch
// opportunities chosen that held no instruction (CountFetchSlots): no
// record, and not in Tags. LostPairs is the pairs among Lost, lost whole.
type MeStats struct {
	Tags, Delivered, Lost uint64
	Buffered              int
	Interrupts            uint64
	Empty, LostPairs      uint64
}

// meCPU is what the simulator keeps of a CPU's ProfileMe.
type meCPU struct {
	recs      []alpha.MeRecord
	samples   []MeSample
	lostSeen  uint64
	delivered uint64
	irqs      uint64
}

// StartProfileMe programs every CPU's ProfileMe hardware and installs h.
// Call it from the goroutine that runs the machine, or before Run.
func (m *Machine) StartProfileMe(p ProfileMeConfig, h ProfileMeHandler) error {
	if err := p.validateFor(m.cfg.Timing && usesEV6(m.cfg.Model)); err != nil {
		return err
	}
	if h == nil {
		return fmt.Errorf("hwsim: ProfileMe without a handler")
	}
	outOfOrder := m.cfg.Timing && usesEV6(m.cfg.Model)
	for _, c := range m.cpus {
		u, err := alpha.NewProfileMe(p.IntervalMin, p.IntervalMax, p.Copies, m.cfg.Seed^uint64(c.id+1)*0x2545f4914f6cdd1d)
		if err != nil {
			return err
		}
		if p.Paired {
			if err := u.SetPaired(uint64(p.window(outOfOrder))); err != nil {
				return err
			}
		}
		u.SetCountSlots(p.CountFetchSlots)
		c.cpu.Me = u
		c.me = meCPU{}
		if c.core != nil {
			c.core.SetObserver(meObserver(c.cpu, u))
		}
	}
	m.meHandler = h
	return nil
}

// meObserver returns the 21264 core's observer for cpu's ProfileMe unit
// u: every instruction the core fetches, wrong path included, in fetch
// order, goes by the fetched-instruction counter, and the tagged one's
// Record fills the profile registers. The core delivers an instruction
// once it has retired or been squashed, so its record is complete at once.
func meObserver(cpu *alpha.CPU, u *alpha.ProfileMe) func(ev6.Record) {
	return func(r ev6.Record) {
		tagged, role, dist := u.Fetch(r.Fetch)
		if !tagged {
			return
		}
		rec := alpha.MeRecord{Context: u.Context, Kernel: cpu.Kernel, PC: r.PC, Addr: r.Addr,
			Events: alpha.MeFromEvents(r.Events), History: r.History, Pair: role, PairDistance: dist,
			Fetched: r.Fetch, Finished: r.Retire, Done: max(r.Retire, r.Done)}
		if r.Retired {
			rec.Events |= alpha.MeRetired
		} else {
			rec.Abort = alpha.TrapSquash
		}
		if r.Taken {
			rec.Events |= alpha.MeTaken
		}
		if r.Mispredicted {
			rec.Events |= alpha.MeMispredict
		}
		if r.Load && r.Issued {
			rec.LoadLatency = clamp32(r.Done - r.Issue)
		}
		st := &rec.Stages
		if r.Mapped {
			st[alpha.MeFetchToMap] = clamp32(r.Map - r.Fetch)
		}
		if r.Issued {
			st[alpha.MeMapToReady] = clamp32(r.Ready - min(r.Ready, r.Map))
			st[alpha.MeReadyToIssue] = clamp32(r.Issue - min(r.Issue, r.Ready))
		}
		if r.Retired {
			st[alpha.MeIssueToRetReady] = clamp32(r.RetReady - r.Issue)
			st[alpha.MeRetReadyToRetire] = clamp32(r.Retire - r.RetReady)
		}
		u.Complete(&rec, &cpu.PMU)
	}
}

func clamp32(v uint64) uint32 { return uint32(min(v, 1<<32-1)) }

// meContext is the context register's value for p: the PID and the
// incarnation, so a record names the image it ran under.
func meContext(p *Process) uint64 {
	if p == nil {
		return 0
	}
	return uint64(p.PID)<<32 | uint64(p.Incarnation)
}

// profileMeDue reports whether c's ProfileMe interrupt is due no later
// than its earliest counter interrupt.
func (m *Machine) profileMeDue(c *cpuState) bool {
	u := c.cpu.Me
	if u == nil || u.Due() == 0 {
		return false
	}
	i, ok := c.cpu.PMU.Pending(^uint64(0))
	return !ok || u.Due() <= c.cpu.PMU.OverflowCycle(i)+alpha.InterruptSkid
}

// profileMeInterrupt delivers c's buffered ProfileMe samples to the
// handler.
func (m *Machine) profileMeInterrupt(c *cpuState) {
	start := max(c.cpu.Cycle, c.cpu.Me.Due())
	c.me.irqs++
	cost := m.prof.InterruptCycles + m.deliverProfileMe(c)
	m.spend(c, start+cost-c.cpu.Cycle, &c.Profiling)
	if c.cpu.Timing != nil {
		c.cpu.Timing.Restart(c.cpu.Cycle)
	}
}

// deliverProfileMe hands c's buffered records to the handler and returns
// the handler's cost.
func (m *Machine) deliverProfileMe(c *cpuState) uint64 {
	u := c.cpu.Me
	c.me.recs = u.Take(c.me.recs[:0], &c.cpu.PMU)
	lost := u.Lost - c.me.lostSeen
	c.me.lostSeen = u.Lost
	if len(c.me.recs) == 0 && lost == 0 {
		return 0
	}
	c.me.samples = c.me.samples[:0]
	for _, r := range c.me.recs {
		c.me.samples = append(c.me.samples, MeSample{MeRecord: r, CPU: c.id, PID: int(r.Context >> 32), Incarnation: uint32(r.Context)})
	}
	c.me.delivered += uint64(len(c.me.recs))
	return m.meHandler.ProfileMeInterrupt(c.id, c.me.samples, lost)
}

// StopProfileMe stops every CPU's ProfileMe counter, as StopProfiling
// stops the performance counters: nothing is tagged after it, and what
// the register copies hold waits for FlushProfileMe (or an interrupt
// already due). Call it from the goroutine that runs the machine.
func (m *Machine) StopProfileMe() {
	for _, c := range m.cpus {
		if c.cpu.Me != nil {
			c.cpu.Me.Stop()
		}
	}
}

// FlushProfileMe delivers every CPU's partly filled register copies, as
// the OS reads them when profiling stops, so no sample generated is left
// in the hardware. Its handler cost is not charged: the run is over. Call
// it on the goroutine that runs the machine, with the machine stopped.
func (m *Machine) FlushProfileMe() {
	if m.meHandler == nil {
		return
	}
	for _, c := range m.cpus {
		// A pair whose second is not tagged yet is lost whole: the
		// register copies hold no partner for it.
		c.cpu.Me.AbandonPair()
		m.deliverProfileMe(c)
	}
}

// ProfileMeStats returns each CPU's ProfileMe counts (nil when off).
func (m *Machine) ProfileMeStats() []MeStats {
	if m.meHandler == nil {
		return nil
	}
	out := make([]MeStats, len(m.cpus))
	for i, c := range m.cpus {
		u := c.cpu.Me
		out[i] = MeStats{Tags: u.Tags, Delivered: c.me.delivered, Lost: u.Lost, Buffered: u.Buffered(), Interrupts: c.me.irqs,
			Empty: u.Empty, LostPairs: u.LostPairs}
	}
	return out
}
