package instrument

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"sort"
	"testing"

	"dcpi/analysis/cct"
	"dcpi/analysis/oracle"
	"dcpi/hwsim"
)

// flattenPaths lists the path counts of a tree's records of the
// procedures counted says are counted, keyed by the record's chain and
// the path ID.
func flattenPaths(t *cct.Tree, name func(uint64) string, counted func(uint64) bool) map[string]uint64 {
	out := map[string]uint64{}
	chain := map[*cct.Node]string{t.Root: "T"}
	t.Walk(func(n *cct.Node) {
		if n == t.Root {
			return
		}
		chain[n] = fmt.Sprintf("%s/%s@%#x", chain[n.Parent], name(n.Proc), n.CallSite)
		if !counted(n.Proc) {
			return
		}
		for id, c := range n.Paths {
			out[fmt.Sprintf("%s path %d", chain[n], id)] = c
		}
	})
	return out
}

// diffPaths returns where got's and want's per-context path counts differ.
func diffPaths(got, want map[string]uint64) []string {
	var diffs []string
	for k, v := range want {
		if g, ok := got[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("missing %s (oracle: %d)", k, v))
		} else if g != v {
			diffs = append(diffs, fmt.Sprintf("%s: %d, oracle %d", k, g, v))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("extra %s (%d)", k, v))
		}
	}
	sort.Strings(diffs)
	return diffs
}

// pathCounted reports the procedures whose records count paths and
// whose paths are compared with the oracle's (not excludedFromPaths:
// glibc's _dlfo_* really run differently in the instrumented image).
func pathCounted(m *Manifest) func(uint64) bool {
	in := map[uint64]bool{}
	for _, p := range m.Procs {
		if p.NumPaths > 0 && excludedFromPaths(p.Name) == "" {
			in[p.Start] = true
		}
	}
	return func(a uint64) bool { return in[a] }
}

// TestCCTPathsEqualOracle is Context+Flow's acceptance test: each
// workload instrumented with --mode cct --paths prints what the original
// prints on hwsim, its tree equals the oracle's (as TestCCTEqualsOracle),
// and every record's path counts equal the oracle's per-node path counts
// of the uninstrumented run exactly, both ways, after the same
// projection (glibc's _dlfo_* excepted, as in TestPathCountsEqualOracle).
// The dump is the measurement; the oracle the reference.
func TestCCTPathsEqualOracle(t *testing.T) {
	if testing.Short() {
		t.Skip("runs workloads with the oracle")
	}
	for _, tc := range cctCases {
		t.Run(tc.name, func(t *testing.T) {
			skipLongOracle(t, tc.name, "interp", "recurse")
			got, want, res, cyc := runCCTCase(t, tc.name, tc.args, Options{Mode: ModeCCT, CCTPaths: true, CCTChunkBytes: 4096})
			for name, v := range got.Special {
				if v != 0 {
					t.Errorf("special counter %s = %d, want 0", name, v)
				}
			}
			if got.Unreached != 0 {
				t.Errorf("%d call records unreached", got.Unreached)
			}
			proj := projectOracle(want, instrumentedSet(res.Manifest))
			name := procNamer(res.Manifest)
			compareCCT(t, got.Tree, proj, name)
			counted := pathCounted(res.Manifest)
			gp, wp := flattenPaths(got.Tree, name, counted), flattenPaths(proj, name, counted)
			for i, d := range diffPaths(gp, wp) {
				if i == 20 {
					t.Errorf("... and more")
					break
				}
				t.Error(d)
			}
			lists, arrays := 0, 0
			for _, p := range res.Manifest.Procs {
				switch {
				case p.NumPaths == 0:
				case p.Hashed:
					lists++
				default:
					arrays++
				}
			}
			var total uint64
			for _, c := range gp {
				total += c
			}
			if len(gp) == 0 || total == 0 {
				t.Fatal("no paths counted")
			}
			t.Logf("%s: %d (context, path) counts, %d paths run; %d procedures count in arrays, %d in lists, %d without paths; heap %d bytes; cycles %d -> %d (%.2fx)",
				tc.name, len(gp), total, arrays, lists, len(res.Manifest.Procs)-arrays-lists, got.HeapBytes, cyc[0], cyc[1], float64(cyc[1])/float64(cyc[0]))
		})
	}
}

