package instrument

import (
	"bytes"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"dcpi/analysis/cct"
	"dcpi/analysis/oracle"
	"dcpi/hwsim"
)

// cctCases are the workloads the CCT mode is held to the oracle on: tiny
// has no glibc, recurse recurses (folded into the ancestor record), sort
// calls its comparator through qsort (an indirect call), interp
// dispatches through function pointers, ccdriver forks and execs itself.
var cctCases = []struct {
	name string
	args []string
	// minRecords is a floor on the contexts built: fewer means the
	// records are not working.
	minRecords int
}{
	{"tiny", nil, 2},
	{"recurse", []string{"1"}, 50},
	{"sort", []string{"2000"}, 50},
	{"interp", []string{"1"}, 50},
	{"ccdriver", []string{"1"}, 50},
}

// projectOracle returns the oracle's calling context tree as an
// instrumenter that sees only the procedures in seen can build it: the
// record of a procedure not seen (left uninstrumented, or code outside
// every procedure) is contracted into its parent, its callees attaching
// to the parent at the call site through which the contracted record was
// reached (gCSP is what that parent's call site set, and the exits of
// the callees restore it), and recursion is folded again (cct.Child)
// where the contraction brings a procedure's records onto one chain.
// Only the calls metric is kept, and the seen records' path counts
// (Context+Flow; a record folded into another adds its paths there, as
// the runtime's does). With every procedure seen it is the oracle's tree
// with its calls and paths.
func projectOracle(o *cct.Tree, seen func(proc uint64) bool) *cct.Tree {
	t := cct.New(MetricCallsName)
	ci := o.Metric(oracle.MetricCalls)
	var walk func(n, dst *cct.Node, contracted bool, site uint64)
	walk = func(n, dst *cct.Node, contracted bool, site uint64) {
		siteOf := func(s uint64) uint64 {
			if contracted {
				return site
			}
			return s
		}
		for _, c := range n.Sorted() {
			s := siteOf(c.CallSite)
			if seen(c.Proc) {
				d := t.Child(dst, c.Proc, s)
				d.Metrics[0] += c.Metrics[ci]
				for id, k := range c.Paths {
					d.AddPath(id, k)
				}
				walk(c, d, false, 0)
			} else {
				walk(c, dst, true, s)
			}
		}
		for _, b := range n.Recursive {
			if seen(b.To.Proc) {
				t.Child(dst, b.To.Proc, siteOf(b.CallSite))
			}
		}
	}
	walk(o.Root, t.Root, false, 0)
	return t
}

// MetricCallsName is the one metric the comparison keeps.
const MetricCallsName = "calls"

// flattenCCT lists a tree's records by their chain of keys (with their
// calls) and its backedges, for comparison.
func flattenCCT(t *cct.Tree, name func(uint64) string) (records map[string]uint64, backedges map[string]bool) {
	records, backedges = map[string]uint64{}, map[string]bool{}
	chain := map[*cct.Node]string{t.Root: "T"}
	ci := t.Metric(MetricCallsName)
	t.Walk(func(n *cct.Node) {
		if n != t.Root {
			chain[n] = fmt.Sprintf("%s/%s@%#x", chain[n.Parent], name(n.Proc), n.CallSite)
			records[chain[n]] = n.Metrics[ci]
		}
	})
	t.Walk(func(n *cct.Node) {
		for _, b := range n.Recursive {
			backedges[fmt.Sprintf("%s -%#x-> %s", chain[n], b.CallSite, chain[b.To])] = true
		}
	})
	return records, backedges
}

