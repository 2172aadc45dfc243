package calc

import (
	"testing"

	"dcpi/analysis/codetest"
	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
)

// Culprits held to the simulator: a workload runs on hwsim with ground
// truth and with DMISS and IMISS sampled; each procedure is explained
// with S and F taken from the truth (as the paper's Figure 10 took
// execution counts from instrumented runs, to judge culprits apart from
// frequency estimation) and the real event samples, skid and all. For
// every PC whose truth shows dynamic stall cycles of a cause, the cycles
// count as covered when the cause is among the PC's candidates. The truth
// is read here only, never by Explain.

// sampleCounter is the counter interrupt handler: samples per PC and event.
type sampleCounter map[uint64]*Counts

func (s sampleCounter) CounterInterrupt(x hwsim.Sample) uint64 {
	if x.Kernel || x.PID == 0 {
		return 0
	}
	c := s[x.PC]
	if c == nil {
		c = &Counts{}
		s[x.PC] = c
	}
	c[x.Event]++
	return 0
}

// truthCauses maps hwsim's dynamic stall causes (ground truth v2) to the
// candidates that account for them.
var truthCauses = map[alpha.StallCause][]Cause{
	alpha.StallICache:  {ICache},
	alpha.StallITB:     {ITB},
	alpha.StallDCache:  {DCache},
	alpha.StallDTB:     {DTB},
	alpha.StallMispred: {Mispredict},
	alpha.StallWBuf:    {WriteBuffer},
	alpha.StallBarrier: {Sync},
}

type coverage struct {
	total, covered [alpha.NumStallCauses]uint64
	candidates     int // candidates listed over stalled instructions
	stalled        int
	listed         [NumCauses]int // stalled instructions listing each cause
}

func runCulpritTruth(t *testing.T, name string, args ...string) coverage {
	t.Helper()
	const evPeriod = 200 // DMISS and IMISS periods: [190, 210]
	samples := sampleCounter{}
	pc := hwsim.ProfileConfig{Counters: []hwsim.CounterSpec{
		{Events: []alpha.Event{alpha.EvDMiss}, PeriodMin: evPeriod - 10, PeriodMax: evPeriod + 10},
		{Events: []alpha.Event{alpha.EvIMiss}, PeriodMin: evPeriod - 10, PeriodMax: evPeriod + 10},
	}}
	run := codetest.RunWorkload(t, name, args, pc, samples)
	truth, code := run.Truth, run.Code(t)
	procs, err := code.BuildAll()
	if err != nil {
		t.Fatal(err)
	}

	const P = 1 << 16 // the CYCLES period S and F are expressed in
	var cov coverage
	for _, cp := range procs {
		executed := false
		for _, in := range cp.Insns {
			if tr := truth.PCs[in.PC]; tr != nil && tr.Executed > 0 {
				executed = true
				break
			}
		}
		if !executed {
			continue
		}
		p, err := NewProcedure(cp, StaticOptions{})
		if err != nil {
			t.Fatal(err)
		}
		f := &Frequencies{Class: make([]ClassEstimate, p.Classes.Count), p: p}
		for b := range cp.Blocks {
			n := uint64(0)
			if tr := truth.PCs[cp.Blocks[b].Start]; tr != nil {
				n = tr.Executed
			}
			c := &f.Class[p.Classes.Node[b]]
			c.F, c.Method, c.Confidence = max(c.F, float64(n)/P), Ratios, High
		}
		prof := &Profile{Samples: map[uint64]*Counts{}}
		prof.Periods[alpha.EvCycles] = P
		prof.Periods[alpha.EvDMiss], prof.Periods[alpha.EvIMiss] = evPeriod, evPeriod
		for _, in := range cp.Insns {
			c := &Counts{}
			if s := samples[in.PC]; s != nil {
				*c = *s
			}
			if tr := truth.PCs[in.PC]; tr != nil {
				c[alpha.EvCycles] = float64(tr.HeadCycles) / P
			}
			prof.Samples[in.PC] = c
		}
		e, err := Explain(p, f, prof, ExplainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range e.Insns {
			in := &e.Insns[i]
			tr := truth.PCs[in.PC]
			if tr == nil {
				continue
			}
			if len(in.Candidates) > 0 {
				cov.stalled++
				cov.candidates += len(in.Candidates)
				seen := [NumCauses]bool{}
				for _, c := range in.Candidates {
					if !seen[c.Cause] {
						seen[c.Cause] = true
						cov.listed[c.Cause]++
					}
				}
			}
			for sc, causes := range truthCauses {
				n := tr.Stall[sc]
				if n == 0 {
					continue
				}
				cov.total[sc] += n
				for _, c := range causes {
					if _, ok := hasCause(in, c); ok {
						cov.covered[sc] += n
						break
					}
				}
			}
		}
	}
	return cov
}

func (c coverage) share(sc alpha.StallCause) float64 {
	if c.total[sc] == 0 {
		return 1
	}
	return float64(c.covered[sc]) / float64(c.total[sc])
}

// TestCulpritsAgainstTruth pins floors on the share of each cause's
// dynamic stall cycles whose instruction lists the cause, and a ceiling
// on the candidates per stalled instruction (narrower is better, as long
// as the coverage holds).
func TestCulpritsAgainstTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("runs workloads on hwsim")
	}
	for _, w := range []struct {
		name string
		args []string
		// floor on all causes' coverage; ceiling on the candidates per
		// stalled instruction. Measured: stream 99.8%, 3.19 (4.09
		// before producers were bounded by their frequency); sort 96.2%,
		// 3.26 (4.11); recurse 99.9%, 3.11 (3.78). See docs/dcpicalc.md.
		all, perInsn float64
	}{
		{"stream", []string{"32768", "1"}, 0.99, 3.4},
		{"sort", []string{"3000"}, 0.95, 3.5},
		{"recurse", []string{"1"}, 0.99, 3.3},
	} {
		cov := runCulpritTruth(t, w.name, w.args...)
		var tot, covd uint64
		for sc := alpha.StallICache; sc < alpha.NumStallCauses; sc++ {
			if _, ok := truthCauses[sc]; !ok {
				continue
			}
			t.Logf("%s: %-10v %12d cycles, %.1f%% among the candidates", w.name, sc, cov.total[sc], 100*cov.share(sc))
			tot += cov.total[sc]
			covd += cov.covered[sc]
		}
		perInsn := float64(cov.candidates) / float64(max(cov.stalled, 1))
		t.Logf("%s: all dynamic stall cycles %d, %.1f%% covered; %d stalled instructions, %.2f candidates each",
			w.name, tot, 100*float64(covd)/float64(tot), cov.stalled, perInsn)
		for c := range NumCauses {
			if cov.listed[c] > 0 {
				t.Logf("%s: %-22v listed at %5.1f%% of the stalled instructions", w.name, c, 100*float64(cov.listed[c])/float64(max(cov.stalled, 1)))
			}
		}
		for sc := alpha.StallICache; sc < alpha.NumStallCauses; sc++ {
			if _, ok := truthCauses[sc]; ok && cov.total[sc] > tot/100 && cov.share(sc) < 0.85 {
				t.Errorf("%s: %v: only %.1f%% of %d cycles covered", w.name, sc, 100*cov.share(sc), cov.total[sc])
			}
		}
		if float64(covd) < w.all*float64(tot) {
			t.Errorf("%s: only %d of %d dynamic stall cycles covered, want %.0f%%", w.name, covd, tot, 100*w.all)
		}
		if perInsn > w.perInsn {
			t.Errorf("%s: %.2f candidates per stalled instruction, want at most %.1f", w.name, perInsn, w.perInsn)
		}
	}
}
