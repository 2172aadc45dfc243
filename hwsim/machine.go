package hwsim

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"sync/atomic"

	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
	"dcpi/hwsim/ev6"
)

// Machine is one simulated host: CPUs, processes and the simulated kernel
// that runs them. A Machine is driven by one goroutine; its CPUs take turns
// in fixed order, one quantum each, so a run is a function of the
// configuration, the seed and the inputs alone.
type Machine struct {
	cfg  Config
	cpus []*cpuState

	procs   map[int]*Process // every task (process or thread) not yet reaped, by TID
	lastPID int
	lastInc uint32 // the last process incarnation handed out
	now     uint64 // machine time at the last quantum boundary, in cycles

	sinks     []EventSink
	images    map[string]*elfimage.Image // parsed programs, by path
	templates map[string]*loadedImage    // loaded programs, by path
	vfs       *vfs                       // Config.Files over Config.Sysroot (vfs.go)
	rand      *rand.ChaCha8

	frames     alpha.Frames // physical page frames of every address space
	kern       *kernel
	tickCycles uint64

	truth    map[string]*alpha.GroundTruth // by image path, with Config.GroundTruth
	stages   map[string]*ev6.StageTruth    // the same for ev6 cores' stage truth
	values   map[string]*alpha.ValueTruth  // value sampling's, by image path
	observer TransferObserver              // SetTransferObserver (oracle.go)

	prof       ProfileConfig
	handler    CounterHandler
	meHandler  ProfileMeHandler // nil: ProfileMe off (profileme.go)
	ipis       ipiQueue
	ipiPending atomic.Bool
	// beforeIPIs runs before each round takes queued IPIs (SetIPISync).
	beforeIPIs func()
	faults     []Fault
	unimpl     []Unimplemented // unimplemented.go
	stdout     io.Writer
	stderr     io.Writer
	stdin      io.Reader
}

// cpuState is a CPU and what the simulator keeps per CPU.
type cpuState struct {
	id   int
	cpu  *alpha.CPU
	cur  *Process // the process the CPU runs, in user mode or in vmunix
	runq []*Process

	interrupted Interrupted // handed to the counter interrupt handler (values.go)

	// The CPU's clock is cpu.Cycle; at a quantum boundary every CPU's
	// clock has reached the machine's.
	nextTick    uint64 // cycle of the next clock interrupt
	tickPending bool   // a tick deferred until vmunix returns to user mode
	halted      bool   // waiting in wtint
	loaded      *Process

	prof       profCPU
	me         meCPU
	ipis       []IPIHandler
	seenEvents [alpha.NumEvents]uint64 // PMU totals already charged
	skids      []Skid                  // with Config.SkidTruth (skid.go)
	mem        *memSystem              // nil without the timing model
	core       *ev6.Core               // the 21264 core instead, for ev6 and ev67 with timing

	Retired                          uint64
	User, Kernel, Idle               uint64 // cycles
	Profiling                        uint64 // cycles in counter interrupts and IPIs
	ContextSwitches, Syscalls, Ticks uint64
	Interrupts                       [alpha.NumEvents]uint64 // counter interrupts, by event
	Interpreted                      uint64                  // instructions counter interrupt handlers stepped (Interrupted.Step)
	IPIs                             uint64
}

// Fault records a process killed by a fault the program did not expect to
// survive: an unimplemented instruction, an illegal one, a bad address.
type Fault struct {
	PID  int
	Path string
	Trap alpha.Trap
}

func (f Fault) String() string { return fmt.Sprintf("pid %d (%s): %s", f.PID, f.Path, f.Trap) }

