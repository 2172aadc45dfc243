package simhost

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/hwsim"
	"dcpi/workloads"
)

// TestSharedObjects: a dynamic program's start-up closure is its
// interpreter and DT_NEEDED libraries, with their keys; a static program
// has none; a missing or foreign library is a one-line error naming it.
func TestSharedObjects(t *testing.T) {
	if _, err := os.Stat(filepath.Join(hwsim.DefaultSysroot, "lib", "libc.so.6.1")); err != nil {
		t.Skipf("no Alpha sysroot: %v", err)
	}
	dyn, err := workloads.DynamicBinary("fpmix")
	if err != nil {
		t.Fatal(err)
	}
	libs, err := SharedObjects(hwsim.DefaultSysroot, dyn, "fpmix")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range libs {
		got = append(got, path.Base(l.Path))
		if l.Key.String() == "" || len(l.Data) == 0 || !l.User() {
			t.Errorf("%s: key %v, %d bytes", l.Path, l.Key, len(l.Data))
		}
	}
	if strings.Join(got, " ") != "ld-linux.so.2 libm.so.6.1 libc.so.6.1" {
		t.Errorf("closure %q", got)
	}
	static, _ := workloads.Binary("fpmix")
	if libs, err := SharedObjects(hwsim.DefaultSysroot, static, "fpmix"); err != nil || libs != nil {
		t.Errorf("static: %v, %v", libs, err)
	}

	// A sysroot with the interpreter, no libm and an x86 libc.
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	ld, _ := os.ReadFile(filepath.Join(hwsim.DefaultSysroot, "lib", "ld-linux.so.2"))
	os.WriteFile(filepath.Join(root, "lib", "ld-linux.so.2"), ld, 0o644)
	if _, err := SharedObjects(root, dyn, "fpmix"); err == nil || !strings.Contains(err.Error(), "libm.so.6.1") {
		t.Errorf("missing libm: %v", err)
	}
	x86, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skip(err)
	}
	m, _ := os.ReadFile(filepath.Join(hwsim.DefaultSysroot, "lib", "libm.so.6.1"))
	os.WriteFile(filepath.Join(root, "lib", "libm.so.6.1"), m, 0o644)
	os.WriteFile(filepath.Join(root, "lib", "libc.so.6.1"), x86, 0o644)
	_, err = SharedObjects(root, dyn, "fpmix")
	if err == nil || !strings.Contains(err.Error(), "libc.so.6.1") || strings.Contains(err.Error(), "\n") {
		t.Errorf("x86 libc: %v", err)
	}
	if _, err := SharedObjects("", dyn, "fpmix"); err == nil || !strings.Contains(err.Error(), "ld-linux.so.2") {
		t.Errorf("no sysroot: %v", err)
	}
}
