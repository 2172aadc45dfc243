package instrument

import (
	"testing"

	"dcpi/analysis/cfg"
	"dcpi/hwsim/elfimage"
)

// TestCCTUserProgram builds testdata/user.c (skipped without the cross
// compiler): a longjmp out of main's callees, a fork whose child prints
// and _exits, a jump table, calls through pointers. In CCT mode the output
// must be the original's, there must be two records (parent and child),
// the activations the longjmp skipped (longjmp's and __longjmp's) must be
// counted as lost (__longjmp's own exit, whose ret runs on the restored
// sp, as unmatched), and the tree of the whole image must equal the
// oracle's (projected as in TestCCTEqualsOracle): the longjmp loses no
// context, the child's calls after the fork add to the parent's records.
func TestCCTUserProgram(t *testing.T) {
	_, res, o, dump := runUserProgram(t, Options{Mode: ModeCCT, DumpPath: "pp.out", CCTChunkBytes: 4096})
	p, err := ReadCCT(res.ELF, dump)
	if err != nil {
		t.Fatal(err)
	}
	if p.Records != 2 {
		t.Errorf("%d records, want the parent's and the child's", p.Records)
	}
	if p.Special["lost"] < 2 {
		t.Errorf("lost = %d, want at least longjmp's and __longjmp's activations", p.Special["lost"])
	}
	t.Logf("special counters: %v", p.Special)
	compareCCT(t, p.Tree, projectOracle(o.Images["/bin/user"].Tree, instrumentedSet(res.Manifest)), procNamer(res.Manifest))
}

// TestCCTPathsUserProgram is TestCCTUserProgram with paths per context
// (skipped without the cross compiler): the original's output, two
// records, the whole tree equal to the oracle's, and every record's path
// counts equal to the oracle's per node, across the longjmp (__longjmp's
// own path counted in its frame; the activation it lands in counts no
// path until its next backedge, as the oracle's frame) and the fork (the
// child's paths add to the parent's records). Not compared: procedures
// with a lock's ldl_l/stl_c window. Parent and child share the one CPU,
// and where a switch between them falls inside the window the stl_c
// fails and the lock loop runs once more (seen in __run_exit_handlers: a
// real difference between the two runs, which moves with the
// instrumented image's timing).
func TestCCTPathsUserProgram(t *testing.T) {
	orig, res, o, dump := runUserProgram(t, Options{Mode: ModeCCT, CCTPaths: true, DumpPath: "pp.out", CCTChunkBytes: 4096})
	p, err := ReadCCT(res.ELF, dump)
	if err != nil {
		t.Fatal(err)
	}
	if p.Records != 2 {
		t.Errorf("%d records, want the parent's and the child's", p.Records)
	}
	if p.Special["lost"] < 1 {
		t.Errorf("lost = %d, want the activations the longjmp skipped (longjmp's)", p.Special["lost"])
	}
	t.Logf("special counters: %v", p.Special)
	proj := projectOracle(o.Images["/bin/user"].Tree, instrumentedSet(res.Manifest))
	name := procNamer(res.Manifest)
	compareCCT(t, p.Tree, proj, name)
	inCounted, locking := pathCounted(res.Manifest), lockingProcs(t, orig)
	counted := func(a uint64) bool { return inCounted(a) && !locking[a] }
	gp := flattenPaths(p.Tree, name, counted)
	for _, d := range diffPaths(gp, flattenPaths(proj, name, counted)) {
		t.Error(d)
	}
	if len(gp) < 5 {
		t.Errorf("only %d (context, path) counts of the program's own code", len(gp))
	}
}

// lockingProcs returns the procedures of image with an ldx_l/stx_c window.
func lockingProcs(t *testing.T, image []byte) map[uint64]bool {
	t.Helper()
	im, err := elfimage.Parse(image, "user")
	if err != nil {
		t.Fatal(err)
	}
	code, err := cfg.NewCode(im, cfg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	procs, err := code.BuildAll()
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64]bool{}
	for _, p := range procs {
		if len(lockWindows(p)) > 0 {
			out[p.Start] = true
		}
	}
	return out
}
