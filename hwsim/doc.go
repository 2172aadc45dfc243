// Package hwsim is the simulated machine: multiprocessor DEC Alpha hosts
// that run real Alpha Linux programs. It owns the simulated Linux — processes
// with PIDs and their threads, per-CPU run queues and time slicing, the
// system calls glibc's static programs make (what it lacks stops the program,
// never an errno Linux would not give), exec, fork, clone and futex — and the
// loader events DCPI's daemon attributes samples with.
//
// The instruction set, memory and interpreter live in hwsim/alpha; ELF
// parsing and the initial stack in hwsim/elfimage. hwsim imports nothing else
// of the project: the profiler sees it only through the events and counters
// it exposes.
package hwsim
