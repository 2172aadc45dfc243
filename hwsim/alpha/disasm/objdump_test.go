package disasm

// Comparisons of whole listings with alpha-linux-gnu-objdump -d, and the
// golden files that stand in for it where it is not installed.

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the disassembler's golden files under testdata (after checking them against objdump when it is installed)")

const objdumpCmd = "alpha-linux-gnu-objdump"

// haveObjdump reports whether the reference disassembler is installed.
func haveObjdump() bool {
	_, err := exec.LookPath(objdumpCmd)
	return err == nil
}

// runObjdump runs objdump -d with extra arguments on path.
func runObjdump(t testing.TB, path string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(objdumpCmd, append(append([]string{"-d"}, args...), path)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s -d %s: %v\n%s", objdumpCmd, path, err, stderr.Bytes())
	}
	return out
}

// ourListing disassembles path as objdump -d would print it, banner included.
func ourListing(t testing.TB, path string, opt Options) []byte {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	buf.WriteString(FileHeader(path))
	if err := ELF(&buf, f, opt); err != nil {
		t.Fatalf("ELF %s: %v", path, err)
	}
	return buf.Bytes()
}

// insnLine splits an instruction line "   120000150:\t00 00 fe 2f \tunop\t"
// into its address and the rest; ok is false for other lines.
func insnLine(l string) (addr uint64, rest string, ok bool) {
	i := strings.IndexByte(l, ':')
	if i < 0 || i+1 >= len(l) || l[i+1] != '\t' || !strings.HasPrefix(l, " ") {
		return 0, "", false
	}
	a, err := strconv.ParseUint(strings.TrimSpace(l[:i]), 16, 64)
	if err != nil {
		return 0, "", false
	}
	return a, l[i+2:], true
}

// comparison is the outcome of comparing our listing with objdump's.
type comparison struct {
	insns, mismatches int
	report            strings.Builder
}

// compareListings compares two listings line by line, counting instruction lines
// (by address, so one missing line does not shift every later one) and
// reporting the first differences with context.
func compareListings(want, got []byte, maxReports int) *comparison {
	c := &comparison{}
	wl := strings.Split(string(want), "\n")
	gl := strings.Split(string(got), "\n")
	// Key instruction lines by section and address: the sections of a
	// relocatable file all start at 0.
	type key struct {
		sec  string
		addr uint64
	}
	ours := make(map[key]string, len(gl))
	sec := ""
	for _, l := range gl {
		if a, rest, ok := insnLine(l); ok {
			ours[key{sec, a}] = rest
		} else if strings.HasPrefix(l, "Disassembly of section ") {
			sec = l
		}
	}
	reports := 0
	sec = ""
	for i, l := range wl {
		a, rest, ok := insnLine(l)
		if !ok {
			if strings.HasPrefix(l, "Disassembly of section ") {
				sec = l
			}
			continue
		}
		c.insns++
		if g, found := ours[key{sec, a}]; !found || g != rest {
			c.mismatches++
			if reports < maxReports {
				reports++
				fmt.Fprintf(&c.report, "at %#x:\n", a)
				for j := max(0, i-3); j < min(len(wl), i+2); j++ {
					mark := "  "
					if j == i {
						mark = "> "
					}
					fmt.Fprintf(&c.report, "   objdump%s%q\n", mark, wl[j])
				}
				if found {
					fmt.Fprintf(&c.report, "   ours   > %q\n", g)
				} else {
					fmt.Fprintf(&c.report, "   ours: no line for this address\n")
				}
			}
		}
	}
	// Labels, "..." lines and section headers must match too.
	if c.mismatches == 0 && !bytes.Equal(want, got) {
		for i := 0; i < max(len(wl), len(gl)); i++ {
			var w, g string
			if i < len(wl) {
				w = wl[i]
			}
			if i < len(gl) {
				g = gl[i]
			}
			if w != g {
				fmt.Fprintf(&c.report, "listings differ at line %d:\n   objdump %q\n   ours    %q\n", i+1, w, g)
				c.mismatches++
				break
			}
		}
	}
	return c
}

