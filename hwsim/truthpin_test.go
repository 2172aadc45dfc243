package hwsim_test

import (
	"fmt"
	"hash/fnv"
	"slices"
	"testing"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
)

// truthRun runs one workload on one CPU with ground truth, and with CYCLES
// interrupts every ~3000 cycles if profiled (so that instructions wait
// across interrupts), and returns the machine.
func truthRun(t *testing.T, name string, profiled bool, args ...string) *hwsim.Machine {
	t.Helper()
	cfg := machineWithWorkloads(t, 1)
	cfg.GroundTruth = true
	m, err := hwsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if profiled {
		prof := hwsim.ProfileConfig{Counters: []hwsim.CounterSpec{
			{Events: []alpha.Event{alpha.EvCycles}, PeriodMin: 2800, PeriodMax: 3200}}, InterruptCycles: 214}
		if err := m.StartProfiling(prof, &collector{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Spawn("/bin/"+name, append([]string{"/bin/" + name}, args...), nil); err != nil {
		t.Fatal(err)
	}
	m.Run(0)
	return m
}

// oldAccountingDigest hashes, per image and PC, the executions, head
// cycles and events and the stall cycles grouped as the accounting before
// the causes were split had them (dep = ra + rb, unit = imul + fdiv,
// icache = icache + itb; a load's DTB cycles were dcache's and a store's
// wbuf's, so dcache + dtb + wbuf together), with the CPU's cycles.
func oldAccountingDigest(m *hwsim.Machine) string {
	h := fnv.New64a()
	truth := m.GroundTruth()
	paths := make([]string, 0, len(truth))
	for p := range truth {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		g := truth[p]
		pcs := make([]uint64, 0, len(g.PCs))
		for pc := range g.PCs {
			pcs = append(pcs, pc)
		}
		slices.Sort(pcs)
		for _, pc := range pcs {
			e := g.PCs[pc]
			s := e.Stall
			fmt.Fprintf(h, "%s %x %d %d %d %d %d %d %d %d %d %v\n", p, pc, e.Executed, e.HeadCycles,
				s[alpha.StallSlot], s[alpha.StallRa]+s[alpha.StallRb], s[alpha.StallIMul]+s[alpha.StallFDiv],
				s[alpha.StallICache]+s[alpha.StallITB], s[alpha.StallDCache]+s[alpha.StallDTB]+s[alpha.StallWBuf],
				s[alpha.StallMispred], s[alpha.StallBarrier], e.Events)
		}
	}
	st := m.CPUStats()[0]
	return fmt.Sprintf("%016x user %d kernel %d idle %d prof %d", h.Sum64(), st.User, st.Kernel, st.Idle, st.Profiling)
}

// TestGroundTruthSplitKeepsAccounting pins, for a few workloads, the
// ground truth and cycles that main had before the stall causes were split
// (commit 9e9b90b): splitting ITB from I-cache, DTB from D-cache and write
// buffer, IMUL from FDIV and Ra from Rb must move cycles between the new
// causes only, leaving every PC's executions, head cycles, events and
// grouped stalls, and the machine's timing, as they were. A change to the
// timing model changes these figures: check that it is meant, then update.
func TestGroundTruthSplitKeepsAccounting(t *testing.T) {
	for _, c := range []struct {
		name     string
		profiled bool
		args     []string
		want     string
	}{
		{"ptrchase", false, []string{"65536", "262144"}, "2a513ee4a874887b user 25196207 kernel 387490 idle 16303 prof 0"},
		{"ptrchase", true, []string{"65536", "262144"}, "a10d3208b11aa1ae user 24911078 kernel 387611 idle 1531 prof 1979780"},
		{"hashdb", true, []string{"5000", "20000"}, "be480a2695aba4f1 user 9441500 kernel 71102 idle 5804 prof 701594"},
		{"fpmix", false, []string{"1"}, "867e41590c6a16c1 user 18937168 kernel 716963 idle 5869 prof 0"},
		{"sort", false, []string{"5000"}, "41d40d325ad1d36e user 4537919 kernel 26320 idle 15761 prof 0"},
	} {
		t.Run(fmt.Sprintf("%s/profiled=%v", c.name, c.profiled), func(t *testing.T) {
			t.Parallel()
			m := truthRun(t, c.name, c.profiled, c.args...)
			if got := oldAccountingDigest(m); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
			checkStallSplit(t, m)
		})
	}
}

// checkStallSplit checks what the new causes must satisfy per PC: the
// stall cycles fit in the head cycles; a DTB stall is the TLB miss cost
// for each DTB miss of the executions recorded; the register waits add up
// to the ra and rb causes and to no more than the dcache one; and the
// workload as a whole sees the new causes it should.
func checkStallSplit(t *testing.T, m *hwsim.Machine) {
	t.Helper()
	var total [alpha.NumStallCauses]uint64
	dtbCost := hwsim.DefaultConfig().MemoryParams.DTBMissCycles
	for path, g := range m.GroundTruth() {
		byPC := map[uint64]*[alpha.NumStallCauses]uint64{}
		for k, w := range g.RegWaits {
			s := byPC[k.PC]
			if s == nil {
				s = new([alpha.NumStallCauses]uint64)
				byPC[k.PC] = s
			}
			s[k.Cause] += w.Cycles
			if w.Count == 0 || w.Cycles < w.Count {
				t.Errorf("%s %#x: register wait %+v: %d cycles in %d waits", path, k.PC, k, w.Cycles, w.Count)
			}
		}
		for pc, e := range g.PCs {
			var sum uint64
			for c, v := range e.Stall {
				sum += v
				total[c] += v
			}
			if sum > e.HeadCycles {
				t.Errorf("%s %#x: %d stall cycles in %d head cycles", path, pc, sum, e.HeadCycles)
			}
			if e.Stall[alpha.StallDTB] != dtbCost*e.Events[alpha.EvDTBMiss] {
				t.Errorf("%s %#x: %d DTB stall cycles for %d DTB misses", path, pc, e.Stall[alpha.StallDTB], e.Events[alpha.EvDTBMiss])
			}
			var w [alpha.NumStallCauses]uint64
			if s := byPC[pc]; s != nil {
				w = *s
			}
			if w[alpha.StallRa] != e.Stall[alpha.StallRa] || w[alpha.StallRb] != e.Stall[alpha.StallRb] || w[alpha.StallDCache] > e.Stall[alpha.StallDCache] {
				t.Errorf("%s %#x: register waits ra %d rb %d dcache %d; stalls ra %d rb %d dcache %d", path, pc,
					w[alpha.StallRa], w[alpha.StallRb], w[alpha.StallDCache], e.Stall[alpha.StallRa], e.Stall[alpha.StallRb], e.Stall[alpha.StallDCache])
			}
		}
	}
	for _, c := range []alpha.StallCause{alpha.StallRa, alpha.StallRb, alpha.StallICache, alpha.StallITB, alpha.StallDCache, alpha.StallDTB} {
		if total[c] == 0 {
			t.Errorf("no %s stall cycles at all", c)
		}
	}
	t.Logf("stall cycles by cause: %v", total)
}
