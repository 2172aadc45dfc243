package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// run executes the dcpi command line in-process.
func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	root := newRootCommand()
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errb.String(), err
}

func TestSimRunPassesOutputAndStatus(t *testing.T) {
	out, _, err := run(t, "sim", "run", "--cpus", "1", "hello")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "hello, world from a simulated Alpha\n") {
		t.Fatalf("stdout %q", out)
	}
	_, _, err = run(t, "sim", "run", "../../hwsim/testdata/sysprobe", "exit", "3")
	var exit exitError
	if !errors.As(err, &exit) || exit.code != 3 {
		t.Fatalf("err %v, want exit status 3", err)
	}
	_, stderr, err := run(t, "sim", "run", "../../hwsim/testdata/sysprobe", "segv")
	if !errors.As(err, &exit) || exit.code != 128+11 {
		t.Fatalf("err %v, want 139 (SIGSEGV)", err)
	}
	if !strings.Contains(stderr, "segmentation fault at pc") {
		t.Fatalf("stderr %q does not report the fault", stderr)
	}
}

func TestSimRunStats(t *testing.T) {
	_, stderr, err := run(t, "sim", "run", "--stats", "--mix", "smoke")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"instructions", "simulated time", "M simulated instructions/s"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("--stats output lacks %q:\n%s", want, stderr)
		}
	}
}