// compareCCT reports every record and backedge where got and want differ;
// it returns the number of differences.
func compareCCT(t *testing.T, got, want *cct.Tree, name func(uint64) string) int {
	t.Helper()
	gr, gb := flattenCCT(got, name)
	wr, wb := flattenCCT(want, name)
	var diffs []string
	for k, v := range wr {
		if g, ok := gr[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("missing %s (oracle: %d calls)", k, v))
		} else if g != v {
			diffs = append(diffs, fmt.Sprintf("%s: %d calls, oracle %d", k, g, v))
		}
	}
	for k, v := range gr {
		if _, ok := wr[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("extra %s (%d calls)", k, v))
		}
	}
	for k := range wb {
		if !gb[k] {
			diffs = append(diffs, "missing backedge "+k)
		}
	}
	for k := range gb {
		if !wb[k] {
			diffs = append(diffs, "extra backedge "+k)
		}
	}
	sort.Strings(diffs)
	for i, d := range diffs {
		if i == 20 {
			t.Errorf("... and %d more", len(diffs)-20)
			break
		}
		t.Error(d)
	}
	return len(diffs)
}

func procNamer(m *Manifest) func(uint64) string {
	names := map[uint64]string{}
	for _, p := range m.Procs {
		names[p.Start] = p.Name
	}
	return func(a uint64) string {
		if n, ok := names[a]; ok {
			return n
		}
		return fmt.Sprintf("%#x", a)
	}
}

func instrumentedSet(m *Manifest) func(uint64) bool {
	in := map[uint64]bool{}
	for _, p := range m.Procs {
		in[p.Start] = true
	}
	return func(a uint64) bool { return in[a] }
}

// runCCTCase instruments and runs one workload in CCT mode on hwsim next
// to the original under the oracle; it requires the same output and
// returns the instrumented profile and the oracle's tree of the image.
func runCCTCase(t *testing.T, name string, args []string, opt Options) (*CCTProfile, *cct.Tree, *Result, [2]uint64) {
	t.Helper()
	r := runCCTCaseErr(t, name, args, opt)
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.got, r.want, r.res, r.cycles
}

// cctRun is one run of runCCTCaseErr: the profile read from the dump (or
// the reader's error), the oracle's tree, the instrumentation, and the
// original's and the instrumented program's cycles.
type cctRun struct {
	got    *CCTProfile
	err    error
	want   *cct.Tree
	res    *Result
	cycles [2]uint64
}

// runCCTCaseErr is runCCTCase returning the dump reader's error.
func runCCTCaseErr(t *testing.T, name string, args []string, opt Options) cctRun {
	t.Helper()
	orig, res := instrumentWorkloadOpt(t, name, opt)
	var o *oracle.Oracle
	wantOut, wantErr, _, origCycles, _ := simRunHook(t, name, orig, args, func(m *hwsim.Machine, files map[string][]byte) func() {
		o = oracle.New(oracle.FilesResolver(files))
		o.Attach(m)
		return o.Finish
	})
	gotOut, gotErr, _, instCycles, files := simRun(t, name, res.ELF, args)
	if !bytes.Equal(gotOut, wantOut) || !bytes.Equal(gotErr, wantErr) {
		t.Fatalf("instrumented output differs:\n got %q / %q\nwant %q / %q", gotOut, gotErr, wantOut, wantErr)
	}
	dump := files["pp.out"]
	if dump == nil {
		t.Fatalf("no dump written (files: %v)", files)
	}
	got, err := ReadCCT(res.ELF, dump.Bytes())
	im := o.Images["/bin/"+name]
	if im == nil {
		t.Fatalf("oracle has no image /bin/%s", name)
	}
	return cctRun{got, err, im.Tree, res, [2]uint64{origCycles, instCycles}}
}

func instrumentWorkloadOpt(t *testing.T, name string, opt Options) ([]byte, *Result) {
	t.Helper()
	orig, _ := instrumentWorkload(t, name, ModePixie)
	if opt.DumpPath == "" {
		opt.DumpPath = "pp.out"
	}
	res, err := Instrument(orig, name, opt)
	if err != nil {
		t.Fatal(err)
	}
	return orig, res
}

