package microbench

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
	"dcpi/hwsim/ev6"
	"dcpi/workloads"
)

// Result is one microbenchmark measured on the 21264 core.
type Result struct {
	Bench
	// Instructions and Cycles are the retired instructions of the
	// benchmark's procedures and the cycles charged to them (the ground
	// truth's head cycles: the cycles each was the oldest in flight).
	Instructions, Cycles uint64
	// Mispredicts are those procedures' mispredicted branches and jumps,
	// D-cache misses their loads' misses.
	Mispredicts, DCacheMisses uint64
}

// CPI is the measured cycles per instruction.
func (r Result) CPI() float64 {
	if r.Instructions == 0 {
		return 0
	}
	return float64(r.Cycles) / float64(r.Instructions)
}

// Error is the measured CPI's relative difference from the analytic one
// (positive: the model is slower than expected).
func (r Result) Error() float64 { return r.CPI()/r.Expect - 1 }

// ErrUnknown is returned (wrapped) for a name that is not in Suite.
var ErrUnknown = errors.New("microbench: no such microbenchmark")

// Run runs the microbenchmark name alone (`micro 1 NAME`) on a one-CPU
// 21264 host with parameters p (the zero value: ev6.DefaultParams) and
// ground truth, and measures it.
func Run(name string, p ev6.Params) (Result, error) {
	b, ok := Lookup(name)
	if !ok {
		return Result{}, fmt.Errorf("%w: %q", ErrUnknown, name)
	}
	image, err := workloads.Binary(Program)
	if err != nil {
		return Result{}, err
	}
	im, err := elfimage.Parse(image, "/bin/"+Program)
	if err != nil {
		return Result{}, err
	}
	type span struct{ lo, hi uint64 }
	var spans []span
	for _, proc := range b.Procs {
		s, ok := im.SymbolNamed(proc)
		if !ok || s.Size == 0 {
			return Result{}, fmt.Errorf("microbench: %s: no procedure %s in %s", name, proc, Program)
		}
		spans = append(spans, span{s.Addr, s.Addr + s.Size})
	}

	path := workloads.BinDir + "/" + Program
	c := hwsim.DefaultConfig()
	c.CPUs = 1
	c.Model = alpha.EV6
	c.Timing = true
	c.GroundTruth = true
	c.EV6Params = p
	c.Files = map[string][]byte{path: image}
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, io.Writer(&errOut)
	m, err := hwsim.New(c)
	if err != nil {
		return Result{}, err
	}
	proc, err := m.Spawn(path, []string{path, "1", name}, []string{"PATH=/bin"})
	if err != nil {
		return Result{}, err
	}
	if m.Run(100_000_000_000) {
		return Result{}, fmt.Errorf("microbench: %s did not finish", name)
	}
	if st := proc.ExitStatus(); st != 0 {
		return Result{}, fmt.Errorf("microbench: %s exited with status %#x: %s", name, st, errOut.Bytes())
	}
	truth := m.GroundTruth()[path]
	if truth == nil {
		return Result{}, fmt.Errorf("microbench: %s left no ground truth", name)
	}
	r := Result{Bench: b}
	for pc, e := range truth.PCs {
		for _, s := range spans {
			if pc >= s.lo && pc < s.hi {
				r.Instructions += e.Executed
				r.Cycles += e.HeadCycles
				r.Mispredicts += e.Events[alpha.EvBranchMP]
				r.DCacheMisses += e.Events[alpha.EvDMiss]
				break
			}
		}
	}
	if r.Instructions == 0 {
		return Result{}, fmt.Errorf("microbench: %s retired nothing in %v", name, b.Procs)
	}
	return r, nil
}
