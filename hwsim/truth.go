package hwsim

import (
	"bufio"
	"fmt"
	"io"
	"sort"

	"dcpi/hwsim/alpha"
	"dcpi/hwsim/vmunix"
)

// Ground truth: per image and instruction address, what the timing model
// knows and the profiler must estimate — executions, cycles at the head of
// the issue queue and their causes, and events. It is gathered only when
// Config.GroundTruth is set and is never read by the profiling path.

// truthFor returns the ground truth collection of image path.
func (m *Machine) truthFor(path string) *alpha.GroundTruth {
	if m.truth == nil {
		return nil
	}
	g := m.truth[path]
	if g == nil {
		g = alpha.NewGroundTruth()
		m.truth[path] = g
	}
	return g
}

// setTruth points c's timing model at the collection of the code it is
// about to run.
func (m *Machine) setTruth(c *cpuState) {
	if m.truth == nil || c.cpu.Timing == nil {
		return
	}
	path := vmunix.Path
	if !c.cpu.Kernel && c.cur != nil {
		path = c.cur.Path
	}
	c.cpu.Timing.Truth = m.truthFor(path)
}

// GroundTruth returns the collections by image path (vmunix's as
// "/vmunix"), or nil if Config.GroundTruth was not set.
func (m *Machine) GroundTruth() map[string]*alpha.GroundTruth { return m.truth }

// WriteGroundTruth writes the ground truth as a tab-separated table with a
// header line: image, pc, executions, head-of-queue cycles, stall cycles by
// cause, and event counts.
func (m *Machine) WriteGroundTruth(w io.Writer) error {
	if m.truth == nil {
		return fmt.Errorf("hwsim: ground truth was not collected (Config.GroundTruth)")
	}
	bw := bufio.NewWriter(w)
	fmt.Fprint(bw, "image\tpc\texecuted\thead_cycles")
	for s := alpha.StallCause(0); s < alpha.NumStallCauses; s++ {
		fmt.Fprintf(bw, "\tstall_%s", s)
	}
	for e := alpha.Event(0); e < alpha.NumEvents; e++ {
		fmt.Fprintf(bw, "\t%s", e)
	}
	fmt.Fprintln(bw)
	paths := make([]string, 0, len(m.truth))
	for p := range m.truth {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, path := range paths {
		g := m.truth[path]
		pcs := make([]uint64, 0, len(g.PCs))
		for pc := range g.PCs {
			pcs = append(pcs, pc)
		}
		sort.Slice(pcs, func(i, j int) bool { return pcs[i] < pcs[j] })
		for _, pc := range pcs {
			t := g.PCs[pc]
			fmt.Fprintf(bw, "%s\t%#x\t%d\t%d", path, pc, t.Executed, t.HeadCycles)
			for _, v := range t.Stall {
				fmt.Fprintf(bw, "\t%d", v)
			}
			for _, v := range t.Events {
				fmt.Fprintf(bw, "\t%d", v)
			}
			fmt.Fprintln(bw)
		}
	}
	return bw.Flush()
}