// TestCCTEqualsOracle is the CCT mode's acceptance test: each workload,
// instrumented, prints what the original prints on hwsim, and the calling
// context tree its own dump holds (every record's chain of (procedure,
// call site) keys, its calls, and every recursion backedge) equals the
// oracle's tree of the uninstrumented run exactly, after projecting away
// the procedures the instrumenter leaves uninstrumented (projectOracle;
// the manifest lists them). The oracle is the reference only. The heap's
// chunks are 4 KB here, so every run grows it with mmap many times.
func TestCCTEqualsOracle(t *testing.T) {
	if testing.Short() {
		t.Skip("runs workloads with the oracle")
	}
	for _, tc := range cctCases {
		t.Run(tc.name, func(t *testing.T) {
			skipLongOracle(t, tc.name, "interp")
			got, want, res, cyc := runCCTCase(t, tc.name, tc.args, Options{Mode: ModeCCT, CCTChunkBytes: 4096})
			for name, v := range got.Special {
				if v != 0 {
					t.Errorf("special counter %s = %d, want 0 (no longjmp, no deep stack here)", name, v)
				}
			}
			if got.Unreached != 0 {
				t.Errorf("%d call records unreached", got.Unreached)
			}
			proj := projectOracle(want, instrumentedSet(res.Manifest))
			compareCCT(t, got.Tree, proj, procNamer(res.Manifest))
			st := got.Tree.Stats(cct.Layout{})
			if st.Nodes < tc.minRecords {
				t.Errorf("only %d records: the CCT is not being built", st.Nodes)
			}
			if tc.name != "tiny" && got.Chunks < 2 {
				t.Errorf("the heap never grew (%d chunks of 4 KB, %d bytes)", got.Chunks, got.HeapBytes)
			}
			t.Logf("%s: %d records dumped, %d contexts (oracle %d before projection), %d procedures instrumented, %d skipped, heap %d bytes in %d chunks; cycles %d -> %d (%.2fx)",
				tc.name, got.Records, st.Nodes, want.Stats(cct.Layout{}).Nodes, len(res.Manifest.Procs), len(res.Manifest.Skipped), got.HeapBytes, got.Chunks,
				cyc[0], cyc[1], float64(cyc[1])/float64(cyc[0]))
		})
	}
}

// TestCCTOnQemu runs CCT-instrumented workloads on qemu-alpha (skipped
// without it): the original's output, and the tree of the program's own
// procedures (glibc contracted away, as projectOracle does on both
// sides: glibc's start-up differs a little between the emulators) equal
// to the oracle's on hwsim. ccdriver execs /bin/ccdriver, which the host
// has not.
func TestCCTOnQemu(t *testing.T) {
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
			orig, res := instrumentWorkloadOpt(t, tc.name, Options{Mode: ModeCCT})
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
			own := func(uint64) bool { return true } // tiny: no glibc, no DWARF
			if tc.name != "tiny" {
				own = ownCode(t, orig)
			}
			seen := func(a uint64) bool { return inst(a) && own(a) }
			if n := compareCCT(t, projectOracle(got.Tree, seen), projectOracle(o.Images["/bin/"+tc.name].Tree, seen), procNamer(res.Manifest)); n == 0 {
				recs, _ := flattenCCT(projectOracle(got.Tree, seen), procNamer(res.Manifest))
				t.Logf("%s: %d contexts of the program's own code equal the oracle's", tc.name, len(recs))
			}
		})
	}
}

