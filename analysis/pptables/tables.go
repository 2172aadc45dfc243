// Package pptables computes the PLDI'97 paper's tables of overhead,
// perturbation and hot paths (Ammons, Ball and Larus, sec. 6: Tables 1,
// 2, 4 and 5) from runs of instrumented programs: pure functions of run
// totals and of path profiles whose paths carry their instructions and
// D-cache misses. Running the programs is the caller's (dcpi pp tables);
// the profiles are the instrumented programs' own measurements.
package pptables

import (
	"cmp"
	"slices"
)

// Totals are one run's counts. Perturbation compares two runs' hwsim
// ground truth: the program image's user-mode cycles, instructions and
// events, as the paper's counters counted user mode only.
type Totals struct {
	Cycles       uint64 `json:"cycles"`
	Instructions uint64 `json:"instructions"`
	DMiss        uint64 `json:"dmiss"`
	IMiss        uint64 `json:"imiss"`
	Mispredicts  uint64 `json:"mispredicts"`
	WBFull       uint64 `json:"wbfull"`
}

// PerturbationMetrics name Perturbation's ratios, in order: the paper's
// Table 2 rows that hwsim counts (its D read and write misses are one
// row here, the 21164's D-cache missing on loads only; its store-buffer
// row is the write buffer's full stalls; it has no FP stall row).
var PerturbationMetrics = []string{"cycles", "instructions", "dmiss", "imiss", "mispredicts", "wbfull"}

// Perturbation returns inst's totals over orig's, 0 where orig's is 0.
func Perturbation(orig, inst Totals) []float64 {
	o := []uint64{orig.Cycles, orig.Instructions, orig.DMiss, orig.IMiss, orig.Mispredicts, orig.WBFull}
	n := []uint64{inst.Cycles, inst.Instructions, inst.DMiss, inst.IMiss, inst.Mispredicts, inst.WBFull}
	out := make([]float64, len(o))
	for i := range o {
		out[i] = Ratio(n[i], o[i])
	}
	return out
}

// Ratio is a/b, 0 when b is 0.
func Ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// PathStat is one executed path: its procedure, ID, executions, the
// instructions executed along it (its blocks' lengths times its count)
// and the D-cache misses it took.
type PathStat struct {
	Proc         string
	ID           uint64
	Count        uint64
	Instructions uint64
	Misses       uint64
}

// HotThreshold is the paper's: a hot path or procedure takes at least 1%
// of the program's misses.
const HotThreshold = 0.01

// Group is a set of paths: how many, and their instructions and misses.
type Group struct {
	Num          int    `json:"num"`
	Instructions uint64 `json:"instructions"`
	Misses       uint64 `json:"misses"`
}

// Table4 classifies paths by misses (the paper's Table 4): hot paths take
// at least the threshold's share of all misses; dense hot paths have a
// miss rate (misses per instruction) above the program's, that is a
// larger share of the misses than of the instructions; sparse ones do
// not; the rest are cold.
type Table4 struct {
	All    Group `json:"all"`
	Dense  Group `json:"dense"`
	Sparse Group `json:"sparse"`
	Cold   Group `json:"cold"`
}

// HotPaths builds Table 4 from ps with threshold (HotThreshold).
func HotPaths(ps []PathStat, threshold float64) Table4 {
	var t Table4
	for _, p := range ps {
		t.All.add(p.Instructions, p.Misses)
	}
	for _, p := range ps {
		switch classify(p.Instructions, p.Misses, t.All, threshold) {
		case dense:
			t.Dense.add(p.Instructions, p.Misses)
		case sparse:
			t.Sparse.add(p.Instructions, p.Misses)
		default:
			t.Cold.add(p.Instructions, p.Misses)
		}
	}
	return t
}

func (g *Group) add(insts, misses uint64) {
	g.Num++
	g.Instructions += insts
	g.Misses += misses
}

type class int

const (
	cold class = iota
	dense
	sparse
)

// classify places a path or procedure against the program's totals.
func classify(insts, misses uint64, all Group, threshold float64) class {
	if all.Misses == 0 || float64(misses) < threshold*float64(all.Misses) {
		return cold
	}
	// misses/insts > all.Misses/all.Instructions, without dividing.
	if float64(misses)*float64(all.Instructions) > float64(all.Misses)*float64(insts) {
		return dense
	}
	return sparse
}

// ProcGroup is a set of procedures: how many, the paths they executed,
// and their misses.
type ProcGroup struct {
	Num    int    `json:"num"`
	Paths  int    `json:"paths"`
	Misses uint64 `json:"misses"`
}

// PathsPerProc is the average number of paths a procedure of the group
// executed.
func (g ProcGroup) PathsPerProc() float64 {
	if g.Num == 0 {
		return 0
	}
	return float64(g.Paths) / float64(g.Num)
}

// Table5 classifies procedures as Table4 does paths (the paper's Table
// 5), with each procedure's misses and instructions summed over its
// paths.
type Table5 struct {
	Dense  ProcGroup `json:"dense"`
	Sparse ProcGroup `json:"sparse"`
	Cold   ProcGroup `json:"cold"`
	Misses uint64    `json:"misses"` // all procedures'
}

// HotProcedures builds Table 5 from ps with threshold.
func HotProcedures(ps []PathStat, threshold float64) Table5 {
	type proc struct {
		name  string
		paths int
		g     Group
	}
	by := map[string]*proc{}
	var all Group
	for _, p := range ps {
		r := by[p.Proc]
		if r == nil {
			r = &proc{name: p.Proc}
			by[p.Proc] = r
		}
		r.paths++
		r.g.Instructions += p.Instructions
		r.g.Misses += p.Misses
		all.add(p.Instructions, p.Misses)
	}
	procs := make([]*proc, 0, len(by))
	for _, r := range by {
		procs = append(procs, r)
	}
	slices.SortFunc(procs, func(a, b *proc) int { return cmp.Compare(a.name, b.name) })
	t := Table5{Misses: all.Misses}
	for _, r := range procs {
		g := &t.Cold
		switch classify(r.g.Instructions, r.g.Misses, all, threshold) {
		case dense:
			g = &t.Dense
		case sparse:
			g = &t.Sparse
		}
		g.Num++
		g.Paths += r.paths
		g.Misses += r.g.Misses
	}
	return t
}
