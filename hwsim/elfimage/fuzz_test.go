package elfimage

// Fuzz targets. The committed seed corpora under testdata/fuzz/ hold the tiny
// binary and a few corruptions of it (regenerate with -update); the rest of
// the corruption table is added with f.Add. Run with
//
//	go test -fuzz FuzzParse -fuzztime 60s ./hwsim/elfimage
//	go test -fuzz FuzzBuildStack -fuzztime 60s ./hwsim/elfimage

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	data, err := os.ReadFile("testdata/free")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	for _, c := range corruptions(data) {
		f.Add(mutate(data, c.fn))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		im, err := Parse(b, "fuzz")
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !(e.Kind == ErrNotELF || e.Kind == ErrUnsupported || e.Kind == ErrMalformed) {
				t.Fatalf("error %v (%T) is not an *Error with a Parse sentinel", err, err)
			}
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("Parse recovered from a panic: %v", err)
			}
			if im != nil {
				t.Fatalf("image and error both returned")
			}
			return
		}
		checkImage(t, b, im)
	})
}

// FuzzParseObject is FuzzParse for ParseObject, the loader's parser, which
// accepts shared objects (ET_DYN) and reads PT_INTERP: the same promises,
// and Shared only for ET_DYN.
func FuzzParseObject(f *testing.F) {
	data, err := os.ReadFile("testdata/free")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	for _, c := range corruptions(data) {
		f.Add(mutate(data, c.fn))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		im, err := ParseObject(b, "fuzz")
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !(e.Kind == ErrNotELF || e.Kind == ErrUnsupported || e.Kind == ErrMalformed) {
				t.Fatalf("error %v (%T) is not an *Error with a Parse sentinel", err, err)
			}
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("ParseObject recovered from a panic: %v", err)
			}
			if im != nil {
				t.Fatalf("image and error both returned")
			}
			return
		}
		if im.Shared != (len(b) > 17 && b[16] == 3 && b[17] == 0) {
			t.Fatalf("Shared = %v for e_type %d", im.Shared, b[16])
		}
		if strings.IndexByte(im.Interp, 0) >= 0 {
			t.Fatalf("Interp %q holds a NUL", im.Interp)
		}
		checkImage(t, b, im)
	})
}

// checkImage checks the promises Parse makes about an Image it accepted.
func checkImage(t *testing.T, data []byte, im *Image) {
	t.Helper()
	if im.Size != int64(len(data)) || len(im.Segments) == 0 || im.PhentSize != 56 || im.PhNum < len(im.Segments) {
		t.Fatalf("Size %d, %d segments, PhentSize %d, PhNum %d", im.Size, len(im.Segments), im.PhentSize, im.PhNum)
	}
	var total uint64
	segs := slices.Clone(im.Segments)
	if im.TLS != nil {
		segs = append(segs, *im.TLS)
	}
	for i, s := range segs {
		if s.Filesz > s.Memsz || uint64(len(s.Data)) != s.Filesz || s.Offset+s.Filesz > uint64(len(data)) ||
			s.Offset+s.Filesz < s.Offset || !bytes.Equal(s.Data, data[s.Offset:s.Offset+s.Filesz]) ||
			s.Vaddr+s.Memsz < s.Vaddr || s.Vaddr+s.Memsz > UserAddrLimit {
			t.Fatalf("segment %d inconsistent: %+v", i, s)
		}
		if i < len(im.Segments) {
			total += s.Memsz
		}
	}
	if total > MaxImageMemory {
		t.Fatalf("total memory %#x", total)
	}
	for i := range im.Segments {
		for j := i + 1; j < len(im.Segments); j++ {
			a, b := im.Segments[i], im.Segments[j]
			if a.Memsz > 0 && b.Memsz > 0 && a.Vaddr < b.End() && b.Vaddr < a.End() {
				t.Fatalf("segments %d and %d overlap", i, j)
			}
		}
	}
	s, ok := im.SegmentFor(im.Entry)
	if !ok || s.Flags&PermX == 0 || im.Entry-s.Vaddr >= s.Filesz || im.Entry%4 != 0 {
		t.Fatalf("entry %#x not in an executable segment", im.Entry)
	}
	if im.TextEnd < im.TextStart {
		t.Fatalf("text [%#x, %#x)", im.TextStart, im.TextEnd)
	}
	if txt := im.Text(); txt != nil && uint64(len(txt)) != im.TextEnd-im.TextStart {
		t.Fatalf("Text() is %d bytes for [%#x, %#x)", len(txt), im.TextStart, im.TextEnd)
	}
	if im.ID.IsZero() {
		t.Fatalf("no image ID")
	}
	if im.ID.Kind == IDSHA256 {
		if sum := sha256.Sum256(data); !bytes.Equal(sum[:], im.ID.Bytes) {
			t.Fatalf("sha256 ID mismatch")
		}
	}
	for i := 1; i < len(im.Symbols); i++ {
		if im.Symbols[i-1].Addr > im.Symbols[i].Addr {
			t.Fatalf("symbols not sorted at %d", i)
		}
	}
	probe := []uint64{0, im.Entry, im.TextStart, im.TextEnd, ^uint64(0)}
	for i, s := range im.Symbols {
		if i >= 64 {
			break
		}
		probe = append(probe, s.Addr, s.Addr+s.Size, s.Addr+s.Size-1)
	}
	for _, a := range probe {
		if sym, off, ok := im.Lookup(a); ok && (sym.Addr > a || sym.Addr+off != a || sym.Size > 0 && off >= sym.Size) {
			t.Fatalf("Lookup(%#x) = %+v + %#x", a, sym, off)
		}
		if _, off, ok := im.SymbolFor(a); ok && off > a {
			t.Fatalf("SymbolFor(%#x) offset %#x", a, off)
		}
	}
	if _, _, err := BuildStack(0x11fffe000, []string{"prog"}, nil, AuxVector(im, DefaultAuxParams()), PlatformEV5, [16]byte{}, "prog"); err != nil {
		t.Fatalf("BuildStack for a parsed image: %v", err)
	}
}

