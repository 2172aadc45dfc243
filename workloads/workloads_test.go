package workloads

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"
)

// perRunTimeout bounds one run of one program (native or under qemu); a
// default run takes well under a second on either.
const perRunTimeout = 2 * time.Minute

func TestCatalog(t *testing.T) {
	all := All()
	if len(all) < 12 {
		t.Fatalf("All() lists %d programs, want at least 12", len(all))
	}
	embedded := names()
	if len(all) != len(embedded) {
		t.Fatalf("All() lists %d programs, bin/ embeds %d", len(all), len(embedded))
	}
	if !sort.SliceIsSorted(all, func(i, j int) bool { return all[i].Name < all[j].Name }) {
		t.Errorf("All() is not sorted by name")
	}
	for i, w := range all {
		if w.Name != embedded[i] {
			t.Errorf("All()[%d] = %q, want %q", i, w.Name, embedded[i])
		}
		if w.Description == "" {
			t.Errorf("%s: no description in the catalog", w.Name)
		}
		if w.DefaultArgs == nil {
			t.Errorf("%s: DefaultArgs is nil, want a (possibly empty) slice", w.Name)
		}
		if argv := w.Argv(); argv[0] != "/bin/"+w.Name || len(argv) != 1+len(w.DefaultArgs) {
			t.Errorf("%s: Argv() = %q", w.Name, argv)
		}
		out, code, err := Expected(w.Name)
		if err != nil {
			t.Errorf("%s: %v", w.Name, err)
			continue
		}
		if len(out) == 0 || !bytes.Contains(out, []byte(" checksum ")) {
			t.Errorf("%s: expected output has no checksum line:\n%s", w.Name, out)
		}
		if code != 0 {
			t.Errorf("%s: expected exit status %d, want 0", w.Name, code)
		}
	}
	for name := range catalog {
		if _, err := Binary(name); err != nil {
			t.Errorf("catalog names %q: %v", name, err)
		}
	}
	// Every expected file belongs to an embedded program.
	entries, err := files.ReadDir("expected")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		base := e.Name()
		base = base[:len(base)-len(filepath.Ext(base))]
		if !known(base) {
			t.Errorf("expected/%s has no program in bin/", e.Name())
		}
	}
}

func TestBinariesAreStaticAlphaELF(t *testing.T) {
	for _, w := range All() {
		b, err := Binary(w.Name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			t.Errorf("%s: %v", w.Name, err)
			continue
		}
		if f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB || f.Machine != elf.EM_ALPHA || f.Type != elf.ET_EXEC {
			t.Errorf("%s: %v %v %v %v, want a 64-bit little-endian Alpha executable",
				w.Name, f.Class, f.Data, f.Machine, f.Type)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
				t.Errorf("%s: has %v, want a static binary", w.Name, p.Type)
			}
		}
		for _, sec := range []string{".symtab", ".debug_line", ".debug_info", ".note.gnu.build-id"} {
			if f.Section(sec) == nil {
				t.Errorf("%s: no %s section", w.Name, sec)
			}
		}
		f.Close()
	}
}

func TestUnknownWorkload(t *testing.T) {
	for _, name := range []string{"", "nosuch", "../expected/hello.out", "bin/hello", "."} {
		if _, err := Binary(name); !errors.Is(err, ErrUnknown) {
			t.Errorf("Binary(%q) error = %v, want ErrUnknown", name, err)
		}
		if _, _, err := Expected(name); !errors.Is(err, ErrUnknown) {
			t.Errorf("Expected(%q) error = %v, want ErrUnknown", name, err)
		}
	}
	if _, err := Binary("nosuch"); err == nil || !bytes.Contains([]byte(err.Error()), []byte("nosuch")) {
		t.Errorf("error %v does not name the program", err)
	}
}

