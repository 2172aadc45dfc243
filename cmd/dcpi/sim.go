package main

import (
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"dcpi/config"
	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
	"dcpi/simhost"
	"dcpi/simhost/localrun"
	"dcpi/workloads"
)

func newSimCommand() *cobra.Command {
	sim := &cobra.Command{
		Use:   "sim",
		Short: "Run Alpha Linux programs on a simulated multiprocessor 21164 host",
		Long: `Run static Alpha Linux programs on the simulated host, without profiling:
"dcpi sim run" runs one program (or a mix) with its output passed through
and its exit status as dcpi's, for checking that a program runs before
profiling it.`,
		Example: `  dcpi sim run hello
  dcpi sim run --strace --cpus 1 ./a.out`,
	}
	sim.AddCommand(newSimRunCommand(), newSimMicroCommand())
	return sim
}

func newSimRunCommand() *cobra.Command {
	var (
		stats     bool
		mix       string
		trace     bool
		truthFile string
	)
	cmd := &cobra.Command{
		Use:   "run [flags] FILE [args...]",
		Short: "Run an Alpha ELF executable (or an embedded workload) on a simulated host",
		Long: `Run a static Alpha Linux executable on a simulated multiprocessor Alpha host.

FILE is a path to an ELF file, or the name of an embedded workload
(` + strings.Join(workloads.Names(), ", ") + `).
Every embedded workload is also present in the simulated file system as
/bin/NAME, so programs can exec one another.

The program's standard output and error pass through, and dcpi exits with
its exit status (128+N if signal N killed it). --stats adds, on standard
error, instructions executed, simulated time and the host's speed.

--mix NAME runs a named set of embedded workloads at once, spread across the
CPUs (mixes: ` + strings.Join(workloads.MixNames(), ", ") + `).`,
		Example: `  dcpi sim run stream
  dcpi sim run --cpus 1 --stats ./a.out 10
  dcpi sim run --mix default --stats`,
		Args: func(cmd *cobra.Command, args []string) error {
			if mix == "" && len(args) == 0 {
				return fmt.Errorf("need a FILE to run, or --mix NAME")
			}
			if mix != "" && len(args) > 0 {
				return fmt.Errorf("--mix runs embedded workloads; it takes no FILE")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			hc, err := programMachineConfig(cmd)
			if err != nil {
				return err
			}
			if trace {
				hc.Trace = cmd.ErrOrStderr()
			}
			hc.GroundTruth = truthFile != ""
			if err := applyPICFlag(cmd, &hc); err != nil {
				return err
			}
			return runSim(cmd.ErrOrStderr(), hc, args, mix, stats, truthFile)
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false) // flags after FILE belong to the program
	f.Int("cpus", 4, "number of simulated CPUs")
	f.Uint64("seed", 1, "seed for everything random on the machine")
	f.String("model", "ev5", "CPU model: ev5 (21164), ev56, pca56, ev6, ev67")
	f.BoolVar(&stats, "stats", false, "print instructions, simulated time and host speed on stderr")
	f.StringVar(&mix, "mix", "", "run the named mix of embedded workloads")
	f.BoolVar(&trace, "strace", false, "trace system calls on stderr")
	f.Bool("timing", true, "run the timing model: the 21164's, or the 21264's out-of-order core with --model ev6 or ev67 (false: one cycle per instruction, several times faster)")
	f.StringVar(&truthFile, "truth", "", "write per-instruction ground truth (executions, head-of-queue cycles, stalls by cause, events, control transfers, register waits; docs/groundtruth.md) to this file")
	addPICFlag(cmd)
	return cmd
}

// loadConfig reads --config, the environment and the flags bound to keys.
func loadConfig(cmd *cobra.Command) (config.Config, error) {
	l := config.NewLoader()
	for key, flag := range map[string]string{"sim.cpus": "cpus", "sim.seed": "seed", "sim.model": "model", "sim.timing": "timing"} {
		if fl := cmd.Flags().Lookup(flag); fl != nil {
			if err := l.BindFlag(key, fl); err != nil {
				return config.Config{}, err
			}
		}
	}
	file, _ := cmd.Flags().GetString("config")
	return l.Load(file)
}

func runSim(stderr io.Writer, hc hwsim.Config, args []string, mix string, stats bool, truthFile string) error {
	type job struct {
		path string
		argv []string
	}
	var jobs []job
	if mix != "" {
		names, ok := workloads.Mixes()[mix]
		if !ok {
			return fmt.Errorf("no mix %q (mixes: %s)", mix, strings.Join(workloads.MixNames(), ", "))
		}
		for _, n := range names {
			w, _ := workloads.ByName(n)
			jobs = append(jobs, job{path: "/bin/" + n, argv: append([]string{"/bin/" + n}, w.DefaultArgs...)})
		}
	} else {
		p, err := programPath(hc.Files, args[0])
		if err != nil {
			return err
		}
		jobs = append(jobs, job{path: p, argv: append([]string{p}, args[1:]...)})
	}

	m, err := hwsim.New(hc)
	if err != nil {
		return err
	}
	env := []string{"PATH=/bin", "HOME=/", "TERM=dumb", "LANG=C"}
	var procs []*hwsim.Process
	for _, j := range jobs {
		p, err := m.Spawn(j.path, j.argv, env)
		if err != nil {
			return fmt.Errorf("run %s: %w", j.path, err)
		}
		procs = append(procs, p)
	}
	start := time.Now()
	m.Run(0)
	elapsed := time.Since(start)
	if stats {
		printSimStats(stderr, m, procs, elapsed)
	}
	if truthFile != "" {
		f, err := os.Create(truthFile)
		if err != nil {
			return err
		}
		err = m.WriteGroundTruth(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("ground truth: %w", err)
		}
	}
	status := procs[0].ExitStatus()
	for _, p := range procs[1:] {
		if status == 0 {
			status = p.ExitStatus()
		}
	}
	if code := localrun.ExitCode(status); code != 0 {
		return exitError{code: code}
	}
	return nil
}

// programPath installs FILE in the simulated file system and returns its
// simulated path: an existing host file goes to /bin/BASENAME, otherwise
// FILE must name an embedded workload. A host file that is no Alpha
// executable the simulator can run is refused here, named as given.
func programPath(files map[string][]byte, file string) (string, error) {
	data, embedded, err := readELF(file)
	if err != nil {
		return "", err
	}
	if embedded {
		return "/bin/" + file, nil
	}
	if _, err := elfimage.Parse(data, file); err != nil {
		return "", elfError(err)
	}
	p := "/bin/" + path.Base(file)
	files[p] = data
	return p, nil
}

func printSimStats(w io.Writer, m *hwsim.Machine, procs []*hwsim.Process, elapsed time.Duration) {
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
			c.User, c.Kernel, c.Idle, cpi(c.User+c.Kernel, c.Retired), ev[alpha.EvIMiss], ev[alpha.EvDMiss],
			ev[alpha.EvSMiss], ev[alpha.EvBMiss], ev[alpha.EvITBMiss], ev[alpha.EvDTBMiss], ev[alpha.EvBranchMP],
			c.ContextSwitches, c.Ticks)
	}
	fmt.Fprintf(w, "\n%-6s %-15s %12s %11s %11s %6s %8s %8s %8s %8s %7s %7s %8s %6s\n", "pid", "program", "instructions",
		"cycles", "kernel cyc", "CPI", "imiss", "dmiss", "smiss", "bmiss", "itbmiss", "dtbmiss", "mispred", "status")
	for _, p := range procs {
		ev := p.Events
		fmt.Fprintf(w, "%-6d %-15s %12d %11d %11d %6s %8d %8d %8d %8d %7d %7d %8d %6d\n", p.PID, path.Base(p.Path),
			p.Retired, p.Cycles, p.KernelCycles, cpi(p.Cycles, p.Retired), ev[alpha.EvIMiss], ev[alpha.EvDMiss],
			ev[alpha.EvSMiss], ev[alpha.EvBMiss], ev[alpha.EvITBMiss], ev[alpha.EvDTBMiss], ev[alpha.EvBranchMP],
			localrun.ExitCode(p.ExitStatus()))
	}
	printIPCSeries(w, m.IPC(), m.Now())
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

// printIPCSeries prints each 21264 CPU's IPC over time, in at most 16
// columns.
func printIPCSeries(w io.Writer, series []hwsim.IPCSeries, now uint64) {
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

func cpi(cycles, insns uint64) string {
	if insns == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(cycles)/float64(insns))
}

// programMachineConfig is the machine the configuration and flags of cmd
// describe, with the simulated programs' standard streams on cmd's and
// dcpi's: what a command that runs a user's program needs.
func programMachineConfig(cmd *cobra.Command) (hwsim.Config, error) {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return hwsim.Config{}, err
	}
	hc, err := simhost.MachineConfig(cfg.Sim)
	if err != nil {
		return hwsim.Config{}, err
	}
	hc.Stdout, hc.Stderr, hc.Stdin = cmd.OutOrStdout(), cmd.ErrOrStderr(), os.Stdin
	return hc, nil
}
