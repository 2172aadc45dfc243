package simrun

import (
	"fmt"
	"io"
	"path"
	"time"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/simhost/localrun"
)

// WriteStats writes the report of dcpi sim run --stats: instructions,
// simulated and host time, the host's speed, then per CPU and per process
// the cycles, CPI and events, each 21264 CPU's IPC over time, and the
// machine's faults.
func WriteStats(w io.Writer, m *hwsim.Machine, procs []*hwsim.Process, elapsed time.Duration) {
	var insns, user, kernel, idle, prof uint64
	cpus := m.CPUStats()
	for _, c := range cpus {
		insns += c.Retired
		user, kernel, idle, prof = user+c.User, kernel+c.Kernel, idle+c.Idle, prof+c.Profiling
	}
	total := float64(max(1, user+kernel+idle+prof))
	simSec := m.Seconds(m.Now())
	fmt.Fprintf(w, "\n--- dcpi sim stats ---\n")
	fmt.Fprintf(w, "instructions      %d (user and vmunix)\n", insns)
	fmt.Fprintf(w, "simulated time    %.6f s (%d cycles at %d MHz, %d CPUs)\n", simSec, m.Now(), m.Config().ClockHz/1_000_000, len(cpus))
	fmt.Fprintf(w, "cpu time          user %.1f%%  kernel (vmunix) %.1f%%  idle %.1f%%\n",
		100*float64(user)/total, 100*float64(kernel)/total, 100*float64(idle)/total)
	fmt.Fprintf(w, "host time         %.3f s\n", elapsed.Seconds())
	if elapsed > 0 {
		fmt.Fprintf(w, "host speed        %.1f M simulated instructions/s\n", float64(insns)/elapsed.Seconds()/1e6)
	}
	fmt.Fprintf(w, "\n%-4s %12s %11s %11s %11s %6s %8s %8s %8s %8s %7s %7s %8s %6s %6s\n", "cpu", "instructions",
		"user cyc", "kernel cyc", "idle cyc", "CPI", "imiss", "dmiss", "smiss", "bmiss", "itbmiss", "dtbmiss",
		"mispred", "switch", "ticks")
	for _, c := range cpus {
		ev := c.Events
		fmt.Fprintf(w, "%-4d %12d %11d %11d %11d %6s %8d %8d %8d %8d %7d %7d %8d %6d %6d\n", c.CPU, c.Retired,
			c.User, c.Kernel, c.Idle, CPI(c.User+c.Kernel, c.Retired), ev[alpha.EvIMiss], ev[alpha.EvDMiss],
			ev[alpha.EvSMiss], ev[alpha.EvBMiss], ev[alpha.EvITBMiss], ev[alpha.EvDTBMiss], ev[alpha.EvBranchMP],
			c.ContextSwitches, c.Ticks)
	}
	fmt.Fprintf(w, "\n%-6s %-15s %12s %11s %11s %6s %8s %8s %8s %8s %7s %7s %8s %6s\n", "pid", "program", "instructions",
		"cycles", "kernel cyc", "CPI", "imiss", "dmiss", "smiss", "bmiss", "itbmiss", "dtbmiss", "mispred", "status")
	for _, p := range procs {
		ev := p.Events
		fmt.Fprintf(w, "%-6d %-15s %12d %11d %11d %6s %8d %8d %8d %8d %7d %7d %8d %6d\n", p.PID, path.Base(p.Path),
			p.Retired, p.Cycles, p.KernelCycles, CPI(p.Cycles, p.Retired), ev[alpha.EvIMiss], ev[alpha.EvDMiss],
			ev[alpha.EvSMiss], ev[alpha.EvBMiss], ev[alpha.EvITBMiss], ev[alpha.EvDTBMiss], ev[alpha.EvBranchMP],
			localrun.ExitCode(p.ExitStatus()))
	}
	writeIPCSeries(w, m.IPC(), m.Now())
	for _, f := range m.Faults() {
		fmt.Fprintf(w, "fault: %s\n", f)
	}
}

// ipcColumns is at most n IPCs over time from retires per window of
// window cycles, windows grouped evenly, the last group's cycles cut at
// now.
func ipcColumns(retired []uint64, window, now uint64, n int) []float64 {
	if len(retired) == 0 || window == 0 || n < 1 {
		return nil
	}
	group := (len(retired) + n - 1) / n
	var cols []float64
	for i := 0; i < len(retired); i += group {
		var sum uint64
		for _, r := range retired[i:min(i+group, len(retired))] {
			sum += r
		}
		from, to := uint64(i)*window, min(uint64(i+group)*window, max(now, uint64(i)*window+1))
		cols = append(cols, float64(sum)/float64(to-from))
	}
	return cols
}

// writeIPCSeries writes each 21264 CPU's IPC over time, in at most 16
// columns.
func writeIPCSeries(w io.Writer, series []hwsim.IPCSeries, now uint64) {
	for i, s := range series {
		cols := ipcColumns(s.Retired, s.Window, now, 16)
		if i == 0 {
			group := (len(s.Retired) + 15) / 16
			fmt.Fprintf(w, "\nIPC over time (21264 core; columns of %d cycles)\n", uint64(group)*s.Window)
		}
		fmt.Fprintf(w, "cpu %-3d", s.CPU)
		for _, c := range cols {
			fmt.Fprintf(w, " %5.2f", c)
		}
		fmt.Fprintln(w)
	}
}

// CPI is cycles per instruction with two decimals, "-" for none.
func CPI(cycles, insns uint64) string {
	if insns == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(cycles)/float64(insns))
}
