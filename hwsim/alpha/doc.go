// Package alpha is one DEC Alpha processor as the simulator runs it: the
// instruction set (Decode into predecoded Decoded records, the interpreter
// CPU.Run, integer and IEEE floating-point semantics with the FPCR),
// the CPU models and their AMASK extensions (21164 by default; 21164A,
// 21164PC, 21264, 21264A), user and kernel address spaces of 8 KB pages with
// copy-on-write sharing and per-CPU software TLBs, the 21164 issue model
// (Timing, over a MemorySystem and BranchUnit that hwsim/timing implements),
// and the performance counters (PMU) whose interrupts DCPI samples.
//
// It owns the architectural state and the cost of executing an instruction,
// nothing above that: system calls, faults, signals and scheduling are
// reported as Traps for the OS layer (package hwsim) to handle, and a CPU
// belongs to one goroutine at a time. Printing instructions is
// hwsim/alpha/disasm's, which follows objdump rather than the decoder.
package alpha
