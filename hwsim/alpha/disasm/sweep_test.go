package disasm

// Sweeps over instruction encodings, compared word by word with objdump.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// sweepVMA is where the sweep files' .text is placed.
const sweepVMA = 0x120000000

// writeSweepELF writes a minimal ELF64 Alpha relocatable file whose only
// content is a .text section holding words, with no symbols, so objdump
// prints branch targets as bare addresses (as Insn does with a nil
// Symbolizer).
func writeSweepELF(path string, words []uint32) error {
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
	buf.Write(sh(1, uint32(elf.SHT_PROGBITS), uint64(elf.SHF_ALLOC|elf.SHF_EXECINSTR), sweepVMA, textOff, uint64(len(text)), 16))
	buf.Write(sh(7, uint32(elf.SHT_STRTAB), 0, 0, uint64(shstrOff), uint64(len(shstr)), 1))
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// objdumpWords returns objdump's text (after the bytes column) for each
// word, laid out as writeSweepELF lays them out. machine is objdump's -m
// argument ("" for the default). No two zero words may be adjacent, or
// objdump would print "..." for them.
func objdumpWords(t testing.TB, dir string, words []uint32, machine string) []string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("sweep-%d.o", len(words)))
	if err := writeSweepELF(path, words); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	args := []string{"-d"}
	if machine != "" {
		args = append(args, "-m", machine)
	}
	cmd := exec.Command(objdumpCmd, append(args, path)...)
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
		addr, rest, ok := insnLine(sc.Text())
		if !ok {
			continue
		}
		i := (addr - sweepVMA) / 4
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

// machines are the PALcode flavours and objdump's names for them.
var machines = []struct {
	pal  PAL
	name string // objdump -m
}{
	{PALNone, ""},
	{PALEV4, "alpha:ev4"},
	{PALEV5, "alpha:ev5"},
	{PALEV6, "alpha:ev6"},
}

// regPatterns are (ra, rb, low five bits) combinations that exercise the
// operand constraints objdump's table checks: zero registers (nop, clr,
// unop, negq, fclr), ra = rb = rc (mov, fmov, mt_fpcr), ret's exact form,
// and plain distinct registers.
var regPatterns = [][3]uint32{{31, 31, 31}, {1, 2, 3}, {5, 5, 5}, {31, 26, 1}}

// standardSweep returns the words of the committed sweep: every opcode
// times every value of instruction bits 5-15 (the function field of the
// operate, FP, memory-function and jump formats) times regPatterns. For
// the memory and branch formats, whose bits 5-15 are displacement, a spread
// of 15 values stands for all. The PALcode-flavoured sweeps cover the
// PALcode opcodes only, with every value of the bits their forms decode
// (10-15 for hw_ld/hw_st and the EV6 jumps, 5-12 for EV4's hw_mfpr).
func standardSweep(pal PAL) []uint32 {
	var words []uint32
	for op := uint32(0); op < 64; op++ {
		var ks []uint32
		switch {
		case pal != PALNone:
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
			for _, p := range regPatterns {
				words = append(words, op<<26|p[0]<<21|p[1]<<16|k<<5|p[2])
			}
		}
	}
	// Opcode 0 (call_pal) names exact function values: every one below
	// 0x400 with the register fields zero.
	if pal == PALNone {
		for fn := uint32(1); fn < 0x400; fn++ {
			words = append(words, fn)
		}
	}
	return words
}

// normalize turns objdump's text for a word into the committed form: the
// ".long 0x..." fallback, which follows from the word, becomes "-".
func normalize(s string) string {
	if strings.HasPrefix(s, ".long ") {
		return "-"
	}
	return s
}

const sweepGolden = "testdata/sweep.txt.gz"

// TestDisasmSweep checks Insn over the standard sweep against the
// committed expectations, and against objdump itself when it is installed
// (with -update, rewriting the golden from objdump's output after that
// check).
func TestDisasmSweep(t *testing.T) {
	var want []string
	dir := t.TempDir()
	objdump := haveObjdump()
	var all, bad int
	for _, m := range machines {
		words := standardSweep(m.pal)
		dm := Machine{PAL: m.pal}
		var ref []string
		if objdump {
			ref = objdumpWords(t, dir, words, m.name)
		}
		reported := 0
		for i, w := range words {
			got := dm.Insn(w, sweepVMA+4*uint64(i), nil)
			if ref != nil && got != ref[i] {
				bad++
				if reported < 20 {
					reported++
					t.Errorf("%s %#08x: objdump %q, ours %q", m.name, w, ref[i], got)
				}
			}
			want = append(want, normalize(got))
		}
		all += len(words)
	}
	if objdump {
		t.Logf("sweep: %d words compared with objdump, %d mismatches", all, bad)
	}
	if *update {
		if t.Failed() {
			t.Fatal("not updating the golden file: the sweep disagrees with objdump")
		}
		writeGzipLines(t, sweepGolden, want)
		return
	}
	golden := readGzipLines(t, sweepGolden)
	if len(golden) != len(want) {
		t.Fatalf("%s has %d lines, the sweep %d words: regenerate with -update", sweepGolden, len(golden), len(want))
	}
	reported := 0
	for i := range want {
		if want[i] != golden[i] && reported < 20 {
			reported++
			t.Errorf("sweep word %d: golden %q, ours %q", i, golden[i], want[i])
		}
	}
}

func writeGzipLines(t testing.TB, path string, lines []string) {
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

func readGzipLines(t testing.TB, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v (generate with go test ./hwsim/alpha/disasm -update)", err)
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

// TestDisasmSweepLarge compares Insn with objdump over much larger sweeps,
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
	if !haveObjdump() {
		t.Skip(objdumpCmd + " not installed")
	}
	type chunk struct {
		pal   PAL
		mach  string
		words func() []uint32
	}
	var chunks []chunk
	switch mode {
	case "full":
		pairs := [][2]uint32{{31, 31}, {1, 2}, {31, 26}, {26, 31}, {0, 0}, {7, 7}, {30, 30}, {31, 30}}
		for _, m := range machines {
			for op := uint32(0); op < 64; op++ {
				palOp := op == 0x19 || op == 0x1B || op == 0x1D || op == 0x1E || op == 0x1F
				if m.pal != PALNone && !palOp {
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
			chunks = append(chunks, chunk{PALNone, "", func() []uint32 {
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
				ref := objdumpWords(t, sub, words, c.mach)
				dm := Machine{PAL: c.pal}
				var buf []byte
				nbad := 0
				for i, w := range words {
					buf = dm.AppendInsn(buf[:0], w, sweepVMA+4*uint64(i), nil)
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
