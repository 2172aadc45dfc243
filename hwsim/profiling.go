package hwsim

import (
	"fmt"
	"math/rand/v2"
	"sync"

	"dcpi/hwsim/alpha"
)

// Sample is what a performance counter interrupt hands the driver: the PC
// of the oldest instruction in the issue queue when the interrupt was
// delivered, InterruptSkid cycles after the overflow (DCPI sec. 4.1.2).
type Sample struct {
	CPU int
	PID int // 0 when the CPU was idle
	// TID is the thread's (Process.TID); PID for a single-threaded process.
	TID int
	// Incarnation is the process image's (Event.Incarnation); 0 when idle.
	Incarnation uint32
	// ThreadIncarnation names the thread as Incarnation names the
	// process: Incarnation for the process's first thread, the thread's
	// own (EventThread) for any other. It is never reused.
	ThreadIncarnation uint32
	PC                uint64
	Event             alpha.Event
	Kernel            bool   // the PC is vmunix's
	Cycle             uint64 // when the interrupt was delivered

	// The interrupted user context, for a stack walk: set only when the
	// CPU was in user mode (Kernel false, a process current). SP is r30,
	// FP r15 and RA r26 as they were; Mem reads the process's memory.
	// A sample in vmunix carries none: the simulated kernel keeps no
	// frame chain a profiler could follow. T9 is r23, the return address
	// of the millicode routines (__divqu and the like).
	SP, FP, RA, T9 uint64
	Mem            UserMemory
	// Context lets the handler step the interrupted user context (value
	// sampling, values.go); nil when Mem is.
	Context *Interrupted
}

// UserMemory reads a process's memory for an observer: an aligned 8-byte
// load that fails, and never faults the machine, on memory that is not
// mapped (alpha.AddressSpace.Read8).
type UserMemory interface {
	Read8(addr uint64) (v uint64, ok bool)
}

// CounterHandler is the driver's performance counter interrupt handler. It
// runs on the simulation goroutine, between two instructions of the
// sampled CPU and atomically with respect to that CPU's other interrupts
// and IPIs. It returns its own cost in cycles, which the CPU spends before
// it resumes, so profiling perturbs the host as it did real ones.
type CounterHandler interface {
	CounterInterrupt(s Sample) (cycles uint64)
}

// CounterSpec programs one of the three counters. More than one event
// makes it multiplexed, DCPI's "time-multiplexing among different events
// at a very fine grain" (sec. 4.1): the counter moves to its next event at
// every interrupt of a counter counting CYCLES alone (every 60K-64K
// cycles by default), so each event is counted for an equal share of the
// time, as the periods the node registers (simhost.EventsPerSample:
// period times events) assume; each event's partial count is kept across
// its turns, so an event rarer than one period per turn still samples at
// its rate. Without such a CYCLES counter the multiplexed counter moves
// on at its own interrupts instead, and its events' shares follow their
// rates, not time.
type CounterSpec struct {
	Events []alpha.Event
	// Each period is drawn uniformly from [PeriodMin, PeriodMax] at the
	// end of every interrupt, as DCPI wrote a pseudo-random value into the
	// counter (sec. 4.1.1).
	PeriodMin, PeriodMax uint64
}

// ProfileConfig says what the performance counters count.
type ProfileConfig struct {
	Counters []CounterSpec // at most alpha.NumCounters
	// InterruptCycles is the cost of delivering an interrupt and returning
	// from it, beyond the handler's own (the paper measured about 214
	// cycles on a spin loop, sec. 5.2).
	InterruptCycles uint64
}

// DefaultProfile is DCPI's default: CYCLES with periods uniform in
// [60K, 64K] and IMISS, whose period (4K events, +-6%) is an assumption.
func DefaultProfile() ProfileConfig {
	return ProfileConfig{
		Counters: []CounterSpec{
			{Events: []alpha.Event{alpha.EvCycles}, PeriodMin: 60 * 1024, PeriodMax: 64 * 1024},
			{Events: []alpha.Event{alpha.EvIMiss}, PeriodMin: 3840, PeriodMax: 4352},
		},
		InterruptCycles: 214,
	}
}

// MuxProfile is the paper's "mux" configuration: CYCLES on one counter,
// the other events taking turns on a second.
func MuxProfile() ProfileConfig {
	p := DefaultProfile()
	p.Counters[1].Events = []alpha.Event{alpha.EvIMiss, alpha.EvDMiss, alpha.EvBranchMP, alpha.EvDTBMiss}
	return p
}

