package alpha

// PerfectMemory is a memory system in which everything hits and every
// branch is predicted: what is left is the issue model alone.
type PerfectMemory struct{}

// Fetch never stalls.
func (PerfectMemory) Fetch(vpc, ppc, cycle uint64) (uint64, uint64, EventSet) { return 0, 0, 0 }

// Load hits the D-cache.
func (PerfectMemory) Load(va, pa, cycle uint64) (uint64, uint64, uint64, EventSet) { return 0, 0, 2, 0 }

// Store never waits.
func (PerfectMemory) Store(va, pa, cycle uint64) (uint64, uint64, EventSet) { return 0, 0, 0 }

// Barrier never waits.
func (PerfectMemory) Barrier(cycle uint64) uint64 { return 0 }

// Branch is always predicted.
func (PerfectMemory) Branch(pc, target uint64, taken bool) (uint64, EventSet) { return 0, 0 }

// Jump is always predicted.
func (PerfectMemory) Jump(pc uint64, hint uint16, target uint64) (uint64, EventSet) { return 0, 0 }

// Call does nothing.
func (PerfectMemory) Call(ret uint64) {}

// Return is always predicted.
func (PerfectMemory) Return(target uint64) (uint64, EventSet) { return 0, 0 }

// NewTiming returns the issue model of cpu over mem and installs it.
func NewTiming(cpu *CPU, mem MemorySystem) *Timing {
	t := &Timing{Mem: mem, cpu: cpu}
	cpu.Timing = t
	return t
}
