package pptables

import (
	"math"
	"testing"
)

// paths of a made-up program: 1000 instructions and 100 misses in all,
// so the program's rate is 0.1 a instruction and 1% is one miss.
var example = []PathStat{
	{Proc: "a", ID: 0, Instructions: 100, Misses: 50}, // hot, dense (0.5)
	{Proc: "a", ID: 1, Instructions: 500, Misses: 40}, // hot, sparse (0.08)
	{Proc: "b", ID: 0, Instructions: 10, Misses: 1},   // hot (exactly 1%), rate 0.1: not above, sparse
	{Proc: "b", ID: 1, Instructions: 300, Misses: 9},  // hot, sparse (0.03)
	{Proc: "c", ID: 0, Instructions: 90, Misses: 0},   // cold
}

func TestHotPaths(t *testing.T) {
	got := HotPaths(example, HotThreshold)
	want := Table4{
		All:    Group{5, 1000, 100},
		Dense:  Group{1, 100, 50},
		Sparse: Group{3, 810, 50},
		Cold:   Group{1, 90, 0},
	}
	if got != want {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	// A higher threshold moves paths to cold.
	if got := HotPaths(example, 0.45); got.Dense.Num != 1 || got.Sparse.Num != 0 || got.Cold.Num != 4 {
		t.Errorf("threshold 45%%: %+v", got)
	}
	if got := HotPaths(nil, HotThreshold); got != (Table4{}) {
		t.Errorf("no paths: %+v", got)
	}
}

func TestHotProcedures(t *testing.T) {
	// a: 600 instructions, 90 misses (0.15: dense); b: 310, 10 (sparse);
	// c: cold.
	got := HotProcedures(example, HotThreshold)
	want := Table5{Dense: ProcGroup{1, 2, 90}, Sparse: ProcGroup{1, 2, 10}, Cold: ProcGroup{1, 1, 0}, Misses: 100}
	if got != want {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if got.Dense.PathsPerProc() != 2 || (ProcGroup{}).PathsPerProc() != 0 {
		t.Errorf("paths per procedure %v", got.Dense.PathsPerProc())
	}
}

func TestPerturbation(t *testing.T) {
	o := Totals{Cycles: 100, Instructions: 50, DMiss: 10, IMiss: 0, Mispredicts: 4, WBFull: 8}
	n := Totals{Cycles: 180, Instructions: 75, DMiss: 11, IMiss: 3, Mispredicts: 2, WBFull: 8}
	got := Perturbation(o, n)
	want := []float64{1.8, 1.5, 1.1, 0, 0.5, 1}
	if len(got) != len(PerturbationMetrics) {
		t.Fatalf("%d ratios for %d metrics", len(got), len(PerturbationMetrics))
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			t.Errorf("%s: %v, want %v", PerturbationMetrics[i], got[i], want[i])
		}
	}
}