// TestCCTPathsWrongIncrementFails: an instrumenter whose every Add adds
// one too many must fail the per-context comparison.
func TestCCTPathsWrongIncrementFails(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a workload with the oracle")
	}
	defer func() { cctMutation = 0 }()
	cctMutation = cctWrongAdd
	r := runCCTCaseErr(t, "sort", []string{"2000"}, Options{Mode: ModeCCT, CCTPaths: true})
	if r.err != nil {
		t.Fatal(r.err)
	}
	name := procNamer(r.res.Manifest)
	counted := pathCounted(r.res.Manifest)
	d := diffPaths(flattenPaths(r.got.Tree, name, counted), flattenPaths(projectOracle(r.want, instrumentedSet(r.res.Manifest)), name, counted))
	if len(d) == 0 {
		t.Fatal("a wrong increment passed the comparison")
	}
	t.Logf("wrong increment: %d differences (out_of_range %d), e.g. %s", len(d), r.got.Special["out_of_range"], d[0])
}

// TestCCTPathsOnQemu runs tiny, recurse, sort and interp instrumented
// with --mode cct --paths on qemu-alpha (skipped without it): the
// original's output, and the per-context path counts of the program's own
// procedures equal to the oracle's on hwsim.
func TestCCTPathsOnQemu(t *testing.T) {
	qemu, err := exec.LookPath("qemu-alpha")
	if err != nil {
		t.Skip("qemu-alpha not installed")
	}
	if testing.Short() {
		t.Skip("runs workloads")
	}
	for _, tc := range cctCases {
		if tc.name == "ccdriver" {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			orig, res := instrumentWorkloadOpt(t, tc.name, Options{Mode: ModeCCT, CCTPaths: true})
			dump := qemuBoth(t, qemu, t.TempDir(), tc.name, tc.args, orig, res.ELF)
			got, err := ReadCCT(res.ELF, dump)
			if err != nil {
				t.Fatal(err)
			}
			var o *oracle.Oracle
			simRunHook(t, tc.name, orig, tc.args, func(m *hwsim.Machine, files map[string][]byte) func() {
				o = oracle.New(oracle.FilesResolver(files))
				o.Attach(m)
				return o.Finish
			})
			inst := instrumentedSet(res.Manifest)
			own := func(uint64) bool { return true }
			if tc.name != "tiny" {
				own = ownCode(t, orig)
			}
			seen := func(a uint64) bool { return inst(a) && own(a) }
			name := procNamer(res.Manifest)
			counted := pathCounted(res.Manifest)
			gp := flattenPaths(projectOracle(got.Tree, seen), name, counted)
			wp := flattenPaths(projectOracle(o.Images["/bin/"+tc.name].Tree, seen), name, counted)
			for i, d := range diffPaths(gp, wp) {
				if i == 20 {
					t.Errorf("... and more")
					break
				}
				t.Error(d)
			}
			if len(gp) == 0 {
				t.Fatal("no paths of the program's own code")
			}
			t.Logf("%s: %d (context, path) counts of the program's own code equal the oracle's", tc.name, len(gp))
		})
	}
}

// TestCCTPathsOptions: --paths is for the CCT mode, and not with
// --metrics.
func TestCCTPathsOptions(t *testing.T) {
	orig, _ := instrumentWorkload(t, "tiny", ModePixie)
	for _, opt := range []Options{{Mode: ModePaths, CCTPaths: true}, {Mode: ModePixie, CCTPaths: true}, {Mode: ModeCCT, CCTPaths: true, Metrics: true}} {
		if _, err := Instrument(orig, "tiny", opt); err == nil {
			t.Errorf("%+v: accepted", opt)
		}
	}
}

// TestCCTPathsCorruptDump: a Context+Flow dump of sort (path arrays and
// path lists) with one word changed, at 600 places drawn at random, is
// read or refused with an error, never a panic.
func TestCCTPathsCorruptDump(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a workload")
	}
	_, res := instrumentWorkloadOpt(t, "sort", Options{Mode: ModeCCT, CCTPaths: true})
	_, _, _, _, files := simRun(t, "sort", res.ELF, []string{"200"})
	dump := files["pp.out"].Bytes()
	if _, err := ReadCCT(res.ELF, dump); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	words := (len(dump) - headerSize) / 8
	refused := 0
	for range 600 { // FuzzCCTDump searches further
		off := headerSize + 8*rng.IntN(words)
		v := [...]uint64{0, 1, 2, 1 << 40, ^uint64(0), rng.Uint64()}[rng.IntN(6)]
		bad := append([]byte{}, dump...)
		for i := range 8 {
			bad[off+i] = byte(v >> (8 * i))
		}
		if _, err := ReadCCT(res.ELF, bad); err != nil {
			refused++
		}
	}
	if refused == 0 {
		t.Error("no corruption refused")
	}
	t.Logf("%d of 600 corrupted dumps refused", refused)
}
