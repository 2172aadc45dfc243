package sysroot

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestSysrootConfined: ".." and symbolic links, relative or absolute, stay
// inside the sysroot, which is the simulated root directory.
func TestSysrootConfined(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "lib"), 0o755))
	must(os.WriteFile(filepath.Join(root, "lib", "libc.so"), []byte("inside"), 0o644))
	must(os.WriteFile(filepath.Join(root, "secret"), []byte("root's own"), 0o644))
	must(os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "lib", "abs")))
	must(os.Symlink("../../../../../../.."+outside+"/secret", filepath.Join(root, "lib", "rel")))
	must(os.Symlink("/lib/libc.so", filepath.Join(root, "lib", "good")))
	must(os.Symlink("loop", filepath.Join(root, "lib", "loop")))
	s := Root{Dir: root}
	for _, tc := range []struct{ path, want string }{
		{"/lib/libc.so", "inside"},
		{"/lib/good", "inside"},
		{"/../../../../lib/libc.so", "inside"},
		{"/lib/../../secret", "root's own"},
		{"/../../../../../../.." + outside + "/secret", ""},
		{"/lib/abs", ""},
		{"/lib/rel", ""},
		{"/lib/loop", ""},
		{"/lib/libc.so/x", ""},
	} {
		data, _, err := s.ReadFile(tc.path)
		if string(data) != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("ReadFile(%s) = %q, %v; want %q", tc.path, data, err, tc.want)
		}
		if bytes.Contains(data, []byte("secret")) && string(data) == "secret" {
			t.Errorf("ReadFile(%s) read outside the sysroot", tc.path)
		}
	}
}
