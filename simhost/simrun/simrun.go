// Package simrun runs programs on a simulated host without profiling
// them (dcpi sim run): one program, or a named mix of embedded workloads
// spread across the CPUs, with the programs' streams passed through, the
// machine's statistics report and its ground truth file. It is how a
// user checks that a program runs on the simulator before profiling it.
package simrun

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"dcpi/hwsim"
	"dcpi/simhost"
	"dcpi/simhost/localrun"
	"dcpi/workloads"
)

// Options say what to run and what to report.
type Options struct {
	// Machine is the simulated host; its Files receive a user's program.
	Machine hwsim.Config
	// Args is FILE [ARGS...]: a host file or an embedded workload's name
	// and its arguments. Empty with Mix.
	Args []string
	// Mix names a set of embedded workloads to run at once
	// (workloads.Mixes), each with its default arguments.
	Mix string
	// Stats, when not nil, receives the statistics report (WriteStats)
	// after the run.
	Stats io.Writer
	// TruthFile, when not empty, receives the per-instruction ground
	// truth (Machine.GroundTruth must be on).
	TruthFile string
}

// Env is the environment every simulated program starts with.
var Env = []string{"PATH=/bin", "HOME=/", "TERM=dumb", "LANG=C"}

type job struct {
	path string
	argv []string
}

// Run runs the programs to their end and returns the process exit code a
// shell would report for the first that failed (localrun.ExitCode: 0, the
// program's status, or 128+N for signal N).
func Run(o Options) (exitCode int, err error) {
	if o.Machine.Files == nil {
		o.Machine.Files = map[string][]byte{}
	}
	jobs, err := o.jobs()
	if err != nil {
		return 0, err
	}
	m, err := hwsim.New(o.Machine)
	if err != nil {
		return 0, err
	}
	var procs []*hwsim.Process
	for _, j := range jobs {
		p, err := m.Spawn(j.path, j.argv, Env)
		if err != nil {
			return 0, fmt.Errorf("run %s: %w", j.path, err)
		}
		procs = append(procs, p)
	}
	start := time.Now()
	m.Run(0)
	elapsed := time.Since(start)
	if o.Stats != nil {
		WriteStats(o.Stats, m, procs, elapsed)
	}
	if o.TruthFile != "" {
		if err := writeTruth(m, o.TruthFile); err != nil {
			return 0, err
		}
	}
	status := procs[0].ExitStatus()
	for _, p := range procs[1:] {
		if status == 0 {
			status = p.ExitStatus()
		}
	}
	return localrun.ExitCode(status), nil
}

// jobs are the processes to spawn, the user's file installed in the
// machine's file system.
func (o Options) jobs() ([]job, error) {
	if o.Mix != "" {
		names, ok := workloads.Mixes()[o.Mix]
		if !ok {
			return nil, fmt.Errorf("no mix %q (mixes: %s)", o.Mix, strings.Join(workloads.MixNames(), ", "))
		}
		var jobs []job
		for _, n := range names {
			w, _ := workloads.ByName(n)
			p := workloads.BinDir + "/" + n
			jobs = append(jobs, job{path: p, argv: append([]string{p}, w.DefaultArgs...)})
		}
		return jobs, nil
	}
	if len(o.Args) == 0 {
		return nil, fmt.Errorf("need a FILE to run, or a mix")
	}
	p, err := simhost.InstallFile(o.Machine.Files, o.Args[0])
	if err != nil {
		return nil, err
	}
	return []job{{path: p, argv: append([]string{p}, o.Args[1:]...)}}, nil
}

func writeTruth(m *hwsim.Machine, name string) error {
	f, err := os.Create(name)
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
	return nil
}
