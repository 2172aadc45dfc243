package instrument

import (
	"bytes"
	"dcpi/analysis/oracle"
	"dcpi/hwsim"
	"dcpi/workloads"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// buildUserProgram compiles testdata/user.c with the Alpha cross compiler
// into dir, or skips the test without it.
func buildUserProgram(t *testing.T, dir string) []byte {
	t.Helper()
	gcc, err := exec.LookPath("alpha-linux-gnu-gcc")
	if err != nil {
		t.Skip("alpha-linux-gnu-gcc not installed")
	}
	bin := filepath.Join(dir, "user")
	if out, err := exec.Command(gcc, "-O2", "-g", "-static", "-mcpu=ev5", "-Wl,--no-relax", "testdata/user.c", "-o", bin).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	orig, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	return orig
}

// qemuBoth runs the original and the instrumented image of program name on
// qemu-alpha (path qemu) in dir, as /bin/NAME with args, requires the same
// stdout and stderr of both, and returns the dump the instrumented run
// wrote to dir/pp.out.
func qemuBoth(t *testing.T, qemu, dir, name string, args []string, orig, instrumented []byte) []byte {
	t.Helper()
	run := func(image []byte) (stdout, stderr []byte) {
		path := filepath.Join(dir, "bin-"+name)
		if err := os.WriteFile(path, image, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(qemu, append([]string{"-cpu", "ev5", "-0", "/bin/" + name, path}, args...)...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/bin"}
		var so, se bytes.Buffer
		cmd.Stdout, cmd.Stderr = &so, &se
		if err := cmd.Run(); err != nil {
			t.Fatalf("qemu-alpha: %v\n%s", err, se.Bytes())
		}
		return so.Bytes(), se.Bytes()
	}
	wantOut, wantErr := run(orig)
	gotOut, gotErr := run(instrumented)
	if !bytes.Equal(gotOut, wantOut) || !bytes.Equal(gotErr, wantErr) {
		t.Fatalf("instrumented output on qemu differs:\n got %q / %q\nwant %q / %q", gotOut, gotErr, wantOut, wantErr)
	}
	dump, err := os.ReadFile(filepath.Join(dir, "pp.out"))
	if err != nil {
		t.Fatal(err)
	}
	return dump
}

// instrumentWorkload instruments the embedded workload name in mode, its
// dump going to pp.out, and returns the original and the result.
func instrumentWorkload(t *testing.T, name, mode string) ([]byte, *Result) {
	t.Helper()
	orig, err := workloads.Binary(name)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Instrument(orig, name, Options{Mode: mode, DumpPath: "pp.out"})
	if err != nil {
		t.Fatal(err)
	}
	return orig, res
}

// runUserProgram builds user.c (skipping without the cross compiler),
// instruments it with opt (whose DumpPath must be "pp.out"), runs the
// original on hwsim under the oracle and the instrumented program after
// it, requires the same output, and returns the original, the
// instrumented image, the oracle and the dump.
func runUserProgram(t *testing.T, opt Options) (orig []byte, res *Result, o *oracle.Oracle, dump []byte) {
	t.Helper()
	orig = buildUserProgram(t, t.TempDir())
	res, err := Instrument(orig, "user", opt)
	if err != nil {
		t.Fatal(err)
	}
	want, wantErr, _, _, _ := simRunHook(t, "user", orig, nil, func(m *hwsim.Machine, files map[string][]byte) func() {
		o = oracle.New(oracle.FilesResolver(files))
		o.Attach(m)
		return o.Finish
	})
	got, gotErr, _, _, files := simRun(t, "user", res.ELF, nil)
	if !bytes.Equal(got, want) || !bytes.Equal(gotErr, wantErr) {
		t.Fatalf("on hwsim: got %q / %q, want %q / %q", got, gotErr, want, wantErr)
	}
	return orig, res, o, files[opt.DumpPath].Bytes()
}
