package instrument

import (
	"testing"
)

// TestPathsUserProgram builds testdata/user.c (skipped without the cross
// compiler): a longjmp (gcc -O2 folds deep's recursion, so main calls
// longjmp itself), a fork, a jump table, calls through pointers. In paths
// mode the output must be the original's and the program's own path counts
// the oracle's: the activations the longjmp abandons (longjmp's and
// __longjmp's) are counted as lost, and main, which the longjmp lands in,
// counts no path until it restarts one (its last path is lost too), as the
// oracle does.
func TestPathsUserProgram(t *testing.T) {
	orig, res, o, dump := runUserProgram(t, Options{Mode: ModePaths, DumpPath: "pp.out"})
	pc, err := ReadPaths(res.ELF, dump)
	if err != nil {
		t.Fatal(err)
	}
	if pc.Records != 2 {
		t.Errorf("%d records, want the parent's and the child's", pc.Records)
	}
	if pc.Special["lost"] < 3 {
		t.Errorf("lost = %d, want at least longjmp's, __longjmp's and main's landed path", pc.Special["lost"])
	}
	t.Logf("special counters: %v", pc.Special)
	compareOwnPaths(t, pc, o.PathProfile(), "/bin/user", ownCode(t, orig))
}
