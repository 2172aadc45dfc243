package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestCLI runs the command lines in testdata/cli and compares what each
// prints with the file: what is the command line's own (flags, messages,
// exit status), while the packages' tests check what the commands
// compute. A block is
//
//	dcpi
//	prof --db $DB --event bogus
//	----
//	error: unknown event "bogus" ...
//
// The output is the command's standard output, its standard error after
// "stderr:", then "error: MESSAGE" or "exit N". $DB names a node database
// made once for the file, $TMP a fresh directory per file, $SYSPROBE the
// system-call probe program, $PTHREADS hwsim's threaded test program; the
// output says them back the same way.
// go test -run TestCLI -rewrite rewrites the expected outputs.
// fixedPath is a path to file that is the same wherever the repository
// is checked out: a symbolic link in the temporary directory. A program's
// path is its simulated argv[0], and where its stack and strings lie
// follows its length, and so does what a profile of it samples.
func fixedPath(t *testing.T, file string) string {
	t.Helper()
	target, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(os.TempDir(), "dcpi-cli-test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, filepath.Base(file))
	if old, err := os.Readlink(link); err == nil && old == target {
		return link
	}
	// Another checkout's link, or none: replace it atomically (another
	// test process may be reading it).
	tmp := fmt.Sprintf("%s.%d", link, os.Getpid())
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
	return link
}

func TestCLI(t *testing.T) {
	datadriven.Walk(t, "testdata/cli", func(t *testing.T, path string) {
		vars := map[string]string{"$TMP": t.TempDir()}
		sysprobe, err := filepath.Abs("../../hwsim/testdata/sysprobe")
		if err != nil {
			t.Fatal(err)
		}
		vars["$SYSPROBE"] = sysprobe
		vars["$PTHREADS"] = fixedPath(t, "../../hwsim/testdata/pthreads")
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "dcpi" {
				d.Fatalf(t, "unknown directive %q (want dcpi)", d.Cmd)
			}
			if strings.Contains(d.Input, "$DB") && vars["$DB"] == "" {
				vars["$DB"] = nodeDB(t)
			}
			var args []string
			for _, a := range strings.Fields(d.Input) {
				for k, v := range vars {
					a = strings.ReplaceAll(a, k, v)
				}
				args = append(args, a)
			}
			stdout, stderr, err := run(t, args...)
			var b strings.Builder
			b.WriteString(stdout)
			if stderr != "" {
				fmt.Fprintf(&b, "stderr:\n%s", stderr)
			}
			var exit exitError
			switch {
			case errors.As(err, &exit):
				fmt.Fprintf(&b, "exit %d\n", exit.code)
			case err != nil:
				fmt.Fprintf(&b, "error: %v\n", err)
			}
			out := b.String()
			for k, v := range vars {
				if v != "" {
					out = strings.ReplaceAll(out, v, k)
				}
			}
			return out
		})
	})
}
