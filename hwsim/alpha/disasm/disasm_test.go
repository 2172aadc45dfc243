package disasm

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/hwsim/alpha"
)

// fakeSyms is a Symbolizer with two symbols.
type fakeSyms struct{}

func (fakeSyms) SymbolFor(addr uint64) (string, uint64, bool) {
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
		{0x6b5b4000, 0x1200001f8, fakeSyms{}, "jsr\tra,(t12),1200001fc <foo+0xfc>"},
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
		{0xc3ffffff, 0x12000028c, fakeSyms{}, "br\t12000028c <bar+0x8c>"},
		{0xc3400012, 0x120000290, fakeSyms{}, "br\tra,1200002dc <bar+0xdc>"},
		{0xc3e00000, 0x120000000, fakeSyms{}, "br\t120000004 <foo-0xfc>"},
		{0xc43ffffd, 0x294, nil, "fbeq\t$f1,0x28c"},
		{0xfc200003, 0x2cc, nil, "bgt\tt0,0x2dc"},
		{0x04000000, 0, nil, ".long 0x4000000"},
		{0x5800ffe0, 0, nil, ".long 0x5800ffe0"},
	} {
		if got := Insn(c.word, c.pc, c.sym); got != c.want {
			t.Errorf("Insn(%#08x, %#x) = %q, want %q", c.word, c.pc, got, c.want)
		}
	}
}

func TestDisasmModelLacks(t *testing.T) {
	for _, c := range []struct {
		word  uint32
		model alpha.Model
		lacks bool
	}{
		{0x40220403, alpha.EV5, false},  // addq
		{0x47e10c20, alpha.EV5, false},  // amask: base architecture
		{0x28220000, alpha.EV5, true},   // ldbu: BWX
		{0x28220000, alpha.EV56, false}, // ldbu
		{0x73e10002, alpha.EV5, true},   // sextb: BWX
		{0x53e1f562, alpha.EV56, true},  // sqrtt/sui: FIX
		{0x53e1f562, alpha.EV6, false},  // sqrtt/sui
		{0x703f0e02, alpha.EV56, true},  // ftoit: FIX
		{0x73e10602, alpha.EV6, true},   // ctpop: CIX
		{0x73e10602, alpha.EV67, false}, // ctpop
		{0x7020f7a3, alpha.EV56, true},  // maxuw4: MVI
		{0x7020f7a3, alpha.PCA56, false},
		{0x64000000, alpha.EV67, true}, // pal19 (hw_mfpr): PALcode mode only
		{0x04000000, alpha.EV67, true}, // reserved opcode
		{0x00000083, alpha.EV5, false}, // callsys
	} {
		if got := (Machine{Model: c.model}).Lacks(c.word); got != c.lacks {
			t.Errorf("%s Lacks(%#08x %q) = %v, want %v", c.model.Name, c.word, Insn(c.word, 0, nil), got, c.lacks)
		}
	}
	if ext, ok := Needs(0x28220000); ext != alpha.ExtBWX || !ok {
		t.Errorf("Ext(ldbu) = %#x, %v", ext, ok)
	}
	if _, ok := Needs(0x04000000); ok {
		t.Error("Ext says a reserved opcode is defined")
	}
}

// TestDisasmPALModels spot-checks the PALcode flavours (the sweeps compare
// them all with objdump -m alpha:evN).
func TestDisasmPALModels(t *testing.T) {
	for _, c := range []struct {
		pal  PAL
		word uint32
		want string
	}{
		{PALNone, 0x7bffc000, "pal1e\t0x3ffc000"},
		{PALEV5, 0x7bffc000, "hw_rei_stall"},
		{PALEV4, 0x7bff8000, "hw_rei"},
		{PALEV6, 0x7bffc000, "hw_jcr\t(zero)"},
		{PALEV5, 0x64000000, "hw_mfpr\tv0,0"},
		{PALEV6, 0x64000000, "pal19\t0"},
		{PALEV5, 0x6ca56da5, "hw_ldl/awv\tt4,421(t4)"},
		{PALEV4, 0x7c22ffe3, "hw_stq/par\tt0,-29(t1)"},
		{PALEV6, 0x6c000000, "hw_ldl/p\tv0,0(v0)"},
	} {
		if got := (Machine{PAL: c.pal}).Insn(c.word, 0, nil); got != c.want {
			t.Errorf("PAL %d %#08x: %q, want %q", c.pal, c.word, got, c.want)
		}
	}
}

