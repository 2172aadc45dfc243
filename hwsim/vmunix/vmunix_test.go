package vmunix

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestImageMatchesSources rebuilds vmunix with the cross compiler, when
// there is one, and requires the committed image to be identical.
func TestImageMatchesSources(t *testing.T) {
	if _, err := exec.LookPath("alpha-linux-gnu-gcc"); err != nil {
		t.Skip("alpha-linux-gnu-gcc not installed")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not installed")
	}
	out := filepath.Join(t.TempDir(), "vmunix")
	cmd := exec.Command("make", "-s", "-C", "src", "OUT="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make: %v\n%s", err, b)
	}
	built, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(built, Image()) {
		t.Fatal("the committed vmunix differs from a build of kernel.c and entry.S: run make in hwsim/vmunix/src")
	}
}
