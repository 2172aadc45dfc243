package heldout

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestCommittedBinariesMatchSources rebuilds every program into a
// temporary directory and compares it with the committed binary (the
// build is reproducible, as the workloads' is).
func TestCommittedBinariesMatchSources(t *testing.T) {
	for _, tool := range []string{"alpha-linux-gnu-gcc", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	dir := t.TempDir()
	cmd := exec.Command("make", "BIN="+dir, "all")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make: %v\n%s", err, out)
	}
	built, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, e := range built {
		got = append(got, e.Name())
	}
	for _, p := range Programs {
		want = append(want, p.Name)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("make builds %q, Programs lists %q", got, want)
	}
	for _, name := range got {
		fresh, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := Binary(name)
		if err != nil {
			t.Errorf("%s: built but not committed: %v", name, err)
			continue
		}
		if !bytes.Equal(fresh, committed) {
			t.Errorf("%s: rebuilt binary differs from bin/%s (run make in workloads/heldout and commit)", name, name)
		}
	}
}

func TestUnknown(t *testing.T) {
	if _, err := Binary("nope"); !errors.Is(err, ErrUnknown) {
		t.Errorf("Binary(nope) = %v, want ErrUnknown", err)
	}
	p, err := WriteBinary(t.TempDir(), "walklist")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode()&0o100 == 0 {
		t.Errorf("WriteBinary: %v %v", fi, err)
	}
}
