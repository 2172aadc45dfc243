package hwsim

import (
	"fmt"
	"io"
	"slices"

	"dcpi/hwsim/alpha"
	"dcpi/hwsim/ev6"
	"dcpi/hwsim/vmunix"
)

// Ground truth: per image and instruction address, what the timing model
// knows and the profiler must estimate — executions, cycles at the head of
// the issue queue and their causes, events, the control transfers taken
// and the waits for registers. It is gathered only when
// Config.GroundTruth is set and is never read by the profiling path. The
// file format (truthfile.go) is described in docs/groundtruth.md.

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
	if m.truth == nil || (c.cpu.Timing == nil && c.core == nil) {
		return
	}
	path := vmunix.Path
	if !c.cpu.Kernel && c.cur != nil {
		path = c.cur.Path
	}
	if c.core != nil {
		c.core.Truth = m.truthFor(path)
		st := m.stages[path]
		if st == nil {
			st = ev6.NewStageTruth()
			m.stages[path] = st
		}
		c.core.Stages = st
		return
	}
	c.cpu.Timing.Truth = m.truthFor(path)
	c.cpu.Timing.Values = m.valueTruthFor(path)
}

// valueTruthFor returns the value truth collection of image path.
func (m *Machine) valueTruthFor(path string) *alpha.ValueTruth {
	if m.values == nil {
		return nil
	}
	g := m.values[path]
	if g == nil {
		g = alpha.NewValueTruth()
		m.values[path] = g
	}
	return g
}

// ValueTruth returns value sampling's ground truth (per instruction:
// histograms of results and operands, loads' latencies and levels) by
// image path, or nil if Config.GroundTruth was not set. Only the 21164's
// timing model fills it; it is not part of the ground truth file.
func (m *Machine) ValueTruth() map[string]*alpha.ValueTruth { return m.values }

// StageTruth returns the 21264 cores' stage truth (retires, aborts,
// cycles between stages) by image path, or nil if Config.GroundTruth was
// not set. Only ev6 and ev67 machines with timing fill it.
func (m *Machine) StageTruth() map[string]*ev6.StageTruth { return m.stages }

// GroundTruth returns the collections by image path (vmunix's as
// "/vmunix"), or nil if Config.GroundTruth was not set.
func (m *Machine) GroundTruth() map[string]*alpha.GroundTruth { return m.truth }

// WriteGroundTruth writes the ground truth in the format of
// docs/groundtruth.md (EncodeGroundTruth), which ReadGroundTruth reads.
func (m *Machine) WriteGroundTruth(w io.Writer) error {
	if m.truth == nil {
		return fmt.Errorf("hwsim: ground truth was not collected (Config.GroundTruth)")
	}
	return EncodeGroundTruth(w, m.truth)
}

// IPCSeries is one 21264 CPU's instructions retired per window of Window
// cycles, from cycle 0: its IPC over time.
type IPCSeries struct {
	CPU     int
	Window  uint64
	Retired []uint64
}

// IPC returns each 21264 CPU's IPC series (a copy), or nil on a machine
// without the out-of-order core (the 21164's, or no timing).
func (m *Machine) IPC() []IPCSeries {
	var out []IPCSeries
	for i, c := range m.cpus {
		if c.core != nil {
			out = append(out, IPCSeries{CPU: i, Window: 1 << ev6.IPCWindowShift,
				Retired: slices.Clone(c.core.RetiredPerWindow())})
		}
	}
	return out
}
