package hwsim

import "encoding/binary"

// sysClockNanosleep is clock_nanosleep(clock, flags, req, rem) on
// CLOCK_REALTIME, CLOCK_MONOTONIC or CLOCK_BOOTTIME, relative or, with
// TIMER_ABSTIME, until req on that clock.
func (m *Machine) sysClockNanosleep(c *cpuState, p *Process, clk, flags, req uint64) (uint64, errno) {
	const timerAbstime = 1
	var now uint64 // ns on clk
	switch clk {
	case 0: // REALTIME
		now = uint64(m.wallNanos(c))
	case 1, 7: // MONOTONIC, BOOTTIME
		now = m.nanos(m.cycleOf(c))
	case 2, 3: // the CPU-time clocks
		return m.unimplemented(c, p, "clock_nanosleep on clock %d", clk)
	default:
		return 0, eINVAL
	}
	if flags&timerAbstime == 0 {
		return m.sysNanosleep(c, p, req)
	}
	b, err := m.userRead(p, req, 16)
	if err != 0 {
		return 0, err
	}
	sec, nsec := int64(binary.LittleEndian.Uint64(b)), binary.LittleEndian.Uint64(b[8:])
	if sec < 0 || nsec >= 1e9 {
		return 0, eINVAL
	}
	rel := max(uint64(sec)*1e9+nsec, now) - now
	p.ctx.R[0], p.ctx.R[19] = 0, 0
	p.wakeAt = m.cycleOf(c) + rel/1e9*m.cfg.ClockHz + rel%1e9*m.cfg.ClockHz/1e9
	p.sleeping = true
	p.state = ProcWaiting
	m.setNeedResched(c, true)
	return 0, sysDone
}