func TestDisassembleFileBadInput(t *testing.T) {
	var out bytes.Buffer
	err := File(&out, strings.NewReader("#!/bin/sh\necho hi\n"), "script", Options{})
	if err == nil || !strings.Contains(err.Error(), "not an ELF file") {
		t.Errorf("script: err %v", err)
	}
	// A host ELF file (this test binary) is not Alpha.
	self, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer self.Close()
	if err := File(&out, self, "self", Options{}); !errors.Is(err, ErrNotAlpha) {
		t.Errorf("host binary: err %v, want ErrNotAlpha", err)
	}
	// Truncations of a real file never panic.
	data, err := os.ReadFile(filepath.Join(goldenDir, "handpicked.o"))
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(data); n += 7 {
		File(io.Discard, bytes.NewReader(data[:n]), "cut", Options{})
	}
	if out.Len() != 0 {
		t.Errorf("printed %q before failing", out.String())
	}
	f, err := elf.Open(filepath.Join(goldenDir, "handpicked.o"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := ELF(&out, f, Options{Sections: []string{".nope"}}); err == nil {
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
		for _, m := range machines {
			d := Machine{PAL: m.pal}
			for _, sym := range []Symbolizer{nil, fakeSyms{}} {
				s := d.Insn(w, 0x120000000, sym)
				if s == "" || strings.ContainsAny(s, "\n\x00") || s[0] == '\t' {
					t.Fatalf("%s %#08x: %q", m.name, w, s)
				}
				if a := string(d.AppendInsn([]byte("x"), w, 0x120000000, sym)); a != "x"+s {
					t.Fatalf("%s %#08x: AppendInsn %q, Insn %q", m.name, w, a, s)
				}
			}
		}
		s := Insn(w, 0, nil)
		_, defined := Needs(w)
		if defined == strings.HasPrefix(s, ".long ") {
			t.Fatalf("%#08x: %q, defined %v", w, s, defined)
		}
	})
}

// benchText returns the .text words of a workload binary and its address.
func benchText(b *testing.B) (path string, words []uint32, vma uint64) {
	path = "../../../workloads/bin/hello"
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
// (AppendInsn, no symbols), a whole objdump-format .text listing with
// labels and <sym+off> targets (Text), and, as the baseline,
// alpha-linux-gnu-objdump -d -j .text on the same file.
func BenchmarkDisasm(b *testing.B) {
	path, words, vma := benchText(b)
	insnsPerSec := func(b *testing.B, n int) {
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "insns/s")
	}
	b.Run("AppendInsn", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			for i, w := range words {
				buf = AppendInsn(buf[:0], w, vma+4*uint64(i), nil)
			}
		}
		insnsPerSec(b, len(words))
	})
	b.Run("Text", func(b *testing.B) {
		f, err := elf.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		for b.Loop() {
			if err := Text(io.Discard, f); err != nil {
				b.Fatal(err)
			}
		}
		insnsPerSec(b, len(words))
	})
	b.Run("objdump", func(b *testing.B) {
		if !haveObjdump() {
			b.Skip(objdumpCmd + " not installed")
		}
		for b.Loop() {
			cmd := exec.Command(objdumpCmd, "-d", "-j", ".text", path)
			cmd.Stdout = io.Discard
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
		insnsPerSec(b, len(words))
	})
}
