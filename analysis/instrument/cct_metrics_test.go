package instrument

import (
	"bytes"
	"slices"
	"testing"

	"dcpi/analysis/cct"
	"dcpi/hwsim/alpha"
	"dcpi/workloads"
)

// procNodes returns the records of the procedure named name.
func procNodes(t *testing.T, tr *cct.Tree, m *Manifest, name string) []*cct.Node {
	t.Helper()
	var start uint64
	for _, p := range m.Procs {
		if p.Name == name {
			start = p.Start
		}
	}
	if start == 0 {
		t.Fatalf("no procedure %s instrumented", name)
	}
	var out []*cct.Node
	tr.Walk(func(n *cct.Node) {
		if n != tr.Root && n.Proc == start {
			out = append(out, n)
		}
	})
	if len(out) == 0 {
		t.Fatalf("no context of %s", name)
	}
	return out
}

// sumNodes sums metric names over ns (their own metrics).
func sumNodes(tr *cct.Tree, ns []*cct.Node, names ...string) []uint64 {
	out := make([]uint64, len(names))
	for i, name := range names {
		k := tr.Metric(name)
		for _, n := range ns {
			out[i] += n.Metrics[k]
		}
	}
	return out
}

// TestCCTMetrics instruments ptrchase in CCT mode with metrics and runs it
// on hwsim. A record's metrics are its own, callees excluded (sec. 3.1's
// convention, which sec. 4.3's reads along backedges presuppose):
//
//   - chase calls nothing in its loop, so its context must hold the
//     D-cache misses the original's chase takes (hwsim's ground truth of
//     the uninstrumented run, the reference only), plus at most 10% (the
//     instrumentation's own loads, evicted by the ring), and at least the
//     original's chase's cycles;
//   - main's own record holds almost none of them (a callee's events
//     counted in its caller would put them there);
//   - every cycle and event from the first instrumented entry to the dump
//     falls in exactly one record, so the records together hold what the
//     process took, less only what ran before the first entry and after
//     the dump's read (the dump's own system calls and exit): within 1%
//     (0.1% on this run), never more;
//   - the calls are the CCT mode's without metrics, record for record.
func TestCCTMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ptrchase three times")
	}
	const steps = 20000
	args := []string{"16384", "20000"}
	orig, err := workloads.Binary("ptrchase")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Instrument(orig, "ptrchase", Options{Mode: ModeCCT, DumpPath: "pp.out", Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"calls", "cycles", "dmiss", "imiss"}
	if !slices.Equal(res.Manifest.CCTMetrics, names) {
		t.Fatalf("manifest CCT metrics %v, want %v", res.Manifest.CCTMetrics, names)
	}
	wantOut, _, truth, _, _ := simRunTimed(t, "ptrchase", orig, args)
	out, p, dump := runForMetrics(t, "ptrchase", res.ELF, args)
	if !bytes.Equal(out, wantOut) {
		t.Fatalf("output %q, want the original's %q", out, wantOut)
	}
	got, err := ReadCCT(res.ELF, dump)
	if err != nil {
		t.Fatal(err)
	}
	tr := got.Tree
	if !slices.Equal(tr.Metrics, names) {
		t.Fatalf("tree metrics %v", tr.Metrics)
	}
	for name, v := range got.Special {
		if v != 0 {
			t.Errorf("special counter %s = %d", name, v)
		}
	}

	var orig0 [3]uint64 // the original's chase: cycles, dmiss, imiss
	for _, pi := range res.Manifest.Procs {
		if pi.Name != "chase" {
			continue
		}
		for pc := pi.Start; pc < pi.End; pc += 4 {
			if e := truth.PCs[pc]; e != nil {
				orig0[0] += e.HeadCycles
				orig0[1] += e.Events[alpha.EvDMiss]
				orig0[2] += e.Events[alpha.EvIMiss]
			}
		}
	}
	if orig0[1] < steps {
		t.Fatalf("the original's chase took %d D-cache misses in %d steps: the test's premise fails", orig0[1], steps)
	}
	chase := sumNodes(tr, procNodes(t, tr, res.Manifest, "chase"), names...)
	if chase[2] < orig0[1] || chase[2] > orig0[1]+orig0[1]/10 {
		t.Errorf("chase's context took %d D-cache misses; the original's chase %d, want that plus at most 10%% (the instrumentation's own)", chase[2], orig0[1])
	}
	if chase[1] < orig0[0] {
		t.Errorf("chase's context took %d cycles, fewer than the original's chase %d", chase[1], orig0[0])
	}
	mainOwn := sumNodes(tr, procNodes(t, tr, res.Manifest, "main"), names...)
	if mainOwn[2] >= chase[2]/20 {
		t.Errorf("main's own records took %d D-cache misses, chase's %d: a callee's events counted in its caller", mainOwn[2], chase[2])
	}

	// The totals: the process's (hwsim's per-process counts, which rdpic
	// reads; rpcc's cycles run with the machine, one CPU, one process).
	tot := tr.Totals()
	proc := []uint64{p.Cycles, p.Events[alpha.EvDMiss], p.Events[alpha.EvIMiss]}
	for i, name := range names[1:] {
		all, want := tot[i+1], proc[i]
		slack := want / 100
		if all > want || all+slack < want {
			t.Errorf("%s: all records hold %d, the process took %d: want at most that and within %d of it", name, all, want, slack)
		}
	}
	if tr.Root.Metrics[1] != 0 {
		t.Errorf("the root was charged %v", tr.Root.Metrics)
	}
	// Every record entered ran some cycles of its own, and no record took
	// more misses than cycles.
	tr.Walk(func(n *cct.Node) {
		if n == tr.Root {
			return
		}
		if m := n.Metrics; m[0] > 0 && m[1] == 0 || m[2] > m[1] || m[3] > m[1] {
			t.Errorf("record of %#x: %v (calls, cycles, dmiss, imiss)", n.Proc, m)
		}
	})
	t.Logf("process %v (cycles, dmiss, imiss); all records %v; chase's %v; main's own %v; the original's chase %v", proc, tot, chase, mainOwn, orig0)

	// The calls are the CCT mode's without metrics.
	plain, err := Instrument(orig, "ptrchase", Options{Mode: ModeCCT, DumpPath: "pp.out"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, plainDump := runForMetrics(t, "ptrchase", plain.ELF, args)
	want, err := ReadCCT(plain.ELF, plainDump)
	if err != nil {
		t.Fatal(err)
	}
	if n := compareCCT(t, got.Tree, want.Tree, procNamer(res.Manifest)); n != 0 {
		t.Errorf("%d records differ from the CCT mode's without metrics", n)
	}
}

// TestCCTMetricsEqualsOracle: with metrics, the tree's shape and calls
// still equal the oracle's exactly (TestCCTEqualsOracle's comparison), on
// sort (an indirect call) and ccdriver (fork, and execve of itself: a
// child's records start from zero and its running activation restarts,
// so a record's metrics never take a delta across the fork), with 4 KB
// heap chunks; every record entered ran cycles of its own.
func TestCCTMetricsEqualsOracle(t *testing.T) {
	if testing.Short() {
		t.Skip("runs workloads with the oracle")
	}
	for _, tc := range cctCases {
		if tc.name != "sort" && tc.name != "ccdriver" {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			got, want, res, cyc := runCCTCase(t, tc.name, tc.args, Options{Mode: ModeCCT, Metrics: true, CCTChunkBytes: 4096})
			for name, v := range got.Special {
				if v != 0 {
					t.Errorf("special counter %s = %d", name, v)
				}
			}
			if got.Unreached != 0 {
				t.Errorf("%d call records unreached", got.Unreached)
			}
			compareCCT(t, got.Tree, projectOracle(want, instrumentedSet(res.Manifest)), procNamer(res.Manifest))
			tr := got.Tree
			if len(tr.Metrics) != 4 {
				t.Fatalf("tree metrics %v", tr.Metrics)
			}
			tr.Walk(func(n *cct.Node) {
				if n == tr.Root {
					return
				}
				// A record's cycles are modular 32-bit deltas summed: a
				// delta taken across a fork from the parent's start would
				// be the parent's, and one taken the wrong way round
				// about 2^32.
				if m := n.Metrics; m[0] > 0 && (m[1] == 0 || m[1] > cyc[1]) || m[2] > m[1] || m[3] > m[1] {
					t.Errorf("record of %#x: %v (calls, cycles, dmiss, imiss); the run took %d cycles", n.Proc, m, cyc[1])
				}
			})
			tot := tr.Totals()
			if tot[1] > cyc[1]*2 {
				t.Errorf("records hold %d cycles, the machine ran %d (two processes at most at a time)", tot[1], cyc[1])
			}
			t.Logf("%s: records hold %v (calls, cycles, dmiss, imiss); the machine ran %d cycles, the original %d", tc.name, tot, cyc[1], cyc[0])
		})
	}
}
