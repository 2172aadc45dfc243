package calc

import (
	"testing"

	"dcpi/analysis/cfg"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
	"dcpi/workloads"
)

// BenchmarkEstimate estimates every procedure of the interp image, with
// samples on every instruction (F·M, and a stall on every seventh), beside
// its baseline in the same run: NewProcedure alone (the CFG's classes and
// the block schedules the estimate starts from).
func BenchmarkEstimate(b *testing.B) {
	data, err := workloads.Binary("interp")
	if err != nil {
		b.Fatal(err)
	}
	im, err := elfimage.Parse(data, "interp")
	if err != nil {
		b.Fatal(err)
	}
	c, err := cfg.NewCode(im, cfg.Options{})
	if err != nil {
		b.Fatal(err)
	}
	graphs, err := c.BuildAll()
	if err != nil {
		b.Fatal(err)
	}
	var procs []*Procedure
	var profs []*Profile
	insns := 0
	for _, g := range graphs {
		p, err := NewProcedure(g, StaticOptions{})
		if err != nil {
			continue // no code
		}
		prof := &Profile{Samples: map[uint64]*Counts{}}
		prof.Periods[alpha.EvCycles] = 65536
		for bl, s := range p.Sched {
			f := float64(100 + 37*(bl%11))
			for i, in := range s.Insns {
				var n Counts
				n[alpha.EvCycles] = f * float64(in.M)
				if i%7 == 3 {
					n[alpha.EvCycles] += 5 * f
				}
				prof.Samples[in.PC] = &n
				insns++
			}
		}
		procs, profs = append(procs, p), append(profs, prof)
	}
	b.Run("NewProcedure", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range procs {
				if _, err := NewProcedure(p.CFG, StaticOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(insns), "insns")
	})
	b.Run("EstimateFrequencies", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i, p := range procs {
				if _, err := EstimateFrequencies(p, profs[i], FreqOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(insns), "insns")
	})
}