// New returns a machine with no processes.
func New(cfg Config) (*Machine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var seed [32]byte
	for i := 0; i < 8; i++ {
		seed[i] = byte(cfg.Seed >> (8 * i))
	}
	m := &Machine{
		cfg:       cfg,
		procs:     make(map[int]*Process),
		images:    make(map[string]*elfimage.Image),
		templates: make(map[string]*loadedImage),
		rand:      rand.NewChaCha8(seed),
		stdout:    orDiscard(cfg.Stdout),
		stderr:    orDiscard(cfg.Stderr),
		stdin:     cfg.Stdin,
	}
	if cfg.CPUs > maxKernelCPUs {
		return nil, fmt.Errorf("hwsim: %d CPUs: vmunix supports %d", cfg.CPUs, maxKernelCPUs)
	}
	k, err := loadKernel(&m.frames)
	if err != nil {
		return nil, err
	}
	m.kern = k
	if cfg.GroundTruth {
		m.truth = make(map[string]*alpha.GroundTruth)
		m.stages = make(map[string]*ev6.StageTruth)
		m.values = make(map[string]*alpha.ValueTruth)
	}
	m.tickCycles = cfg.ClockHz / HZ
	k.putU64(k.timeslice, max(1, cfg.TimeSlice/m.tickCycles))
	for i := 0; i < cfg.CPUs; i++ {
		c := &cpuState{id: i, cpu: alpha.NewCPU(cfg.Model), nextTick: m.tickCycles}
		c.cpu.ID, c.cpu.KAS = i, k.as
		c.cpu.PICEvents = cfg.picEvents()
		switch {
		case cfg.Timing && usesEV6(cfg.Model):
			if c.core, err = m.newCore(c.cpu); err != nil {
				return nil, err
			}
		case cfg.Timing:
			if _, c.mem, err = m.newTiming(c.cpu); err != nil {
				return nil, err
			}
		}
		m.cpus = append(m.cpus, c)
		m.enterIdle(c)
	}
	return m, nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// Config returns the machine's configuration.
func (m *Machine) Config() Config { return m.cfg }

// Subscribe adds a receiver of process events. It first receives, at
// once, what the machine mapped when it booted: vmunix, an EventMap of PID
// 0 and incarnation 0 at cycle 0 whose range, from alpha.KernelBase up, is
// mapped in every process. A profiler thus learns the kernel image from
// the loader like any other image, without parsing it.
func (m *Machine) Subscribe(s EventSink) {
	s.ProcessEvent(m.kern.bootMap)
	m.sinks = append(m.sinks, s)
}

func (m *Machine) emit(e Event) {
	for _, s := range m.sinks {
		s.ProcessEvent(e)
	}
}

// Now returns machine time in cycles.
func (m *Machine) Now() uint64 { return m.now }

// Seconds converts cycles to simulated seconds.
func (m *Machine) Seconds(cycles uint64) float64 { return float64(cycles) / float64(m.cfg.ClockHz) }

// Faults returns the processes killed by faults so far.
func (m *Machine) Faults() []Fault { return m.faults }

// ErrNoProgram is returned by Spawn for a path the file system lacks.
var ErrNoProgram = errors.New("no such program")

// Spawn starts a new top-level process running path (looked up in
// Config.Files) with argv and envp, placed on the least loaded CPU. argv[0]
// defaults to path.
func (m *Machine) Spawn(path string, argv, envp []string) (*Process, error) {
	im, err := m.image(path)
	if err != nil {
		return nil, err
	}
	if len(argv) == 0 {
		argv = []string{path}
	}
	pid, ok := m.allocPID()
	if !ok {
		return nil, fmt.Errorf("spawn %s: no free PID", path)
	}
	p := &Process{PID: pid, TID: pid, rlimitStack: stackMax, StartCycle: m.now}
	c := m.leastLoaded()
	if err := m.exec(p, c, path, im, argv, envp); err != nil {
		return nil, err
	}
	m.procs[pid] = p
	m.enqueue(c, p)
	return p, nil
}

// image returns the parsed program at path.
func (m *Machine) image(path string) (*elfimage.Image, error) {
	if im, ok := m.images[path]; ok {
		return im, nil
	}
	data, ok := m.cfg.Files[path]
	if !ok {
		return nil, fmt.Errorf("%s: %w", path, ErrNoProgram)
	}
	im, err := elfimage.Parse(data, path)
	if err != nil {
		return nil, err
	}
	m.images[path] = im
	return im, nil
}

// allocPID returns the next free PID after the last one given, wrapping at
// PIDMax to 300 as Linux does (PIDs below 300 are for daemons).
func (m *Machine) allocPID() (int, bool) {
	pid := m.lastPID
	for range m.cfg.PIDMax {
		pid++
		if pid > m.cfg.PIDMax {
			pid = 300
		}
		if _, used := m.procs[pid]; !used {
			m.lastPID = pid
			return pid, true
		}
	}
	return 0, false
}

// Process returns the live or zombie process with pid, or nil.
func (m *Machine) Process(pid int) *Process { return m.procs[pid] }

// Live reports how many tasks (processes and their threads) have not been
// reaped.
func (m *Machine) Live() int { return len(m.procs) }

// Run runs the machine until every process has exited, or until limit
// cycles of machine time have passed if limit is not zero. It reports
// whether processes remain.
func (m *Machine) Run(limit uint64) bool {
	for len(m.procs) > 0 {
		if limit != 0 && m.now >= limit {
			return true
		}
		m.round()
	}
	return false
}

// RunFor runs the machine for about cycles more cycles of machine time (a
// whole number of quanta) and reports whether processes remain.
func (m *Machine) RunFor(cycles uint64) bool {
	return m.Run(m.now + cycles)
}

// Idle runs the machine for about cycles more cycles even when no process
// is left, so that its CPUs keep taking interrupts and IPIs (a daemon
// finishing a flush needs them).
func (m *Machine) Idle(cycles uint64) {
	for end := m.now + cycles; m.now < end; {
		m.round()
	}
}

// round runs every CPU for one quantum, in CPU order, then moves work
// between CPUs.
func (m *Machine) round() {
	end := m.now + m.cfg.Quantum
	if m.beforeIPIs != nil {
		m.beforeIPIs()
	}
	m.takeIPIs()
	m.wakeSleepers()
	for _, c := range m.cpus {
		m.runCPU(c, end)
		m.endQuantumLocks(c) // threads.go
	}
	m.now = end
	m.balance()
}

// runCPU runs CPU c until its clock reaches end: user code, vmunix, the
// waits of its idle loop, and the interrupts that arrive meanwhile.
func (m *Machine) runCPU(c *cpuState, end uint64) {
	for c.cpu.Cycle < end {
		m.runIPIs(c)
		if c.cpu.Cycle >= c.nextTick {
			c.nextTick += m.tickCycles
			switch {
			case c.halted:
				c.halted = false
				m.timerInterrupt(c, false)
			case !c.cpu.Kernel:
				m.timerInterrupt(c, true)
			case m.inIdle(c):
				m.timerInterrupt(c, false)
			default:
				// The kernel is busy (vmunix runs system calls with
				// interrupts deferred): take the tick on the way out.
				c.tickPending = true
			}
		}
		until := min(end, c.nextTick)
		if c.halted {
			// Waiting in wtint. The counters still count cycles; an
			// interrupt due meanwhile is taken at the instruction after
			// the wtint, the PAL call's blind spot (sec. 4.1.3).
			next := min(until, c.cpu.PMU.NextDelivery())
			if next > c.cpu.Cycle {
				c.Idle += next - c.cpu.Cycle
				c.cpu.Cycle = next
				restartTiming(c.cpu, next)
			}
			if next < until {
				m.counterInterrupt(c)
			}
			continue
		}
		p, kernel, before := c.cur, c.cpu.Kernel, c.cpu.Cycle
		m.setPICBase(c, p)
		if c.cpu.Me != nil {
			c.cpu.Me.Context = meContext(p)
		}
		n := c.cpu.Run(until)
		spent := c.cpu.Cycle - before
		c.Retired += n
		switch {
		case p == nil:
			c.Idle += spent
		case kernel:
			c.Kernel += spent
			p.KernelCycles += spent
		default:
			c.User += spent
		}
		if p != nil {
			p.Retired += n
			p.Cycles += spent
		}
		m.chargeEvents(c, p)
		switch c.cpu.Trap.Kind {
		case alpha.TrapNone:
		case alpha.TrapEvent:
			m.counterInterrupt(c)
		case alpha.TrapSyscall:
			c.Syscalls++
			p.Syscalls++
			m.enterKernel(c, m.kern.entSys)
		case alpha.TrapSimcall:
			m.simcall(c)
		case alpha.TrapReturn:
			m.returnToUser(c)
		case alpha.TrapWait:
			c.halted = true
		default:
			m.trap(c, p, kernel)
		}
		if c.cur == nil && !c.cpu.Kernel {
			m.enterIdle(c) // the process died in user mode
		}
	}
}

// enqueue puts p on c's run queue and tells c's idle loop, if it idles.
func (m *Machine) enqueue(c *cpuState, p *Process) {
	p.cpu = c.id
	c.runq = append(c.runq, p)
	if c.cur == nil {
		m.setNeedResched(c, true)
	}
}

// load is a CPU's queue length counting its running process.
func (c *cpuState) load() int {
	n := len(c.runq)
	if c.cur != nil {
		n++
	}
	return n
}

// leastLoaded returns the CPU with the fewest processes, lowest id first.
func (m *Machine) leastLoaded() *cpuState {
	best := m.cpus[0]
	for _, c := range m.cpus[1:] {
		if c.load() < best.load() {
			best = c
		}
	}
	return best
}

// balance gives each idle CPU a waiting process from the busiest queue,
// the pull side of Linux's load balancing.
func (m *Machine) balance() {
	for _, idle := range m.cpus {
		if idle.load() != 0 {
			continue
		}
		var from *cpuState
		for _, c := range m.cpus {
			if len(c.runq) > 0 && (from == nil || len(c.runq) > len(from.runq)) {
				from = c
			}
		}
		if from == nil {
			return
		}
		p := from.runq[len(from.runq)-1]
		from.runq = from.runq[:len(from.runq)-1]
		m.enqueue(idle, p)
	}
}

// wakeSleepers makes runnable every sleeping process whose time has come.
func (m *Machine) wakeSleepers() {
	pids := make([]int, 0)
	for pid, p := range m.procs {
		if p.state == ProcWaiting && p.sleeping && p.wakeAt <= m.now {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids) // map order is random; wake order must not be
	for _, pid := range pids {
		p := m.procs[pid]
		p.sleeping = false
		m.futexTimedOut(p) // futex.go: a FUTEX_WAIT's timeout
		m.wake(p)
	}
}

// wake makes a waiting process runnable on the CPU it last ran on.
func (m *Machine) wake(p *Process) {
	p.state = ProcRunnable
	if m.cpus[p.cpu].cur == p {
		// Still on its CPU, in vmunix between the call that blocked it
		// and SIM_SCHEDULE (a quantum boundary fell in between, and
		// another CPU woke it): schedule finds it runnable and keeps it.
		return
	}
	m.enqueue(m.cpus[p.cpu], p)
}

// CPUStats is what one CPU did.
type CPUStats struct {
	CPU     int
	Retired uint64 // instructions, user and kernel
	// Cycles by what the CPU was doing: running user code, running vmunix
	// for a process, idle (vmunix's idle loop and its waits), or in
	// counter interrupts and IPIs (the profiler's own cost).
	User, Kernel, Idle, Profiling uint64
	ContextSwitches               uint64
	Syscalls                      uint64
	Ticks                         uint64 // clock interrupts taken
	Interrupts                    [alpha.NumEvents]uint64
	IPIs                          uint64
	// Interpreted counts the instructions counter interrupt handlers
	// stepped (value sampling); they are in Retired too.
	Interpreted uint64
	// Events counts memory-system and branch events (misses at each
	// level, TLB misses, mispredicts), by alpha.Event.
	Events [alpha.NumEvents]uint64
}

// CPUStats returns per-CPU statistics.
func (m *Machine) CPUStats() []CPUStats {
	out := make([]CPUStats, len(m.cpus))
	for i, c := range m.cpus {
		out[i] = CPUStats{CPU: i, Retired: c.Retired, User: c.User, Kernel: c.Kernel, Idle: c.Idle,
			Profiling: c.Profiling, ContextSwitches: c.ContextSwitches, Syscalls: c.Syscalls,
			Ticks: c.Ticks, Interrupts: c.Interrupts, IPIs: c.IPIs, Interpreted: c.Interpreted, Events: c.cpu.PMU.Totals}
	}
	return out
}

// chargeEvents gives p (or nobody, when idle) the events c's PMU saw since
// the last charge.
func (m *Machine) chargeEvents(c *cpuState, p *Process) {
	t := &c.cpu.PMU.Totals
	if *t == c.seenEvents {
		return
	}
	if p != nil {
		for i := range t {
			p.Events[i] += t[i] - c.seenEvents[i]
		}
	}
	c.seenEvents = *t
}

// setPICBase makes rdpic on c read p's event counts while p runs: p's
// count is p.Events plus what the PMU saw since the last charge (the
// invariant chargeEvents keeps), plus what p inherited at fork.
func (m *Machine) setPICBase(c *cpuState, p *Process) {
	for k, e := range c.cpu.PICEvents {
		var v uint64
		if p != nil {
			v = p.Events[e] + p.picInherited[k]
		}
		c.cpu.PICBase[k] = v - c.seenEvents[e] // modular: adding Totals[e] gives v
	}
}

// picCounts returns what rdpic would read for p now; p's events must be
// charged up to date (as they are between runs).
func (m *Machine) picCounts(p *Process) [2]uint64 {
	var out [2]uint64
	for k, e := range m.cfg.picEvents() {
		out[k] = p.Events[e] + p.picInherited[k]
	}
	return out
}
