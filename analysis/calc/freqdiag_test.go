package calc

import (
	"fmt"
	"math"
	"os"
	"sort"
	"testing"

	"dcpi/hwsim/alpha"
	"dcpi/internal/testrand"
	"dcpi/workloads"
)

// TestDiagFrequency is a diagnostic, not a check: DCPI_CALC_DIAG=workload
// runs it with Poisson samples at P = 1024 (expected ones at P = 64 with
// DCPI_CALC_DIAG_EXPECTED=1) and prints the samples outside 15% by method
// and confidence, then the 40 classes with the most such samples: method,
// F, true F, issue points (and how many the truth says stalled).
// DCPI_CALC_DIAG_CLASS=proc/class adds that class's ratios beside each
// issue point's true head cycles per execution.
func TestDiagFrequency(t *testing.T) {
	name := os.Getenv("DCPI_CALC_DIAG")
	if name == "" {
		t.Skip()
	}
	var args []string
	for _, w := range workloads.All() {
		if w.Name == name {
			args = w.DefaultArgs
		}
	}
	r := runWorkload(t, name, args...)
	rng := testrand.New(t)
	period := 1024.0
	if os.Getenv("DCPI_CALC_DIAG_EXPECTED") != "" {
		period, rng = 64, nil
	}
	byProc, ranges := synthProfiles(r, period, rng)
	type row struct {
		proc           string
		class          int
		est            ClassEstimate
		truthF         float64
		s, bad, ispts  float64
		blocks, dynall int
	}
	var rows []row
	r2 := func(pc uint64) *alpha.PCTruth {
		if tp := r.truth.PCs[pc]; tp != nil {
			return tp
		}
		return &alpha.PCTruth{}
	}
	byMethod := map[string][2]float64{}
	for start, prof := range byProc {
		g, _ := r.code.Build(ranges[start])
		p, _ := NewProcedure(g, StaticOptions{})
		f, _ := EstimateFrequencies(p, prof, FreqOptions{})
		cls := map[int]*row{}
		for b := range g.Blocks {
			c := p.Classes.Node[b]
			e := f.Class[c]
			rw := cls[c]
			if rw == nil {
				rw = &row{proc: g.Name, class: c, est: e}
				cls[c] = rw
			}
			rw.blocks++
			for _, in := range p.Sched[b].Insns {
				s := prof.At(in.PC, alpha.EvCycles)
				tp := r.truth.PCs[in.PC]
				if tp == nil {
					tp = &alpha.PCTruth{}
				}
				if tp.Executed > 0 && rw.truthF == 0 {
					rw.truthF = float64(tp.Executed) / period
				}
				rw.s += s
				if in.M > 0 && tp.Executed > 0 {
					rw.ispts++
					if float64(tp.HeadCycles)/float64(tp.Executed) > float64(in.M)+0.5 {
						rw.dynall++
					}
				}
				exec := float64(tp.Executed)
				if s > 0 && (exec == 0 || math.Abs(e.F*period/exec-1) > 0.15) {
					rw.bad += s
				}
			}
		}
		for _, rw := range cls {
			if os.Getenv("DCPI_CALC_DIAG_CLASS") == fmt.Sprintf("%s/%d", g.Name, rw.class) {
				for _, r := range rw.est.Ratios {
					tp := r2(r.PC)
					t.Logf("  %#x from %#x S=%.0f M=%.0f v=%.2f used=%v  truthCPI=%.2f exec=%d", r.PC, r.From, r.S, r.M, r.Value(), r.Used, float64(tp.HeadCycles)/float64(max(tp.Executed, 1)), tp.Executed)
				}
			}
			k := fmt.Sprintf("%v/%v", rw.est.Method, rw.est.Confidence)
			v := byMethod[k]
			v[0] += rw.s
			v[1] += rw.bad
			byMethod[k] = v
			rows = append(rows, *rw)
		}
	}
	for k, v := range byMethod {
		t.Logf("%-22s samples %7.0f bad %7.0f", k, v[0], v[1])
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].bad > rows[j].bad })
	for _, rw := range rows[:min(40, len(rows))] {
		t.Logf("%-20s c%-4d %v/%v F=%.2f true=%.2f S=%.0f bad=%.0f ips=%d(dyn %d) blocks=%d ratios=%d", rw.proc, rw.class, rw.est.Method, rw.est.Confidence, rw.est.F, rw.truthF, rw.s, rw.bad, int(rw.ispts), rw.dynall, rw.blocks, len(rw.est.Ratios))
	}
}