// Validate reports the first problem with p.
func (p ProfileConfig) Validate() error {
	if len(p.Counters) > alpha.NumCounters {
		return fmt.Errorf("hwsim: %d counters configured; the 21164 has %d", len(p.Counters), alpha.NumCounters)
	}
	for i, c := range p.Counters {
		if len(c.Events) == 0 {
			return fmt.Errorf("hwsim: counter %d: no events", i)
		}
		for _, e := range c.Events {
			if e >= alpha.NumEvents {
				return fmt.Errorf("hwsim: counter %d: unknown event %d", i, e)
			}
		}
		if c.PeriodMin < 2*alpha.InterruptSkid || c.PeriodMax < c.PeriodMin || c.PeriodMax > 1<<20 {
			return fmt.Errorf("hwsim: counter %d: period [%d, %d]: want %d <= min <= max <= %d",
				i, c.PeriodMin, c.PeriodMax, 2*alpha.InterruptSkid, 1<<20)
		}
	}
	return nil
}

// profCPU is one CPU's counter programming.
type profCPU struct {
	next [alpha.NumCounters]int // index into Events of each counter's current event
	// left holds, per counter and event, the count an event had left when
	// its multiplexed counter moved on; 0 means draw a fresh period.
	left [alpha.NumCounters][alpha.NumEvents]uint64
	rand *rand.Rand
}

// timeBase returns the counter that counts CYCLES alone, whose interrupts
// turn the multiplexed counters, or -1.
func (p ProfileConfig) timeBase() int {
	for i, c := range p.Counters {
		if len(c.Events) == 1 && c.Events[0] == alpha.EvCycles {
			return i
		}
	}
	return -1
}

// StartProfiling programs every CPU's counters and installs h as the
// interrupt handler. It must be called from the goroutine that runs the
// machine, or before Run.
func (m *Machine) StartProfiling(p ProfileConfig, h CounterHandler) error {
	if err := p.Validate(); err != nil {
		return err
	}
	m.prof, m.handler = p, h
	for _, c := range m.cpus {
		c.prof = profCPU{rand: rand.New(rand.NewPCG(m.cfg.Seed, uint64(c.id)+0x5eed))}
		for i := range alpha.NumCounters {
			if i < len(p.Counters) {
				m.reloadCounter(c, i)
			} else {
				c.cpu.PMU.SetCounter(i, 0, 0, c.cpu.Cycle)
			}
		}
	}
	return nil
}

// StopProfiling disables every counter.
func (m *Machine) StopProfiling() {
	m.handler = nil
	for _, c := range m.cpus {
		for i := range alpha.NumCounters {
			c.cpu.PMU.SetCounter(i, 0, 0, c.cpu.Cycle)
		}
	}
}

// reloadCounter writes counter i a fresh random period for its current
// event.
func (m *Machine) reloadCounter(c *cpuState, i int) {
	spec := m.prof.Counters[i]
	ev := spec.Events[c.prof.next[i]%len(spec.Events)]
	period := spec.PeriodMin
	if spec.PeriodMax > spec.PeriodMin {
		period += c.prof.rand.Uint64N(spec.PeriodMax - spec.PeriodMin + 1)
	}
	c.cpu.PMU.SetCounter(i, ev, period, c.cpu.Cycle)
}

// turnCounter moves multiplexed counter j of c to its next event, keeping
// what the current event had left to count for its next turn. A counter
// whose interrupt is pending keeps its event until it has been delivered.
func (m *Machine) turnCounter(c *cpuState, j int) {
	left, pending := c.cpu.PMU.Left(j)
	if pending {
		return
	}
	events := m.prof.Counters[j].Events
	c.prof.left[j][events[c.prof.next[j]%len(events)]] = left
	c.prof.next[j]++
	ev := events[c.prof.next[j]%len(events)]
	if n := c.prof.left[j][ev]; n > 0 {
		c.prof.left[j][ev] = 0
		c.cpu.PMU.SetCounter(j, ev, n, c.cpu.Cycle)
		return
	}
	m.reloadCounter(c, j)
}

