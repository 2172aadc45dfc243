package alpha

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

var disUpdate = flag.Bool("update", false, "rewrite the disassembler's golden files under testdata/disasm (after checking them against objdump when it is installed)")

const disObjdump = "alpha-linux-gnu-objdump"

// disHaveObjdump reports whether the reference disassembler is installed.
func disHaveObjdump() bool {
	_, err := exec.LookPath(disObjdump)
	return err == nil
}

// disRunObjdump runs objdump -d with extra arguments on path.
func disRunObjdump(t testing.TB, path string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(disObjdump, append(append([]string{"-d"}, args...), path)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s -d %s: %v\n%s", disObjdump, path, err, stderr.Bytes())
	}
	return out
}

// disOurs disassembles path as objdump -d would print it, banner included.
func disOurs(t testing.TB, path string, opt DisasmOptions) []byte {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	buf.WriteString(DisasmFileHeader(path))
	if err := DisassembleELF(&buf, f, opt); err != nil {
		t.Fatalf("DisassembleELF %s: %v", path, err)
	}
	return buf.Bytes()
}

// disInsnLine splits an instruction line "   120000150:\t00 00 fe 2f \tunop\t"
// into its address and the rest; ok is false for other lines.
func disInsnLine(l string) (addr uint64, rest string, ok bool) {
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

// disComparison is the outcome of comparing our listing with objdump's.
type disComparison struct {
	insns, mismatches int
	report            strings.Builder
}

// disCompare compares two listings line by line, counting instruction lines
// (by address, so one missing line does not shift every later one) and
// reporting the first differences with context.
func disCompare(want, got []byte, maxReports int) *disComparison {
	c := &disComparison{}
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
		if a, rest, ok := disInsnLine(l); ok {
			ours[key{sec, a}] = rest
		} else if strings.HasPrefix(l, "Disassembly of section ") {
			sec = l
		}
	}
	reports := 0
	sec = ""
	for i, l := range wl {
		a, rest, ok := disInsnLine(l)
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

// disWorkloadELFs returns the ELF files of workloads/bin.
func disWorkloadELFs() []string {
	paths, _ := filepath.Glob("../../workloads/bin/*")
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

// disCompilePrograms compiles a small C program that uses BWX, FIX and CIX
// candidates (byte and short loads, sqrt, population counts) at -O0..-O3
// for several CPUs, statically against glibc, and as relocatable objects;
// nil without the cross compiler.
func disCompilePrograms(t *testing.T) []string {
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

// disCompareBinaries compares every line of our listing of each binary
// (all code sections) with objdump -d's.
func disCompareBinaries(t *testing.T, bins []string) {
	total, bad := 0, 0
	for _, p := range bins {
		want := disRunObjdump(t, p)
		got := disOurs(t, p, DisasmOptions{})
		c := disCompare(want, got, 5)
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
	if !disHaveObjdump() {
		t.Skip(disObjdump + " not installed")
	}
	bins := disWorkloadELFs()
	if len(bins) == 0 {
		bins = disCompilePrograms(t)
	}
	if len(bins) == 0 {
		t.Skip("no workload binaries and no cross compiler")
	}
	disCompareBinaries(t, bins)
}

// TestDisasmCompiledMatchObjdump does the same for programs compiled here
// for the EV5, EV56, EV6 and EV67 (BWX, FIX, CIX, MVI) at every -O level,
// and for relocatable objects.
func TestDisasmCompiledMatchObjdump(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles 18 programs")
	}
	if !disHaveObjdump() {
		t.Skip(disObjdump + " not installed")
	}
	bins := disCompilePrograms(t)
	if len(bins) == 0 {
		t.Skip("no cross compiler")
	}
	disCompareBinaries(t, bins)
}

// TestDisasmWorkloadGoldens checks, without objdump, that the .text listing
// of each workload binary has the SHA-256 committed in
// testdata/disasm/NAME.text.sha256, and that tiny's listing is exactly
// tiny.text.golden. With -update it rewrites them, after checking each
// listing against objdump -d -j .text when objdump is installed.
func TestDisasmWorkloadGoldens(t *testing.T) {
	bins := disWorkloadELFs()
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
		err = DisassembleText(&buf, f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		sum := sha256.Sum256(buf.Bytes())
		hash := hex.EncodeToString(sum[:]) + "  " + name + "\n"
		hashFile := filepath.Join(disGoldenDir, name+".text.sha256")
		textFile := filepath.Join(disGoldenDir, name+".text.golden")
		if *disUpdate {
			if disHaveObjdump() {
				want := disRunObjdump(t, p, "-j", ".text")
				got := append([]byte(DisasmFileHeader(p)), buf.Bytes()...)
				if c := disCompare(want, got, 5); c.mismatches > 0 {
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
			t.Errorf("%s: %v (run go test ./hwsim/alpha -run Disasm -update)", p, err)
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
				c := disCompare(golden, buf.Bytes(), 10)
				t.Errorf("tiny: listing differs from %s:\n%s", textFile, c.report.String())
			}
		}
	}
}

// disSweepVMA is where the sweep files' .text is placed.
const disSweepVMA = 0x120000000

// disWriteSweepELF writes a minimal ELF64 Alpha relocatable file whose only
// content is a .text section holding words, with no symbols, so objdump
// prints branch targets as bare addresses (as Disasm does with a nil
// Symbolizer).
func disWriteSweepELF(path string, words []uint32) error {
	const textOff = 0x1000
	shstr := []byte("\x00.text\x00.shstrtab\x00")
	text := make([]byte, 4*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint32(text[4*i:], w)
	}
	shstrOff := textOff + len(text)
	shOff := (shstrOff + len(shstr) + 7) &^ 7
	le := binary.LittleEndian
	hdr := make([]byte, 64)
	copy(hdr, "\x7fELF\x02\x01\x01")
	le.PutUint16(hdr[16:], uint16(elf.ET_REL))
	le.PutUint16(hdr[18:], uint16(elf.EM_ALPHA))
	le.PutUint32(hdr[20:], 1)
	le.PutUint64(hdr[40:], uint64(shOff))
	le.PutUint16(hdr[52:], 64) // e_ehsize
	le.PutUint16(hdr[58:], 64) // e_shentsize
	le.PutUint16(hdr[60:], 3)  // e_shnum
	le.PutUint16(hdr[62:], 2)  // e_shstrndx
	sh := func(name, typ uint32, flags, addr, off, size, align uint64) []byte {
		b := make([]byte, 64)
		le.PutUint32(b[0:], name)
		le.PutUint32(b[4:], typ)
		le.PutUint64(b[8:], flags)
		le.PutUint64(b[16:], addr)
		le.PutUint64(b[24:], off)
		le.PutUint64(b[32:], size)
		le.PutUint64(b[48:], align)
		return b
	}
	var buf bytes.Buffer
	buf.Write(hdr)
	buf.Write(make([]byte, textOff-len(hdr)))
	buf.Write(text)
	buf.Write(shstr)
	buf.Write(make([]byte, shOff-shstrOff-len(shstr)))
	buf.Write(make([]byte, 64))
	buf.Write(sh(1, uint32(elf.SHT_PROGBITS), uint64(elf.SHF_ALLOC|elf.SHF_EXECINSTR), disSweepVMA, textOff, uint64(len(text)), 16))
	buf.Write(sh(7, uint32(elf.SHT_STRTAB), 0, 0, uint64(shstrOff), uint64(len(shstr)), 1))
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// disObjdumpWords returns objdump's text (after the bytes column) for each
// word, laid out as disWriteSweepELF lays them out. machine is objdump's -m
// argument ("" for the default). No two zero words may be adjacent, or
// objdump would print "..." for them.
func disObjdumpWords(t testing.TB, dir string, words []uint32, machine string) []string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("sweep-%d.o", len(words)))
	if err := disWriteSweepELF(path, words); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	args := []string{"-d"}
	if machine != "" {
		args = append(args, "-m", machine)
	}
	cmd := exec.Command(disObjdump, append(args, path)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(words))
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		addr, rest, ok := disInsnLine(sc.Text())
		if !ok {
			continue
		}
		i := (addr - disSweepVMA) / 4
		tab := strings.IndexByte(rest, '\t')
		if i >= uint64(len(words)) || tab < 0 {
			t.Fatalf("objdump line out of place: %q", sc.Text())
		}
		out[i] = rest[tab+1:]
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("objdump: %v\n%s", err, stderr.Bytes())
	}
	for i, s := range out {
		if s == "" {
			t.Fatalf("objdump printed nothing for word %d (%#08x)", i, words[i])
		}
	}
	return out
}

// disMachines are the PALcode flavours and objdump's names for them.
var disMachines = []struct {
	pal  DisasmPAL
	name string // objdump -m
}{
	{DisasmPALNone, ""},
	{DisasmPALEV4, "alpha:ev4"},
	{DisasmPALEV5, "alpha:ev5"},
	{DisasmPALEV6, "alpha:ev6"},
}

// disRegPatterns are (ra, rb, low five bits) combinations that exercise the
// operand constraints objdump's table checks: zero registers (nop, clr,
// unop, negq, fclr), ra = rb = rc (mov, fmov, mt_fpcr), ret's exact form,
// and plain distinct registers.
var disRegPatterns = [][3]uint32{{31, 31, 31}, {1, 2, 3}, {5, 5, 5}, {31, 26, 1}}

// disStandardSweep returns the words of the committed sweep: every opcode
// times every value of instruction bits 5-15 (the function field of the
// operate, FP, memory-function and jump formats) times disRegPatterns. For
// the memory and branch formats, whose bits 5-15 are displacement, a spread
// of 15 values stands for all. The PALcode-flavoured sweeps cover the
// PALcode opcodes only, with every value of the bits their forms decode
// (10-15 for hw_ld/hw_st and the EV6 jumps, 5-12 for EV4's hw_mfpr).
func disStandardSweep(pal DisasmPAL) []uint32 {
	var words []uint32
	for op := uint32(0); op < 64; op++ {
		var ks []uint32
		switch {
		case pal != DisasmPALNone:
			if op != 0x19 && op != 0x1B && op != 0x1D && op != 0x1E && op != 0x1F {
				continue
			}
			for k := uint32(0); k < 64; k++ {
				ks = append(ks, k<<5|0x15) // bits 10-15, and some below
			}
			for k := uint32(0); k < 256; k++ {
				ks = append(ks, k) // bits 5-12
			}
		case op >= 0x08 && op <= 0x0F || op >= 0x20:
			for k := uint32(0); k < 2048; k += 137 {
				ks = append(ks, k)
			}
		default:
			for k := uint32(0); k < 2048; k++ {
				ks = append(ks, k)
			}
		}
		for _, k := range ks {
			for _, p := range disRegPatterns {
				words = append(words, op<<26|p[0]<<21|p[1]<<16|k<<5|p[2])
			}
		}
	}
	// Opcode 0 (call_pal) names exact function values: every one below
	// 0x400 with the register fields zero.
	if pal == DisasmPALNone {
		for fn := uint32(1); fn < 0x400; fn++ {
			words = append(words, fn)
		}
	}
	return words
}

// disNormalize turns objdump's text for a word into the committed form: the
// ".long 0x..." fallback, which follows from the word, becomes "-".
func disNormalize(s string) string {
	if strings.HasPrefix(s, ".long ") {
		return "-"
	}
	return s
}

const disSweepGolden = "testdata/disasm/sweep.txt.gz"

// TestDisasmSweep checks Disasm over the standard sweep against the
// committed expectations, and against objdump itself when it is installed
// (with -update, rewriting the golden from objdump's output after that
// check).
func TestDisasmSweep(t *testing.T) {
	var want []string
	dir := t.TempDir()
	objdump := disHaveObjdump()
	var all, bad int
	for _, m := range disMachines {
		words := disStandardSweep(m.pal)
		dm := DisasmModel{PAL: m.pal}
		var ref []string
		if objdump {
			ref = disObjdumpWords(t, dir, words, m.name)
		}
		reported := 0
		for i, w := range words {
			got := dm.Disasm(w, disSweepVMA+4*uint64(i), nil)
			if ref != nil && got != ref[i] {
				bad++
				if reported < 20 {
					reported++
					t.Errorf("%s %#08x: objdump %q, ours %q", m.name, w, ref[i], got)
				}
			}
			want = append(want, disNormalize(got))
		}
		all += len(words)
	}
	if objdump {
		t.Logf("sweep: %d words compared with objdump, %d mismatches", all, bad)
	}
	if *disUpdate {
		if t.Failed() {
			t.Fatal("not updating the golden file: the sweep disagrees with objdump")
		}
		disWriteGzipLines(t, disSweepGolden, want)
		return
	}
	golden := disReadGzipLines(t, disSweepGolden)
	if len(golden) != len(want) {
		t.Fatalf("%s has %d lines, the sweep %d words: regenerate with -update", disSweepGolden, len(golden), len(want))
	}
	reported := 0
	for i := range want {
		if want[i] != golden[i] && reported < 20 {
			reported++
			t.Errorf("sweep word %d: golden %q, ours %q", i, golden[i], want[i])
		}
	}
}

func disWriteGzipLines(t testing.TB, path string, lines []string) {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	for _, l := range lines {
		zw.Write([]byte(l))
		zw.Write([]byte{'\n'})
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func disReadGzipLines(t testing.TB, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v (generate with go test ./hwsim/alpha -run Disasm -update)", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestDisasmSweepLarge compares Disasm with objdump over much larger sweeps,
// run on request because they take minutes:
//
//	DCPI_DISASM_SWEEP=full        every opcode x all 2^16 values of bits 0-15
//	                              x 8 (ra, rb) pairs, on all four PALcode
//	                              flavours (about 34 million words)
//	DCPI_DISASM_SWEEP=exhaustive  all 2^32 words, objdump's default machine
func TestDisasmSweepLarge(t *testing.T) {
	mode := os.Getenv("DCPI_DISASM_SWEEP")
	if mode == "" {
		t.Skip("set DCPI_DISASM_SWEEP=full or exhaustive to run")
	}
	if !disHaveObjdump() {
		t.Skip(disObjdump + " not installed")
	}
	type chunk struct {
		pal   DisasmPAL
		mach  string
		words func() []uint32
	}
	var chunks []chunk
	switch mode {
	case "full":
		pairs := [][2]uint32{{31, 31}, {1, 2}, {31, 26}, {26, 31}, {0, 0}, {7, 7}, {30, 30}, {31, 30}}
		for _, m := range disMachines {
			for op := uint32(0); op < 64; op++ {
				palOp := op == 0x19 || op == 0x1B || op == 0x1D || op == 0x1E || op == 0x1F
				if m.pal != DisasmPALNone && !palOp {
					continue
				}
				for _, p := range pairs {
					base := op<<26 | p[0]<<21 | p[1]<<16
					chunks = append(chunks, chunk{m.pal, m.name, func() []uint32 {
						w := make([]uint32, 1<<16)
						for i := range w {
							w[i] = base | uint32(i)
						}
						return w
					}})
				}
			}
		}
	case "exhaustive":
		const n = 1 << 22
		for base := uint64(0); base < 1<<32; base += n {
			chunks = append(chunks, chunk{DisasmPALNone, "", func() []uint32 {
				w := make([]uint32, n)
				for i := range w {
					w[i] = uint32(base) + uint32(i)
				}
				return w
			}})
		}
	default:
		t.Fatalf("DCPI_DISASM_SWEEP=%q: want full or exhaustive", mode)
	}
	dir := t.TempDir()
	var mu sync.Mutex
	var compared, bad, done int
	work := make(chan chunk)
	var wg sync.WaitGroup
	for g := 0; g < runtime.NumCPU(); g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sub, _ := os.MkdirTemp(dir, "w")
			for c := range work {
				words := c.words()
				ref := disObjdumpWords(t, sub, words, c.mach)
				dm := DisasmModel{PAL: c.pal}
				var buf []byte
				nbad := 0
				for i, w := range words {
					buf = dm.AppendDisasm(buf[:0], w, disSweepVMA+4*uint64(i), nil)
					if string(buf) != ref[i] {
						nbad++
						if nbad <= 3 {
							t.Errorf("%s %#08x: objdump %q, ours %q", c.mach, w, ref[i], buf)
						}
					}
				}
				mu.Lock()
				compared += len(words)
				bad += nbad
				done++
				if done%64 == 0 {
					t.Logf("%d/%d chunks, %d words, %d mismatches", done, len(chunks), compared, bad)
				}
				mu.Unlock()
			}
		}()
	}
	for _, c := range chunks {
		work <- c
	}
	close(work)
	wg.Wait()
	t.Logf("%s sweep: %d words compared with objdump, %d mismatches", mode, compared, bad)
}

const disGoldenDir = "testdata/disasm"

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
		golden := filepath.Join(disGoldenDir, name+".objdump")
		if *disUpdate && disHaveObjdump() {
			if _, err := exec.LookPath("alpha-linux-gnu-as"); err == nil {
				cmd := exec.Command("alpha-linux-gnu-as", name+".s", "-o", obj)
				cmd.Dir = disGoldenDir
				if b, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("assemble %s: %v\n%s", name, err, b)
				}
			}
			cmd := exec.Command(disObjdump, "-d", obj)
			cmd.Dir = disGoldenDir
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
		data, err := os.ReadFile(filepath.Join(disGoldenDir, obj))
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := DisassembleFile(&got, bytes.NewReader(data), obj, DisasmOptions{}); err != nil {
			t.Fatal(err)
		}
		if c := disCompare(want, got.Bytes(), 10); c.mismatches > 0 || !bytes.Equal(want, got.Bytes()) {
			t.Errorf("%s: %d of %d instructions differ from objdump:\n%s", obj, c.mismatches, c.insns, c.report.String())
		}
	}
}

// disFakeSyms is a Symbolizer with two symbols.
type disFakeSyms struct{}

func (disFakeSyms) SymbolFor(addr uint64) (string, uint64, bool) {
	switch {
	case addr >= 0x120000200:
		return "bar", addr - 0x120000200, true
	case addr >= 0x120000100:
		return "foo", addr - 0x120000100, true
	}
	return "foo", addr - 0x120000100, true // below the first symbol: negative
}

// TestDisasmForms spells out one encoding of each form, with the text
// objdump prints for it (see handpicked.objdump for where they came from).
func TestDisasmForms(t *testing.T) {
	for _, c := range []struct {
		word uint32
		pc   uint64
		sym  Symbolizer
		want string
	}{
		{0x00000083, 0, nil, "callsys"},
		{0x0000009e, 0, nil, "rduniq"},
		{0x00001234, 0, nil, "call_pal\t0x1234"},
		{0x20220008, 0, nil, "lda\tt0,8(t1)"},
		{0x203ffff8, 0, nil, "lda\tt0,-8"},
		{0x27bb0001, 0, nil, "ldah\tgp,1(t12)"},
		{0x2ffe0000, 0, nil, "unop\t"},
		{0x2fe1ffff, 0, nil, "unop\t"},
		{0x2c220007, 0, nil, "ldq_u\tt0,7(t1)"},
		{0x28220000, 0, nil, "ldbu\tt0,0(t1)"},
		{0x43e10002, 0, nil, "sextl\tt0,t1"},
		{0x43e0f002, 0, nil, "sextl\t0x7,t1"},
		{0x403ff003, 0, nil, "addl\tt0,0xff,t2"},
		{0x43e10522, 0, nil, "negq\tt0,t1"},
		{0x43e20d23, 0, nil, "negq/v\tt1,t2"},
		{0x44220103, 0, nil, "andnot\tt0,t1,t2"},
		{0x47ff041f, 0, nil, "nop\t"},
		{0x47ff0405, 0, nil, "clr\tt4"},
		{0x47e60405, 0, nil, "mov\tt5,t4"},
		{0x44c60405, 0, nil, "mov\tt5,t4"},
		{0x47f91405, 0, nil, "mov\t0xc8,t4"},
		{0x44220403, 0, nil, "or\tt0,t1,t2"},
		{0x47e10502, 0, nil, "not\tt0,t1"},
		{0x47e10c20, 0, nil, "amask\tt0,v0"},
		{0x47e03d80, 0, nil, "implver\tv0"},
		{0x4827f723, 0, nil, "sll\tt0,0x3f,t2"},
		{0x4c213c03, 0, nil, "mulq/v\tt0,0x9,t2"},
		{0x503f0082, 0, nil, "itofs\tt0,$f2"},
		{0x53e1f562, 0, nil, "sqrtt/sui\t$f1,$f2"},
		{0x5822f403, 0, nil, "addt/sui\t$f1,$f2,$f3"},
		{0x5be21423, 0, nil, "negt\t$f2,$f3"},
		{0x5be20423, 0, nil, "subt/c\t$f31,$f2,$f3"},
		{0x5be2a5e3, 0, nil, "cvttq/svc\t$f2,$f3"},
		{0x5be25583, 0, nil, "cvtst\t$f2,$f3"},
		{0x57e29023, 0, nil, "negf/s\t$f2,$f3"},
		{0x5fff041f, 0, nil, "fnop\t"},
		{0x5fff0404, 0, nil, "fclr\t$f4"},
		{0x5fe20404, 0, nil, "fabs\t$f2,$f4"},
		{0x5c420404, 0, nil, "fmov\t$f2,$f4"},
		{0x5c420424, 0, nil, "fneg\t$f2,$f4"},
		{0x5c000480, 0, nil, "mt_fpcr\t$f0"},
		{0x5c0004a0, 0, nil, "mf_fpcr\t$f0"},
		{0x5c010480, 0, nil, ".long 0x5c010480"},
		{0x60000000, 0, nil, "trapb"},
		{0x60004000, 0, nil, "mb"},
		{0x63e18000, 0, nil, "fetch\t(t0)"},
		{0x603fc000, 0, nil, "rpcc\tt0"},
		{0x6022c000, 0, nil, "rpcc\tt0,t1"},
		{0x63e1f800, 0, nil, "wh64\t(t0)"},
		{0x64000000, 0, nil, "pal19\t0"},
		{0x6bfb0000, 0, nil, "jmp\t(t12)"},
		{0x6b5b4025, 0x1f4, nil, "jsr\tra,(t12),0x28c"},
		{0x6b5b4000, 0x1200001f8, disFakeSyms{}, "jsr\tra,(t12),1200001fc <foo+0xfc>"},
		{0x6bfa8001, 0, nil, "ret"},
		{0x6bfa8000, 0, nil, "ret\tzero,(ra),0"},
		{0x6822c001, 0, nil, "jcr\tt0,(t1),0x1"},
		{0x73e10002, 0, nil, "sextb\tt0,t1"},
		{0x73e10602, 0, nil, "ctpop\tt0,t1"},
		{0x7020f7a3, 0, nil, "maxuw4\tt0,0x7,t2"},
		{0x703f0e02, 0, nil, "ftoit\t$f1,t1"},
		{0x8c3efff8, 0, nil, "ldt\t$f1,-8(sp)"},
		{0xa4227fff, 0, nil, "ldq\tt0,32767(t1)"},
		{0xac228000, 0, nil, "ldq_l\tt0,-32768(t1)"},
		{0xb43f0008, 0, nil, "stq\tt0,8(zero)"},
		{0xc3ffffff, 0x12000028c, disFakeSyms{}, "br\t12000028c <bar+0x8c>"},
		{0xc3400012, 0x120000290, disFakeSyms{}, "br\tra,1200002dc <bar+0xdc>"},
		{0xc3e00000, 0x120000000, disFakeSyms{}, "br\t120000004 <foo-0xfc>"},
		{0xc43ffffd, 0x294, nil, "fbeq\t$f1,0x28c"},
		{0xfc200003, 0x2cc, nil, "bgt\tt0,0x2dc"},
		{0x04000000, 0, nil, ".long 0x4000000"},
		{0x5800ffe0, 0, nil, ".long 0x5800ffe0"},
	} {
		if got := Disasm(c.word, c.pc, c.sym); got != c.want {
			t.Errorf("Disasm(%#08x, %#x) = %q, want %q", c.word, c.pc, got, c.want)
		}
	}
}

func TestDisasmModelLacks(t *testing.T) {
	for _, c := range []struct {
		word  uint32
		model Model
		lacks bool
	}{
		{0x40220403, EV5, false},  // addq
		{0x47e10c20, EV5, false},  // amask: base architecture
		{0x28220000, EV5, true},   // ldbu: BWX
		{0x28220000, EV56, false}, // ldbu
		{0x73e10002, EV5, true},   // sextb: BWX
		{0x53e1f562, EV56, true},  // sqrtt/sui: FIX
		{0x53e1f562, EV6, false},  // sqrtt/sui
		{0x703f0e02, EV56, true},  // ftoit: FIX
		{0x73e10602, EV6, true},   // ctpop: CIX
		{0x73e10602, EV67, false}, // ctpop
		{0x7020f7a3, EV56, true},  // maxuw4: MVI
		{0x7020f7a3, PCA56, false},
		{0x64000000, EV67, true}, // pal19 (hw_mfpr): PALcode mode only
		{0x04000000, EV67, true}, // reserved opcode
		{0x00000083, EV5, false}, // callsys
	} {
		if got := (DisasmModel{Model: c.model}).Lacks(c.word); got != c.lacks {
			t.Errorf("%s Lacks(%#08x %q) = %v, want %v", c.model.Name, c.word, Disasm(c.word, 0, nil), got, c.lacks)
		}
	}
	if ext, ok := DisasmExt(0x28220000); ext != ExtBWX || !ok {
		t.Errorf("DisasmExt(ldbu) = %#x, %v", ext, ok)
	}
	if _, ok := DisasmExt(0x04000000); ok {
		t.Error("DisasmExt says a reserved opcode is defined")
	}
}

// TestDisasmPALModels spot-checks the PALcode flavours (the sweeps compare
// them all with objdump -m alpha:evN).
func TestDisasmPALModels(t *testing.T) {
	for _, c := range []struct {
		pal  DisasmPAL
		word uint32
		want string
	}{
		{DisasmPALNone, 0x7bffc000, "pal1e\t0x3ffc000"},
		{DisasmPALEV5, 0x7bffc000, "hw_rei_stall"},
		{DisasmPALEV4, 0x7bff8000, "hw_rei"},
		{DisasmPALEV6, 0x7bffc000, "hw_jcr\t(zero)"},
		{DisasmPALEV5, 0x64000000, "hw_mfpr\tv0,0"},
		{DisasmPALEV6, 0x64000000, "pal19\t0"},
		{DisasmPALEV5, 0x6ca56da5, "hw_ldl/awv\tt4,421(t4)"},
		{DisasmPALEV4, 0x7c22ffe3, "hw_stq/par\tt0,-29(t1)"},
		{DisasmPALEV6, 0x6c000000, "hw_ldl/p\tv0,0(v0)"},
	} {
		if got := (DisasmModel{PAL: c.pal}).Disasm(c.word, 0, nil); got != c.want {
			t.Errorf("PAL %d %#08x: %q, want %q", c.pal, c.word, got, c.want)
		}
	}
}

func TestDisassembleFileBadInput(t *testing.T) {
	var out bytes.Buffer
	err := DisassembleFile(&out, strings.NewReader("#!/bin/sh\necho hi\n"), "script", DisasmOptions{})
	if err == nil || !strings.Contains(err.Error(), "not an ELF file") {
		t.Errorf("script: err %v", err)
	}
	// A host ELF file (this test binary) is not Alpha.
	self, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer self.Close()
	if err := DisassembleFile(&out, self, "self", DisasmOptions{}); !errors.Is(err, ErrDisasmNotAlpha) {
		t.Errorf("host binary: err %v, want ErrDisasmNotAlpha", err)
	}
	// Truncations of a real file never panic.
	data, err := os.ReadFile(filepath.Join(disGoldenDir, "handpicked.o"))
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(data); n += 7 {
		DisassembleFile(io.Discard, bytes.NewReader(data[:n]), "cut", DisasmOptions{})
	}
	if out.Len() != 0 {
		t.Errorf("printed %q before failing", out.String())
	}
	f, err := elf.Open(filepath.Join(disGoldenDir, "handpicked.o"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := DisassembleELF(&out, f, DisasmOptions{Sections: []string{".nope"}}); err == nil {
		t.Error("missing section: no error")
	}
}

// FuzzDisasm checks that every word disassembles to one non-empty line on
// every PALcode flavour, the same through every entry point, and to the
// .long fallback exactly when the word is undefined.
func FuzzDisasm(f *testing.F) {
	for _, w := range []uint32{
		0x47ff041f, 0x2ffe0000, 0xa43e0008, 0x6bfa8001, 0x00000083,
		0x5822f403, 0x5c000480, 0x73e10602, 0x28220000, 0x64000000,
		0x60004000, 0x703f0e02, 0xc3ffffff, 0x04000000, 0x7bffc000,
	} {
		f.Add(w)
	}
	f.Fuzz(func(t *testing.T, w uint32) {
		for _, m := range disMachines {
			d := DisasmModel{PAL: m.pal}
			for _, sym := range []Symbolizer{nil, disFakeSyms{}} {
				s := d.Disasm(w, 0x120000000, sym)
				if s == "" || strings.ContainsAny(s, "\n\x00") || s[0] == '\t' {
					t.Fatalf("%s %#08x: %q", m.name, w, s)
				}
				if a := string(d.AppendDisasm([]byte("x"), w, 0x120000000, sym)); a != "x"+s {
					t.Fatalf("%s %#08x: AppendDisasm %q, Disasm %q", m.name, w, a, s)
				}
			}
		}
		s := Disasm(w, 0, nil)
		_, defined := DisasmExt(w)
		if defined == strings.HasPrefix(s, ".long ") {
			t.Fatalf("%#08x: %q, defined %v", w, s, defined)
		}
	})
}

// disBenchText returns the .text words of a workload binary and its address.
func disBenchText(b *testing.B) (path string, words []uint32, vma uint64) {
	path = "../../workloads/bin/hello"
	f, err := elf.Open(path)
	if err != nil {
		b.Skip("no workload binary: ", err)
	}
	defer f.Close()
	s := f.Section(".text")
	data, err := s.Data()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i+4 <= len(data); i += 4 {
		words = append(words, binary.LittleEndian.Uint32(data[i:]))
	}
	return path, words, s.Addr
}

// BenchmarkDisasm measures instructions per second: one instruction's text
// (AppendDisasm, no symbols), a whole objdump-format .text listing with
// labels and <sym+off> targets (DisassembleText), and, as the baseline,
// alpha-linux-gnu-objdump -d -j .text on the same file.
func BenchmarkDisasm(b *testing.B) {
	path, words, vma := disBenchText(b)
	insnsPerSec := func(b *testing.B, n int) {
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "insns/s")
	}
	b.Run("AppendDisasm", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			for i, w := range words {
				buf = AppendDisasm(buf[:0], w, vma+4*uint64(i), nil)
			}
		}
		insnsPerSec(b, len(words))
	})
	b.Run("DisassembleText", func(b *testing.B) {
		f, err := elf.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		for b.Loop() {
			if err := DisassembleText(io.Discard, f); err != nil {
				b.Fatal(err)
			}
		}
		insnsPerSec(b, len(words))
	})
	b.Run("objdump", func(b *testing.B) {
		if !disHaveObjdump() {
			b.Skip(disObjdump + " not installed")
		}
		for b.Loop() {
			cmd := exec.Command(disObjdump, "-d", "-j", ".text", path)
			cmd.Stdout = io.Discard
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
		insnsPerSec(b, len(words))
	})
}
