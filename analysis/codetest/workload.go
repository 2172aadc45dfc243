package codetest

import (
	"io"
	"testing"

	"dcpi/analysis/cfg"
	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
	"dcpi/workloads"
)

// Run is one run of a committed workload on hwsim with its ground truth.
type Run struct {
	// Image is the workload's ELF file, Path where it ran (/bin/NAME).
	Image []byte
	Path  string
	// Truth is the ground truth of the workload's own image.
	Truth *alpha.GroundTruth
}

// RunWorkload runs workload name with args alone on a one-CPU machine with
// the 21164 timing model and ground truth, and, when prof has counters,
// counter sampling into h. It fails the test if the workload does not
// finish or leaves no truth.
func RunWorkload(t testing.TB, name string, args []string, prof hwsim.ProfileConfig, h hwsim.CounterHandler) Run {
	t.Helper()
	image, err := workloads.Binary(name)
	if err != nil {
		t.Fatal(err)
	}
	path := "/bin/" + name
	c := hwsim.DefaultConfig()
	c.CPUs = 1
	c.Timing = true
	c.GroundTruth = true
	c.Files = map[string][]byte{path: image}
	c.Stdout, c.Stderr = io.Discard, io.Discard
	m, err := hwsim.New(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(prof.Counters) > 0 {
		if err := m.StartProfiling(prof, h); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Spawn(path, append([]string{path}, args...), []string{"PATH=/bin"}); err != nil {
		t.Fatal(err)
	}
	if m.Run(200_000_000_000) {
		t.Fatalf("%s did not finish", name)
	}
	truth := m.GroundTruth()[path]
	if truth == nil || len(truth.PCs) == 0 {
		t.Fatalf("no ground truth for %s", path)
	}
	return Run{Image: image, Path: path, Truth: truth}
}

// Code parses the run's image and prepares it for analysis/cfg.
func (r Run) Code(t testing.TB) *cfg.Code {
	t.Helper()
	im, err := elfimage.Parse(r.Image, r.Path)
	if err != nil {
		t.Fatal(err)
	}
	code, err := cfg.NewCode(im, cfg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return code
}