func TestMixes(t *testing.T) {
	m := Mixes()
	for _, want := range []string{"default", "specint-like", "fp"} {
		if len(m[want]) == 0 {
			t.Errorf("no mix %q", want)
		}
	}
	if n := len(m["default"]); n < 5 {
		t.Errorf("default mix has %d programs, want about 6", n)
	}
	for name, progs := range m {
		for _, p := range progs {
			if !known(p) {
				t.Errorf("mix %q names unknown program %q", name, p)
			}
		}
	}
	m["default"][0] = "changed"
	if Mixes()["default"][0] == "changed" {
		t.Errorf("Mixes() returned shared state")
	}
}

// need skips the test when a tool is missing.
func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH: %v", tool, err)
		}
	}
}

// runMake runs make in this package's directory (the workloads/ folder, as
// `go test` sets it) with the given arguments.
func runMake(t *testing.T, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args = append([]string{"-s", "-j", strconv.Itoa(runtime.NumCPU())}, args...)
	cmd := exec.CommandContext(ctx, "make", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("make %q: %v\n%s", args, err, out.Bytes())
	}
}

// TestCommittedBinariesMatchSources rebuilds every program with the
// Makefile's flags into a temporary directory: the builds are reproducible,
// so each must be byte-identical to the committed (embedded) binary.
func TestCommittedBinariesMatchSources(t *testing.T) {
	need(t, "alpha-linux-gnu-gcc", "make")
	dir := t.TempDir()
	runMake(t, "BIN="+dir, "all")
	built, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range built {
		got = append(got, e.Name())
	}
	if want := names(); !slices.Equal(got, want) {
		t.Errorf("make builds %q, bin/ holds %q", got, want)
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
			t.Errorf("%s: rebuilt binary differs from bin/%s (run `make` in workloads/ and commit)", name, name)
		}
	}
}

// TestCommittedDynamicBinariesMatchSources is the same for dyn/.
func TestCommittedDynamicBinariesMatchSources(t *testing.T) {
	need(t, "alpha-linux-gnu-gcc", "make")
	dir := t.TempDir()
	runMake(t, "DYN="+dir, "dynamic")
	built, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(built) != len(names())-1 {
		t.Errorf("make dynamic builds %d programs, want every one but tiny (%d)", len(built), len(names())-1)
	}
	for _, e := range built {
		fresh, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := DynamicBinary(e.Name())
		if err != nil {
			t.Errorf("%s: built but not committed: %v", e.Name(), err)
			continue
		}
		if !bytes.Equal(fresh, committed) {
			t.Errorf("%s: rebuilt binary differs from dyn/%s (run `make dynamic` in workloads/ and commit)", e.Name(), e.Name())
		}
	}
}

// TestDynamicBinaries: every glibc program has a dynamically linked Alpha
// build naming /lib/ld-linux.so.2, with symbols, line information and a
// build ID.
func TestDynamicBinaries(t *testing.T) {
	for _, w := range All() {
		b, err := DynamicBinary(w.Name)
		if w.Name == "tiny" {
			if !errors.Is(err, ErrUnknown) {
				t.Errorf("tiny: DynamicBinary error %v, want ErrUnknown", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		f, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			t.Errorf("%s: %v", w.Name, err)
			continue
		}
		interp := ""
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				d := make([]byte, p.Filesz)
				p.ReadAt(d, 0)
				interp = string(bytes.TrimRight(d, "\x00"))
			}
		}
		if f.Machine != elf.EM_ALPHA || f.Type != elf.ET_EXEC || interp != "/lib/ld-linux.so.2" {
			t.Errorf("%s: %v %v interpreter %q, want an Alpha ET_EXEC with /lib/ld-linux.so.2", w.Name, f.Machine, f.Type, interp)
		}
		for _, sec := range []string{".symtab", ".debug_line", ".note.gnu.build-id", ".dynamic"} {
			if f.Section(sec) == nil {
				t.Errorf("%s: no %s section", w.Name, sec)
			}
		}
		f.Close()
	}
}