// workloadELFs returns the ELF files of workloads/bin.
func workloadELFs() []string {
	paths, _ := filepath.Glob("../../../workloads/bin/*")
	var elfs []string
	for _, p := range paths {
		if f, err := elf.Open(p); err == nil {
			f.Close()
			elfs = append(elfs, p)
		}
	}
	sort.Strings(elfs)
	return elfs
}

// compilePrograms compiles a small C program that uses BWX, FIX and CIX
// candidates (byte and short loads, sqrt, population counts) at -O0..-O3
// for several CPUs, statically against glibc, and as relocatable objects;
// nil without the cross compiler.
func compilePrograms(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("alpha-linux-gnu-gcc"); err != nil {
		return nil
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "p.c")
	prog := `#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
static double f(double x) { return sqrt(x) * 1.5 + x / 3; }
static int cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
int main(int argc, char **argv) {
	int v[64]; double s = 0; char buf[32]; unsigned long m = argc;
	for (int i = 0; i < 64; i++) { v[i] = (i * 7919) % 101; s += f(i); m = m * 31 + i; }
	qsort(v, 64, sizeof v[0], cmp);
	snprintf(buf, sizeof buf, "%d %g %d %d", v[argc], s, __builtin_popcountl(m), __builtin_clzl(m | 1));
	return (int)strlen(buf) + (short)v[3] + (signed char)argv[0][0] + (int)(float)s;
}
`
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, cpu := range []string{"ev5", "ev56", "ev6", "ev67"} {
		for _, o := range []string{"-O0", "-O1", "-O2", "-O3"} {
			bin := filepath.Join(dir, "p-"+cpu+o)
			cmd := exec.Command("alpha-linux-gnu-gcc", o, "-mcpu="+cpu, "-static", "-Wl,--no-relax", "-o", bin, src, "-lm")
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("compile %s: %v\n%s", bin, err, b)
			}
			out = append(out, bin)
		}
	}
	// Relocatable objects: section symbols, relocations, one section per
	// function.
	for _, o := range []string{"-O0", "-O2"} {
		obj := filepath.Join(dir, "p"+o+".o")
		cmd := exec.Command("alpha-linux-gnu-gcc", o, "-mcpu=ev67", "-ffunction-sections", "-c", "-o", obj, src)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("compile %s: %v\n%s", obj, err, b)
		}
		out = append(out, obj)
	}
	return out
}

// compareBinaries compares every line of our listing of each binary
// (all code sections) with objdump -d's.
func compareBinaries(t *testing.T, bins []string) {
	total, bad := 0, 0
	for _, p := range bins {
		want := runObjdump(t, p)
		got := ourListing(t, p, Options{})
		c := compareListings(want, got, 5)
		total += c.insns
		bad += c.mismatches
		if c.mismatches > 0 {
			t.Errorf("%s: %d of %d instructions differ from objdump (%.4f%% agree):\n%s",
				p, c.mismatches, c.insns, 100*float64(c.insns-c.mismatches)/float64(c.insns), c.report.String())
		}
	}
	t.Logf("%d binaries, %d instructions compared with objdump, %d mismatches (%.4f%% agree)",
		len(bins), total, bad, 100*float64(total-bad)/float64(max(total, 1)))
}

// TestDisasmWorkloadsMatchObjdump compares every line of our listing of each
// workload binary with objdump -d's (with compiled stand-ins while
// workloads/bin is empty).
func TestDisasmWorkloadsMatchObjdump(t *testing.T) {
	if !haveObjdump() {
		t.Skip(objdumpCmd + " not installed")
	}
	bins := workloadELFs()
	if len(bins) == 0 {
		bins = compilePrograms(t)
	}
	if len(bins) == 0 {
		t.Skip("no workload binaries and no cross compiler")
	}
	compareBinaries(t, bins)
}