func FuzzBuildStack(f *testing.F) {
	f.Add(uint64(0x11fffe000), "/bin/prog\n-x\nfile", "HOME=/\nPATH=/bin", "ev5", "/bin/prog", uint8(21), []byte("0123456789abcdef"))
	f.Add(uint64(0x10000), "", "", "", "", uint8(0), []byte{})
	f.Add(uint64(0x40), "a", "b", "c", "d", uint8(3), []byte{1})
	f.Add(uint64(0x10008), "a\x00b", "", "ev5", "x", uint8(1), []byte{})
	f.Fuzz(func(t *testing.T, top uint64, args, env, platform, execfn string, naux uint8, rnd []byte) {
		var argv, envp []string
		if args != "" {
			argv = strings.Split(args, "\n")
		}
		if env != "" {
			envp = strings.Split(env, "\n")
		}
		var random [16]byte
		copy(random[:], rnd)
		aux := AuxVector(&Image{Entry: 0x120000000, PhdrAddr: 0x120000040, PhNum: 5}, DefaultAuxParams())
		aux = aux[:int(naux)%(len(aux)+1)]
		mem, sp, err := BuildStack(top, argv, envp, aux, platform, random, execfn)
		if err != nil {
			if !errors.Is(err, ErrStack) {
				t.Fatalf("error %v does not wrap ErrStack", err)
			}
			return
		}
		if sp%16 != 0 || sp > top || uint64(len(mem)) != top-sp {
			t.Fatalf("sp %#x top %#x len %d", sp, top, len(mem))
		}
		st, err := ParseStack(mem, sp)
		if err != nil {
			t.Fatalf("ParseStack of BuildStack's stack: %v", err)
		}
		if len(argv) == 0 {
			argv = []string{""}
		}
		if !slices.Equal(st.Argv, argv) || !slices.Equal(st.Envp, envp) || len(st.Auxv) != len(aux) {
			t.Fatalf("round trip: argv %q envp %q aux %d; got %q %q %d", argv, envp, len(aux), st.Argv, st.Envp, len(st.Auxv))
		}
		for i, a := range st.Auxv {
			if a.Type != aux[i].Type {
				t.Fatalf("aux[%d] %v, want type %s", i, a, AuxName(aux[i].Type))
			}
			switch a.Type {
			case AtRandom:
				if !bytes.Equal(st.Random, random[:]) {
					t.Fatalf("random bytes %x", st.Random)
				}
			case AtExecFn:
				if st.ExecFn != execfn {
					t.Fatalf("execfn %q", st.ExecFn)
				}
			case AtPlatform:
				if st.Platform != platform {
					t.Fatalf("platform %q", st.Platform)
				}
			default:
				if a.Value != aux[i].Value {
					t.Fatalf("aux[%d] = %v, want %v", i, a, aux[i])
				}
			}
		}
	})
}

// TestWriteFuzzCorpus writes the committed seed corpora with -update.
func TestWriteFuzzCorpus(t *testing.T) {
	if !*update {
		t.Skip("run with -update to rewrite testdata/fuzz")
	}
	data := readFile(t, "testdata/free")
	seeds := map[string][]byte{"free": data}
	pick := map[string]string{
		"truncate in program headers": "truncated-phdrs",
		"x86-64":                      "x86-64",
		"PT_INTERP":                   "pt-interp",
		"overlapping segments":        "overlap",
		"symbol name beyond strtab":   "symname",
	}
	for _, c := range corruptions(data) {
		if name, ok := pick[c.name]; ok {
			seeds[name] = mutate(data, c.fn)
		}
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzParse")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range seeds {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(b)))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir = filepath.Join("testdata", "fuzz", "FuzzBuildStack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := "go test fuzz v1\nuint64(0x11fffe000)\nstring(\"/bin/prog\\nx\")\nstring(\"A=1\\nB=2\")\nstring(\"ev5\")\nstring(\"/bin/prog\")\nbyte('\\x15')\n[]byte(\"0123456789abcdef\")\n"
	if err := os.WriteFile(filepath.Join(dir, "kernel-like"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
