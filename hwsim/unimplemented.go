package hwsim

import (
	"fmt"
	"strconv"
)

// Unimplemented is a system call, flag combination, signal action or PAL
// call a program made that the simulated kernel does not implement. The
// program is stopped there, with a one-line message naming it, rather than
// handed an errno the real kernel would not return: a simulator that
// silently runs a different execution is worse than one that refuses.
type Unimplemented struct {
	PID, TID int
	Path     string
	What     string // "system call 999", "clone flags 0x...", ...
}

func (u Unimplemented) String() string {
	return fmt.Sprintf("hwsim: unimplemented %s (pid %d)", u.What, u.PID)
}

// Unimplemented returns what programs were stopped for so far.
func (m *Machine) Unimplemented() []Unimplemented { return m.unimpl }

// unimplemented stops p's process with SIGSYS for what the kernel lacks.
// c is the CPU p calls from, or nil. It returns sysNoReturn, for a system
// call p made.
func (m *Machine) unimplemented(c *cpuState, p *Process, format string, args ...any) (uint64, errno) {
	u := Unimplemented{PID: p.PID, TID: p.TID, Path: p.Path, What: fmt.Sprintf(format, args...)}
	m.unimpl = append(m.unimpl, u)
	fmt.Fprintln(m.stderr, u.String())
	m.exit(c, p, sigSYS)
	return 0, sysNoReturn
}

// unimplementedSyscall is dispatchSyscall's answer to a number it lacks.
func (m *Machine) unimplementedSyscall(c *cpuState, p *Process, num uint64) (uint64, errno) {
	name := syscallNames[num]
	if name == "" {
		return m.unimplemented(c, p, "system call %d", num)
	}
	return m.unimplemented(c, p, "system call %s (%d)", name, num)
}

func hex(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }
