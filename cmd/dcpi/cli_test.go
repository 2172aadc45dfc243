package main

import (
	"errors"
	"fmt"
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
func TestCLI(t *testing.T) {
	datadriven.Walk(t, "testdata/cli", func(t *testing.T, path string) {
		vars := map[string]string{"$TMP": t.TempDir()}
		sysprobe, err := filepath.Abs("../../hwsim/testdata/sysprobe")
		if err != nil {
			t.Fatal(err)
		}
		vars["$SYSPROBE"] = sysprobe
		if vars["$PTHREADS"], err = filepath.Abs("../../hwsim/testdata/pthreads"); err != nil {
			t.Fatal(err)
		}
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
