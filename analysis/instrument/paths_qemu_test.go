package instrument

import (
	"os/exec"
	"testing"

	"dcpi/analysis/oracle"
	"dcpi/analysis/paths"
	"dcpi/hwsim"
)

// TestPathsOnQemu runs paths-instrumented workloads on qemu-alpha (skipped
// without it): output must be the original's, and the path counts of the
// program's own procedures (those its DWARF describes) must equal the
// oracle's of the uninstrumented run on hwsim. glibc's start-up differs a
// little between the emulators (auxiliary vector, environment,
// /proc/self/exe), so glibc's paths are compared on hwsim only
// (TestPathCountsEqualOracle). ccdriver is not run here: it execs
// /bin/ccdriver, which the host has not.
func TestPathsOnQemu(t *testing.T) {
	qemu, err := exec.LookPath("qemu-alpha")
	if err != nil {
		t.Skip("qemu-alpha not installed")
	}
	if testing.Short() {
		t.Skip("runs workloads")
	}
	for _, tc := range pathsCases {
		if tc.name == "ccdriver" {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			orig, res := instrumentWorkload(t, tc.name, ModePaths)
			dump := qemuBoth(t, qemu, t.TempDir(), tc.name, tc.args, orig, res.ELF)
			got, err := ReadPaths(res.ELF, dump)
			if err != nil {
				t.Fatal(err)
			}
			var o *oracle.Oracle
			simRunHook(t, tc.name, orig, tc.args, func(m *hwsim.Machine, files map[string][]byte) func() {
				o = oracle.New(oracle.FilesResolver(files))
				o.Attach(m)
				return o.Finish
			})
			var own func(uint64) bool
			if tc.name == "tiny" {
				own = func(uint64) bool { return true } // no glibc, no DWARF
			} else {
				own = ownCode(t, orig)
			}
			compareOwnPaths(t, got, o.PathProfile(), "/bin/"+tc.name, own)
		})
	}
}

// compareOwnPaths compares the path counts of the procedures own accepts.
func compareOwnPaths(t *testing.T, got *PathCounts, want *paths.Profile, path string, own func(uint64) bool) {
	t.Helper()
	counts := func(im paths.ImageProfile) map[[2]uint64]uint64 {
		out := map[[2]uint64]uint64{}
		for _, p := range im.Procs {
			if !own(p.Entry) {
				continue
			}
			for _, pc := range p.Paths {
				out[[2]uint64{p.Entry, pc.ID}] = pc.Count
			}
		}
		return out
	}
	g := counts(got.Profile.Images[0])
	var w map[[2]uint64]uint64
	for _, im := range want.Images {
		if im.Path == path {
			w = counts(im)
		}
	}
	counted := map[uint64]bool{}
	for _, p := range got.Manifest.Procs {
		counted[p.Start] = true
	}
	var bad, same int
	for k, n := range w {
		if !counted[k[0]] {
			continue
		}
		if g[k] != n {
			if bad++; bad <= 10 {
				t.Errorf("procedure %#x path %d: counted %d, oracle %d", k[0], k[1], g[k], n)
			}
		} else {
			same++
		}
		delete(g, k)
	}
	for k, n := range g {
		if bad++; bad <= 10 {
			t.Errorf("procedure %#x path %d: counted %d, oracle 0", k[0], k[1], n)
		}
	}
	if same < 3 {
		t.Errorf("only %d paths of the program's own code agree", same)
	}
	t.Logf("%d paths of the program's own code equal the oracle's", same)
}
