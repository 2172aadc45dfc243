package ev6

import (
	"testing"

	"dcpi/hwsim/alpha"
)

// truthOf runs code on a core collecting ground truth and returns it.
func truthOf(t *testing.T, p Params, code []uint32, setup func(*machine)) *alpha.GroundTruth {
	t.Helper()
	m := newMachine(t, p, code, dataSize)
	m.core.Truth = alpha.NewGroundTruth()
	if setup != nil {
		setup(m)
	}
	m.run(t)
	return m.core.Truth
}

// checkStallSums requires every instruction's stall columns to add up to
// at most its head cycles, as the ground truth file promises.
func checkStallSums(t *testing.T, g *alpha.GroundTruth) {
	t.Helper()
	for pc, e := range g.PCs {
		var sum uint64
		for _, v := range e.Stall {
			sum += v
		}
		if sum > e.HeadCycles {
			t.Errorf("%#x: %d stall cycles in %d head cycles", pc, sum, e.HeadCycles)
		}
	}
}

// The ground truth's stall causes on the 21264 core, in the 21164's
// terms, charged within an instruction's head cycles (while it is the
// oldest in flight): a chain of loads that miss to the D-cache, a
// branch's target after a mispredict to the refetch; a multiply chain's
// own latency to nothing.
func TestStallCauses(t *testing.T) {
	loadAt := func(g *alpha.GroundTruth, i int) *alpha.PCTruth {
		return g.PCs[codeBase+4*uint64(len(setupCode)+2+i)]
	}
	t.Run("dcache", func(t *testing.T) {
		const stride, n = 64 * 17, 2000
		p := DefaultParams()
		p.L2Bytes = 64 << 10
		g := truthOf(t, p, loop(setupCode, n, ldq(4, 4, 0)), func(m *machine) {
			for i := range n {
				m.writeQuads(t, dataBase+uint64(i)*stride, []uint64{dataBase + uint64((i+1)%n)*stride})
			}
		})
		checkStallSums(t, g)
		e := loadAt(g, 0)
		if e.Stall[alpha.StallDCache] < e.HeadCycles*9/10 {
			t.Errorf("load chain: %d of %d head cycles charged to the D-cache, want 90%% or more (stalls %v)", e.Stall[alpha.StallDCache], e.HeadCycles, e.Stall)
		}
	})
	t.Run("own latency", func(t *testing.T) {
		// In a chain, each multiply waits for its operand while older
		// ones are in flight, so that wait is the older ones' head
		// time; its own head cycles are its latency, which no 21164
		// cause names: nothing is charged.
		var body []uint32
		for range 8 {
			body = append(body, mulq(1, 1, 1))
		}
		g := truthOf(t, DefaultParams(), loop(setupCode, 1000, body...), nil)
		checkStallSums(t, g)
		e := loadAt(g, 3)
		if e.HeadCycles != e.Executed*uint64(DefaultParams().LatIMul) || e.Stall != [alpha.NumStallCauses]uint64{} {
			t.Errorf("mulq chain: %d head cycles in %d executions, stalls %v; want the latency each, uncharged", e.HeadCycles, e.Executed, e.Stall)
		}
	})
	t.Run("mispredict", func(t *testing.T) {
		bits := randomBits(4000, 7)
		body := []uint32{
			ldq(3, 4, 0),
			addqLit(4, 8, 4),
			0, // blbs r3, +1
			addqLit(5, 1, 5),
			bis(31, 31, 31),
		}
		code := loop(setupCode, len(bits), body...)
		top := len(code) - 3 - len(body)
		code[top+2] = blbs(3, top+2, top+4)
		g := truthOf(t, DefaultParams(), code, func(m *machine) { m.writeQuads(t, dataBase, bits) })
		checkStallSums(t, g)
		var mp uint64
		for _, e := range g.PCs {
			mp += e.Stall[alpha.StallMispred]
		}
		// The refetch's cycles after the branch retires: from its
		// retire (issue + 1 + RetireAfter) to the target's earliest
		// issue (issue + penalty + 1).
		p := DefaultParams()
		each := uint64(p.MispredictCycles - p.RetireAfter)
		branch := loadAt(g, 2)
		if misses := branch.Events[alpha.EvBranchMP]; misses == 0 || mp < misses*each*95/100 || mp > misses*each*105/100 {
			t.Errorf("%d mispredicts, %d cycles charged to them; want %d each", misses, mp, each)
		}
	})
}