// TestQemuDynamicOutputsMatchExpected runs each dynamic build under
// qemu-alpha -L with the cross toolchain's sysroot.
func TestQemuDynamicOutputsMatchExpected(t *testing.T) {
	need(t, "qemu-alpha")
	const sysroot = "/usr/alpha-linux-gnu"
	if _, err := os.Stat(sysroot + "/lib/ld-linux.so.2"); err != nil {
		t.Skipf("no Alpha sysroot: %v", err)
	}
	dir := t.TempDir()
	for _, w := range All() {
		if w.Name == "tiny" {
			continue
		}
		t.Run(w.Name, func(t *testing.T) {
			t.Parallel()
			b, err := DynamicBinary(w.Name)
			if err != nil {
				t.Fatal(err)
			}
			prog := filepath.Join(dir, w.Name)
			if err := os.WriteFile(prog, b, 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("qemu-alpha", append([]string{"-cpu", "ev5", "-L", sysroot, prog}, w.DefaultArgs...)...)
			cmd.Env = append(os.Environ(), "CCDRIVER_EXEC_FALLBACK=1")
			checkRun(t, w.Name, cmd)
		})
	}
}

// TestNativeOutputsMatchExpected builds the sources for the host and checks
// that each prints its expected output, run both with no arguments and with
// its DefaultArgs.
func TestNativeOutputsMatchExpected(t *testing.T) {
	need(t, "gcc", "make")
	dir := t.TempDir()
	runMake(t, "NATIVE="+dir, "native")
	t.Run("programs", func(t *testing.T) {
		for _, w := range All() {
			t.Run(w.Name, func(t *testing.T) {
				t.Parallel()
				// An absolute path: ccdriver re-executes argv[0].
				prog := filepath.Join(dir, w.Name)
				checkRun(t, w.Name, exec.Command(prog))
				if len(w.DefaultArgs) > 0 {
					checkRun(t, w.Name, exec.Command(prog, w.DefaultArgs...))
				}
			})
		}
	})
}

// TestQemuOutputsMatchExpected runs each committed binary under qemu-alpha
// as a 21164 (-cpu ev5: BWX instructions would raise SIGILL), which checks
// the expected output independently of our simulator.
func TestQemuOutputsMatchExpected(t *testing.T) {
	need(t, "qemu-alpha")
	dir := t.TempDir()
	t.Run("programs", func(t *testing.T) {
		for _, w := range All() {
			t.Run(w.Name, func(t *testing.T) {
				t.Parallel()
				b, err := Binary(w.Name)
				if err != nil {
					t.Fatal(err)
				}
				prog := filepath.Join(dir, w.Name)
				if err := os.WriteFile(prog, b, 0o755); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command("qemu-alpha", append([]string{"-cpu", "ev5", prog}, w.DefaultArgs...)...)
				// qemu-alpha cannot execve an Alpha binary (no
				// binfmt_misc): let ccdriver's children run their
				// pass in place, which prints the same output.
				cmd.Env = append(os.Environ(), "CCDRIVER_EXEC_FALLBACK=1")
				checkRun(t, w.Name, cmd)
			})
		}
	})
}

// checkRun runs cmd and compares its stdout and exit status with the
// expected files of the named program.
func checkRun(t *testing.T, name string, cmd *exec.Cmd) {
	t.Helper()
	want, wantCode, err := Expected(name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), perRunTimeout)
	defer cancel()
	run := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	run.Env = cmd.Env
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	code := 0
	if err := run.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ctx.Err() != nil {
			t.Fatalf("%q: %v\nstderr:\n%s", cmd.Args, err, stderr.Bytes())
		}
		code = ee.ExitCode()
	}
	if code != wantCode {
		t.Errorf("%q: exit status %d, want %d\nstderr:\n%s", cmd.Args, code, wantCode, stderr.Bytes())
	}
	if !bytes.Equal(stdout.Bytes(), want) {
		t.Errorf("%q: stdout differs from expected/%s.out\ngot:\n%s\nwant:\n%s", cmd.Args, name, stdout.Bytes(), want)
	}
}
