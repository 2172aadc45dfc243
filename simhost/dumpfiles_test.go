package simhost

import (
	"os"
	"strings"
	"testing"
)

// TestDumpFilesOnlyNamesInTheWorkingDirectory: a simulated program may
// append to NAME.pp.out in dcpi's working directory and nowhere else.
func TestDumpFilesOnlyNamesInTheWorkingDirectory(t *testing.T) {
	t.Chdir(t.TempDir())
	var d DumpFiles
	for _, bad := range []string{"../x.pp.out", "/tmp/x.pp.out", "sub/x.pp.out", "x.txt", ".pp.out", "x.pp.out/.."} {
		if _, err := d.Open(bad); err == nil {
			t.Errorf("%q: opened", bad)
		}
	}
	for _, good := range []string{"x.pp.out", "./x.pp.out"} {
		w, err := d.Open(good)
		if err != nil {
			t.Fatalf("%q: %v", good, err)
		}
		if _, err := w.Write([]byte(good + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile("x.pp.out")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != "x.pp.out\n./x.pp.out\n" || strings.Count(got, "\n") != 2 {
		t.Errorf("file holds %q", got)
	}
}