// counterInterrupt delivers the due counter interrupt of c to the driver.
func (m *Machine) counterInterrupt(c *cpuState) {
	if m.profileMeDue(c) {
		m.profileMeInterrupt(c)
		return
	}
	i, ok := c.cpu.PMU.Pending(^uint64(0))
	if !ok {
		return
	}
	ev, _ := c.cpu.PMU.Counter(i)
	deliver := c.cpu.PMU.OverflowCycle(i) + alpha.InterruptSkid
	start := max(c.cpu.Cycle, deliver)
	s := Sample{CPU: c.id, PC: c.cpu.PC, Event: ev, Kernel: c.cpu.Kernel, Cycle: start}
	if c.cur != nil {
		s.PID, s.TID, s.Incarnation, s.ThreadIncarnation = c.cur.PID, c.cur.TID, c.cur.Incarnation, c.cur.threadIncarnation()
		if !c.cpu.Kernel && c.cpu.AS != nil {
			s.SP, s.FP, s.RA, s.T9, s.Mem = c.cpu.R[30], c.cpu.R[15], c.cpu.R[26], c.cpu.R[23], c.cpu.AS
			c.interrupted = Interrupted{m: m, c: c, start: start, live: true}
			s.Context = &c.interrupted
		}
	}
	c.Interrupts[ev]++
	if m.cfg.SkidTruth {
		m.noteSkid(c, i, &s)
	}
	cost := m.prof.InterruptCycles
	if m.handler != nil {
		cost += m.handler.CounterInterrupt(s)
	}
	var stepped uint64
	if x := s.Context; x != nil {
		x.live = false
		stepped = x.stepped
	}
	// Steps have already moved the clock from start to start+stepped.
	m.spend(c, start+stepped+cost-c.cpu.Cycle, &c.Profiling)
	base := m.prof.timeBase()
	if base < 0 && len(m.prof.Counters[i].Events) > 1 {
		c.prof.next[i]++ // no time base: turn at the counter's own interrupts
	}
	m.reloadCounter(c, i)
	if i == base {
		for j, spec := range m.prof.Counters {
			if len(spec.Events) > 1 {
				m.turnCounter(c, j)
			}
		}
	}
	restartTiming(c.cpu, c.cpu.Cycle)
}

// spend advances c's clock by cycles spent outside instruction execution,
// counting them in bucket and, when a process is current, as its kernel
// time.
func (m *Machine) spend(c *cpuState, cycles uint64, bucket *uint64) {
	c.cpu.Cycle += cycles
	*bucket += cycles
	if p := c.cur; p != nil {
		p.Cycles += cycles
		p.KernelCycles += cycles
	}
}

// IPIHandler runs on the target CPU of an inter-processor interrupt and
// returns its cost in cycles.
type IPIHandler func(cpu int) (cycles uint64)

type ipiRequest struct {
	cpu int
	fn  IPIHandler
}

// ipiQueue holds IPIs sent from other goroutines until the simulation
// picks them up at the next quantum boundary.
type ipiQueue struct {
	mu  sync.Mutex
	req []ipiRequest
}

// SendIPI asks CPU cpu to run fn between two of its instructions, at
// interrupt level, atomically with respect to its counter interrupts
// (DCPI's flush protocol, sec. 4.2.3, depends on this). It is safe to call
// from any goroutine; the IPI is delivered when the target CPU next runs
// after the current quantum, or in the current one if called from the
// simulation goroutine before the target's turn.
func (m *Machine) SendIPI(cpu int, fn IPIHandler) error {
	if cpu < 0 || cpu >= len(m.cpus) {
		return fmt.Errorf("hwsim: IPI to cpu %d of %d", cpu, len(m.cpus))
	}
	m.ipis.mu.Lock()
	m.ipis.req = append(m.ipis.req, ipiRequest{cpu: cpu, fn: fn})
	m.ipis.mu.Unlock()
	m.ipiPending.Store(true)
	return nil
}

// SetIPISync makes the machine call sync, on its goroutine, at the start
// of each round before it takes the IPIs queued from other goroutines. An
// agent whose goroutine sends IPIs uses it to wait until every IPI it
// means to send by then is queued (node.Node.Settle), so that each lands
// at a simulated time that does not depend on how the real machine
// schedules goroutines: a run stays a function of its configuration and
// seeds. Call it before running the machine.
func (m *Machine) SetIPISync(sync func()) { m.beforeIPIs = sync }

// takeIPIs moves queued IPIs to their CPUs.
func (m *Machine) takeIPIs() {
	if !m.ipiPending.Load() {
		return
	}
	m.ipis.mu.Lock()
	req := m.ipis.req
	m.ipis.req = nil
	m.ipiPending.Store(false)
	m.ipis.mu.Unlock()
	for _, r := range req {
		c := m.cpus[r.cpu]
		c.ipis = append(c.ipis, r.fn)
		c.halted = false
	}
}

// runIPIs runs c's pending IPI handlers.
func (m *Machine) runIPIs(c *cpuState) {
	for len(c.ipis) > 0 {
		fn := c.ipis[0]
		c.ipis = c.ipis[1:]
		c.IPIs++
		m.spend(c, m.prof.InterruptCycles+fn(c.id), &c.Profiling)
		restartTiming(c.cpu, c.cpu.Cycle)
	}
}
