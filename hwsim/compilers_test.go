package hwsim_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/internal/longtest"
	"dcpi/workloads"
)

// TestCompilerMatrix rebuilds workloads at every optimization level and for
// every CPU model gcc targets (half of the pairs in CI, all with
// DCPI_LONG=1), and runs each build on the matching model:
// the interpreter must execute whatever gcc 12 emits, BWX, FIX, CIX and MVI
// included. It needs the Alpha cross compiler and skips without it.
func TestCompilerMatrix(t *testing.T) {
	cc, err := exec.LookPath("alpha-linux-gnu-gcc")
	if err != nil {
		t.Skip("alpha-linux-gnu-gcc not installed")
	}
	if testing.Short() {
		t.Skip("slow: builds 72 programs")
	}
	programs := []string{"fpmix", "sort", "strproc", "interp", "matmul", "hashdb", "recurse", "server"}
	type variant struct {
		opt   string
		model alpha.Model
	}
	var variants []variant
	for _, opt := range []string{"-O0", "-O1", "-O3", "-Os"} {
		variants = append(variants, variant{opt, alpha.EV5})
	}
	for _, m := range []alpha.Model{alpha.EV56, alpha.PCA56, alpha.EV6, alpha.EV67} {
		variants = append(variants, variant{"-O2", m})
	}
	variants = append(variants, variant{"-O3", alpha.EV67})

	src, _ := filepath.Abs("../workloads/src")
	dir := t.TempDir()
	type build struct {
		prog string
		v    variant
		path string
		err  error
	}
	var builds []*build
	for i, prog := range programs {
		for j, v := range variants {
			// CI builds half the matrix, alternating like a checkerboard so
			// that every program and every variant is built; DCPI_LONG=1
			// all of it.
			if (i+j)%2 != 0 && !longtest.Enabled() {
				continue
			}
			name := fmt.Sprintf("%s%s-%s", prog, v.opt, v.model.Name)
			builds = append(builds, &build{prog: prog, v: v, path: filepath.Join(dir, name)})
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.NumCPU())
	for _, b := range builds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out, err := exec.Command(cc, b.v.opt, "-static", "-mcpu="+b.v.model.Name, "-Wl,--no-relax",
				"-o", b.path, filepath.Join(src, b.prog+".c"), "-lm").CombinedOutput()
			if err != nil {
				b.err = fmt.Errorf("%v: %s", err, out)
			}
		}()
	}
	wg.Wait()

	for _, b := range builds {
		t.Run(filepath.Base(b.path), func(t *testing.T) {
			if b.err != nil {
				t.Fatal(b.err)
			}
			t.Parallel()
			want, _, err := workloads.Expected(b.prog)
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(b.path)
			if err != nil {
				t.Fatal(err)
			}
			cfg := hwsim.DefaultConfig()
			cfg.CPUs, cfg.Model = 1, b.v.model
			cfg.Timing = false // what is checked here is what the instructions compute
			cfg.Files = map[string][]byte{"/bin/" + b.prog: data}
			args, _ := workloadDefaults(b.prog)
			r := runWorkload(t, cfg, b.prog, args...)
			if r.stdout != string(want) || r.status != 0 {
				t.Fatalf("status %#x, faults %v, output:\n%s", r.status, r.m.Faults(), firstDiff(r.stdout, string(want)))
			}
		})
	}
}
