package elfimage

// Test helpers: the cross toolchain (optional), the committed tiny binary and
// its golden readelf/objdump outputs.
//
// Regenerate testdata/free and the goldens with
//
//	go test ./hwsim/elfimage -run TestGolden -update

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rebuild testdata/free and its golden readelf/objdump outputs")

const (
	crossGCC     = "alpha-linux-gnu-gcc"
	crossReadelf = "alpha-linux-gnu-readelf"
	crossObjdump = "alpha-linux-gnu-objdump"
)

// Flags for the freestanding test program. Compiling and linking in two
// steps keeps the temporary object's random name out of the symbol table, so
// the build (and its build ID) is reproducible.
var (
	freeCFlags  = []string{"-O2", "-mcpu=ev5", "-ffreestanding", "-fno-asynchronous-unwind-tables"}
	freeLDFlags = []string{"-static", "-nostdlib", "-Wl,--build-id", "-Wl,--no-relax",
		"-Wl,-z,max-page-size=0x2000", "-Wl,-z,common-page-size=0x2000"}
	glibcFlags = []string{"-O1", "-mcpu=ev5", "-static", "-Wl,--no-relax"}
)

// needTool skips the test if tool is not installed.
func needTool(t testing.TB, tool string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		t.Skipf("%s not installed", tool)
	}
	return p
}

func run(t testing.TB, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, stderr.String())
	}
	return out
}

// buildFree compiles testdata/free.c into dir and returns the binary's path.
func buildFree(t testing.TB, dir string) string {
	t.Helper()
	needTool(t, crossGCC)
	obj := filepath.Join(dir, "free.o")
	bin := filepath.Join(dir, "free")
	run(t, crossGCC, append(append([]string{"-c"}, freeCFlags...), "-o", obj, "testdata/free.c")...)
	run(t, crossGCC, append(freeLDFlags, "-o", bin, obj)...)
	return bin
}

// buildGlibc compiles a static glibc program from testdata/<name>.c.
func buildGlibc(t testing.TB, name string) string {
	t.Helper()
	needTool(t, crossGCC)
	bin := filepath.Join(t.TempDir(), name)
	run(t, crossGCC, append(glibcFlags, "-o", bin, filepath.Join("testdata", name+".c"))...)
	return bin
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Golden files for the committed binary.
var goldens = []struct {
	file string
	tool string
	args []string
}{
	{"testdata/free.readelf", crossReadelf, []string{"-hlSsnW"}},
	{"testdata/free.objdump", crossObjdump, []string{"-d"}},
}

// TestGolden rebuilds the committed binary and goldens with -update, and
// otherwise checks, when binutils is installed, that the goldens still say
// what the tools say about the committed binary.
func TestGolden(t *testing.T) {
	if *update {
		bin := buildFree(t, t.TempDir())
		if err := os.WriteFile("testdata/free", readFile(t, bin), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range goldens {
		t.Run(filepath.Base(g.file), func(t *testing.T) {
			needTool(t, g.tool)
			out := run(t, g.tool, append(g.args, "testdata/free")...)
			if *update {
				if err := os.WriteFile(g.file, out, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			// Compare what the outputs say, not their bytes, so that a
			// different binutils version's formatting does not matter.
			golden := readFile(t, g.file)
			var same bool
			if g.tool == crossReadelf {
				a, b := parseReadelf(t, out), parseReadelf(t, golden)
				same = fmt.Sprint(a) == fmt.Sprint(b)
			} else {
				same = fmt.Sprint(parseObjdump(t, out)) == fmt.Sprint(parseObjdump(t, golden))
			}
			if !same {
				t.Errorf("%s is stale: %s %v testdata/free says otherwise; run with -update", g.file, g.tool, g.args)
			}
		})
	}
}

// TestCommittedBinaryIsReproducible checks that testdata/free is what
// testdata/free.c builds to, so the C source is the truth. A different
// compiler version (its .comment differs) legitimately builds other bytes.
func TestCommittedBinaryIsReproducible(t *testing.T) {
	fresh := readFile(t, buildFree(t, t.TempDir()))
	committed := readFile(t, "testdata/free")
	if bytes.Equal(fresh, committed) {
		return
	}
	comment := func(b []byte) string {
		im, err := Parse(b, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range im.Sections {
			if s.Name == ".comment" {
				return string(b[s.Offset : s.Offset+s.Size])
			}
		}
		return ""
	}
	if c1, c2 := comment(fresh), comment(committed); c1 != c2 {
		t.Skipf("compiler differs from the one that built testdata/free: %q vs %q", c1, c2)
	}
	t.Errorf("testdata/free differs from a fresh build of testdata/free.c; run go test -run TestGolden -update")
}
