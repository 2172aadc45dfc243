package reproduce

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestRunAll runs two small workloads and holds the rows to what must be
// true of any run: every path and procedure in exactly one class, the
// classes' misses adding up, instrumentation costing cycles (metrics more
// than paths alone) and adding instructions, and ptrchase's misses
// concentrated in a few dense paths. The JSON rows read back as written.
func TestRunAll(t *testing.T) {
	if testing.Short() {
		t.Skip("runs workloads five times each")
	}
	rows, err := RunAll([]string{"sort:300", "ptrchase:8192,8000"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		h := r.Hot
		if n := h.Dense.Num + h.Sparse.Num + h.Cold.Num; n != h.All.Num || n == 0 {
			t.Errorf("%s: %d paths in classes, %d in all", r.Workload, n, h.All.Num)
		}
		if m := h.Dense.Misses + h.Sparse.Misses + h.Cold.Misses; m != h.All.Misses || m == 0 {
			t.Errorf("%s: %d misses in classes, %d in all", r.Workload, m, h.All.Misses)
		}
		p := r.Procs
		if m := p.Dense.Misses + p.Sparse.Misses + p.Cold.Misses; m != p.Misses || m != h.All.Misses {
			t.Errorf("%s: procedures hold %d misses, paths %d", r.Workload, m, h.All.Misses)
		}
		if paths := p.Dense.Paths + p.Sparse.Paths + p.Cold.Paths; paths != h.All.Num {
			t.Errorf("%s: procedures ran %d paths, Table 4 counts %d", r.Workload, paths, h.All.Num)
		}
		if !(r.PathsRatio > 1 && r.FlowHWRatio > r.PathsRatio && r.ContextRatio > 1) {
			t.Errorf("%s: overhead paths %.2f, flow+HW %.2f, context %.2f: want 1 < paths < flow+HW and 1 < context", r.Workload, r.PathsRatio, r.FlowHWRatio, r.ContextRatio)
		}
		if len(r.Perturbation) != 6 || r.Perturbation[1] <= 1 || r.Perturbation[0] <= 1 {
			t.Errorf("%s: perturbation %v: the instrumented image must run more instructions and cycles", r.Workload, r.Perturbation)
		}
		// Context+HW reads the counters at every entry and exit: it costs
		// more than counting calls, and its image runs more instructions
		// and cycles than the original's.
		if !(r.ContextHWRatio > r.ContextRatio) {
			t.Errorf("%s: overhead context %.2f, context+HW %.2f: want the metrics to cost more", r.Workload, r.ContextRatio, r.ContextHWRatio)
		}
		// Context+Flow does what context does and counts paths too.
		if !(r.ContextFlowRatio > r.ContextRatio) {
			t.Errorf("%s: overhead context %.2f, context+flow %.2f: want the paths to cost more", r.Workload, r.ContextRatio, r.ContextFlowRatio)
		}
		if len(r.PerturbationC) != 6 || r.PerturbationC[1] <= 1 || r.PerturbationC[0] <= 1 {
			t.Errorf("%s: perturbation C %v: the instrumented image must run more instructions and cycles", r.Workload, r.PerturbationC)
		}
		for name, v := range r.Special {
			if v != 0 {
				t.Errorf("%s: %d paths %s", r.Workload, v, name)
			}
		}
	}
	// ptrchase: chase's loop takes most of the misses at a high rate.
	if h := rows[1].Hot; h.Dense.Num < 1 || 2*h.Dense.Misses < h.All.Misses {
		t.Errorf("ptrchase: dense paths %+v of %+v: the pointer chase is not found", h.Dense, h.All)
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, rows); err != nil {
		t.Fatal(err)
	}
	var back []Row
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || !reflect.DeepEqual(back, rows) {
		t.Errorf("JSON rows read back differ (%v)", err)
	}
}

// TestRunAllRefusesAnUnknownWorkload before running anything.
func TestRunAllRefusesAnUnknownWorkload(t *testing.T) {
	if _, err := RunAll([]string{"nosuch", "sort"}); err == nil || !strings.Contains(err.Error(), "no workload") {
		t.Errorf("an unknown workload: %v", err)
	}
	if _, _, err := ParseWorkloadArg("sort:"); err != nil {
		t.Errorf("sort with no arguments: %v", err)
	}
}