// TestDisasmCompiledMatchObjdump does the same for programs compiled here
// for the alpha.EV5, alpha.EV56, EV6 and EV67 (BWX, FIX, CIX, MVI) at every -O level,
// and for relocatable objects.
func TestDisasmCompiledMatchObjdump(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles 18 programs")
	}
	if !haveObjdump() {
		t.Skip(objdumpCmd + " not installed")
	}
	bins := compilePrograms(t)
	if len(bins) == 0 {
		t.Skip("no cross compiler")
	}
	compareBinaries(t, bins)
}

// TestDisasmWorkloadGoldens checks, without objdump, that the .text listing
// of each workload binary has the SHA-256 committed in
// testdata/NAME.text.sha256, and that tiny's listing is exactly
// tiny.text.golden. With -update it rewrites them, after checking each
// listing against objdump -d -j .text when objdump is installed.
func TestDisasmWorkloadGoldens(t *testing.T) {
	bins := workloadELFs()
	if len(bins) == 0 {
		t.Skip("no workload binaries")
	}
	for _, p := range bins {
		name := filepath.Base(p)
		f, err := elf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		err = Text(&buf, f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		sum := sha256.Sum256(buf.Bytes())
		hash := hex.EncodeToString(sum[:]) + "  " + name + "\n"
		hashFile := filepath.Join(goldenDir, name+".text.sha256")
		textFile := filepath.Join(goldenDir, name+".text.golden")
		if *update {
			if haveObjdump() {
				want := runObjdump(t, p, "-j", ".text")
				got := append([]byte(FileHeader(p)), buf.Bytes()...)
				if c := compareListings(want, got, 5); c.mismatches > 0 {
					t.Fatalf("%s: not updating, listing differs from objdump:\n%s", p, c.report.String())
				}
			}
			if err := os.WriteFile(hashFile, []byte(hash), 0o644); err != nil {
				t.Fatal(err)
			}
			if name == "tiny" {
				if err := os.WriteFile(textFile, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		want, err := os.ReadFile(hashFile)
		if err != nil {
			t.Errorf("%s: %v (run go test ./hwsim/alpha/disasm -update)", p, err)
			continue
		}
		if string(want) != hash {
			t.Errorf("%s: .text listing hash %s, golden %s (a changed binary needs -update; else the disassembler changed)",
				p, hash[:64], strings.TrimSpace(string(want)))
		}
		if name == "tiny" {
			golden, err := os.ReadFile(textFile)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(golden, buf.Bytes()) {
				c := compareListings(golden, buf.Bytes(), 10)
				t.Errorf("tiny: listing differs from %s:\n%s", textFile, c.report.String())
			}
		}
	}
}

const goldenDir = "testdata"

// TestDisasmObjects checks our listings of hand-assembled objects against
// objdump's listings of them (committed, so objdump is not needed):
// handpicked holds every instruction format, pseudo-op and qualifier
// family; edge the layout corner cases (data objects in code, runs of
// zeros, aliases, unaligned symbols, a section that ends mid-word). With
// -update, and the binutils installed, the objects are reassembled from
// their .s files and objdump's listings rewritten.
func TestDisasmObjects(t *testing.T) {
	for _, name := range []string{"handpicked", "edge"} {
		obj := name + ".o"
		golden := filepath.Join(goldenDir, name+".objdump")
		if *update && haveObjdump() {
			if _, err := exec.LookPath("alpha-linux-gnu-as"); err == nil {
				cmd := exec.Command("alpha-linux-gnu-as", name+".s", "-o", obj)
				cmd.Dir = goldenDir
				if b, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("assemble %s: %v\n%s", name, err, b)
				}
			}
			cmd := exec.Command(objdumpCmd, "-d", obj)
			cmd.Dir = goldenDir
			out, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, out, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(goldenDir, obj))
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := File(&got, bytes.NewReader(data), obj, Options{}); err != nil {
			t.Fatal(err)
		}
		if c := compareListings(want, got.Bytes(), 10); c.mismatches > 0 || !bytes.Equal(want, got.Bytes()) {
			t.Errorf("%s: %d of %d instructions differ from objdump:\n%s", obj, c.mismatches, c.insns, c.report.String())
		}
	}
}
