package oracle

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"dcpi/analysis/cct"
)

// TestUnwindTailCall compiles testdata/unwind.c (skipped without the Alpha
// cross compiler): longjmp out of a recursion pops several frames at once,
// a sibling call through jmp replaces its frame, and the equality checks
// hold as on the workloads.
func TestUnwindTailCall(t *testing.T) {
	cc, err := exec.LookPath("alpha-linux-gnu-gcc")
	if err != nil {
		t.Skip("no alpha-linux-gnu-gcc")
	}
	bin := filepath.Join(t.TempDir(), "unwind")
	if out, err := exec.Command(cc, "-O2", "-g", "-static", "-mcpu=ev5", "-Wl,--no-relax", "testdata/unwind.c", "-o", bin).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	o, truth, path := runOracleImage(t, "unwind", data, "20")
	checkEquality(t, o, truth, path)
	im := o.Images[path]

	// Every iteration longjmps from depth i%7+1 to main: the frames of
	// dive between are unwound (one fewer than the depth: the top frame,
	// longjmp's, returns, and __longjmp's jump is a return to main).
	if o.Counters.Unwound == 0 {
		t.Errorf("no frames unwound: %+v", o.Counters)
	}
	entry := func(name string) uint64 {
		r, err := im.Code.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		return r.Start
	}
	main, tail, leaf := entry("main"), entry("tail"), entry("leaf")
	// tail's jmp to leaf replaces tail's frame: leaf's record hangs under
	// main's, at the call site main called tail from, and is called n
	// times.
	var leafCalls uint64
	var leafParents []uint64
	im.Tree.Walk(func(x *cct.Node) {
		if x.Proc == leaf {
			leafCalls += x.Metrics[mCalls]
			leafParents = append(leafParents, x.Parent.Proc)
		}
		if x.Proc == tail && len(x.Children) > 0 {
			t.Errorf("tail's record has children: its tail call did not replace the frame")
		}
	})
	if leafCalls != n || len(leafParents) != 1 || leafParents[0] != main {
		t.Errorf("leaf: %d calls under %#x, want %d under main %#x", leafCalls, leafParents, n, main)
	}
	t.Logf("counters %+v", o.Counters)
}