// TestCCTWrongInstrumentationFails: the comparison catches a wrong
// instrumenter: one that forgets the call sites through a register (their
// callees read a stale gCSP and are linked into slots of records that are
// not their parents: the reader refuses the tree, or the tree differs),
// and one that sends every call site to the procedure's first slot (a
// well-formed tree with the wrong call sites: it must differ).
func TestCCTWrongInstrumentationFails(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a workload with the oracle")
	}
	defer func() { cctMutation = 0 }()
	for _, mut := range []int{cctOmitIndirect, cctOneSlot} {
		cctMutation = mut
		r := runCCTCaseErr(t, "sort", []string{"2000"}, Options{Mode: ModeCCT})
		got, err, want, res := r.got, r.err, r.want, r.res
		if err != nil {
			if mut == cctOneSlot {
				t.Fatalf("mutation %d: %v", mut, err)
			}
			t.Logf("mutation %d: the dump is refused: %v", mut, err)
			continue
		}
		gr, _ := flattenCCT(got.Tree, procNamer(res.Manifest))
		wr, _ := flattenCCT(projectOracle(want, instrumentedSet(res.Manifest)), procNamer(res.Manifest))
		diff := 0
		for k, v := range wr {
			if g, ok := gr[k]; !ok || g != v {
				diff++
			}
		}
		for k := range gr {
			if _, ok := wr[k]; !ok {
				diff++
			}
		}
		if diff == 0 {
			t.Fatalf("mutation %d: the wrongly built CCT equals the oracle's", mut)
		}
		t.Logf("mutation %d: %d contexts differ, as they must", mut, diff)
	}
}

// TestReadCCTRefusesBadInput: a paths image, a truncated dump, a dump of
// another image and an empty one are errors, never a silent short tree.
func TestReadCCTRefusesBadInput(t *testing.T) {
	_, res := instrumentWorkloadOpt(t, "tiny", Options{Mode: ModeCCT})
	_, other := instrumentWorkloadOpt(t, "tiny", Options{Mode: ModeCCT, CCTChunkBytes: 8192})
	_, pathsRes := instrumentWorkload(t, "tiny", ModePaths)
	_, _, _, _, files := simRun(t, "tiny", res.ELF, nil)
	dump := files["pp.out"].Bytes()
	if _, err := ReadCCT(res.ELF, dump); err != nil {
		t.Fatalf("good dump: %v", err)
	}
	if _, err := ReadCCT(pathsRes.ELF, dump); err == nil {
		t.Error("a paths image read as CCT")
	}
	if _, err := ReadPaths(res.ELF, dump); err == nil {
		t.Error("a CCT dump read as paths")
	}
	if _, err := ReadCCT(other.ELF, dump); err == nil || !strings.Contains(err.Error(), ErrMismatch.Error()) {
		t.Errorf("another image's dump: %v", err)
	}
	if _, err := ReadCCT(res.ELF, dump[:len(dump)-8]); err == nil {
		t.Error("a truncated dump read")
	}
	if _, err := ReadCCT(res.ELF, nil); err == nil {
		t.Error("an empty dump read")
	}
}

// FuzzCCTDump: the CCT dump decoder never panics, whatever the bytes.
func FuzzCCTDump(f *testing.F) {
	m := &Manifest{Version: ManifestVersion, Mode: ModeCCT, Special: CCTSpecialCounters, CCTMetrics: CCTMetrics, CCTRoot: 0x1010,
		Procs: []ProcInfo{{Name: "f", Start: 0x2000, End: 0x2100, CallSites: []uint64{0x2010}}}}
	var hash [16]byte
	hdr := header(modeCCT, hash, 0)
	rec := func(words ...uint64) []byte {
		b := append([]byte(nil), hdr...)
		for i := 0; i < 8; i++ {
			b[headerCountOff+i] = byte(uint64(len(words)) >> (8 * i))
		}
		for _, w := range words {
			for i := 0; i < 8; i++ {
				b = append(b, byte(w>>(8*i)))
			}
		}
		return b
	}
	// Specials, a chunk at 0x1000, the root with f's record in its slot,
	// f's record with its slot uninitialised.
	good := rec(0, 0, 0, 0, chunkHead<<2|kindChunk, 0x1000,
		40<<2|kindRecord, 0, 0, 0, 0x1038,
		40<<2|kindRecord, 0x2000, 0x1010, 7, 0x1038|tagUninit)
	if _, err := cctFromDump(m, hash, good); err != nil {
		f.Fatalf("seed: %v", err)
	}
	f.Add(good)
	f.Add(good[:70])
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := cctFromDump(m, hash, data)
		if err == nil && p.Tree == nil {
			t.Fatal("no error and no tree")
		}
	})
}
