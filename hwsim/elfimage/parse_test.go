package elfimage

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func parseFile(t testing.TB, path string) *Image {
	t.Helper()
	im, err := Parse(readFile(t, path), path)
	if err != nil {
		t.Fatalf("Parse(%s): %v", path, err)
	}
	return im
}

func permOf(flags string) Perm {
	var p Perm
	if strings.Contains(flags, "R") {
		p |= PermR
	}
	if strings.Contains(flags, "W") {
		p |= PermW
	}
	if strings.Contains(flags, "E") {
		p |= PermX
	}
	return p
}

var kindOf = map[string]SymKind{"FUNC": SymFunc, "OBJECT": SymObject, "NOTYPE": SymNoType, "IFUNC": SymIFunc}

// checkAgainstReadelf compares an Image with what readelf says about the
// same file: entry, every program header, every FUNC symbol with its size,
// the code labels, and the build ID.
func checkAgainstReadelf(t *testing.T, im *Image, r readelfOut) {
	t.Helper()
	if im.Entry != r.entry {
		t.Errorf("Entry = %#x, readelf says %#x", im.Entry, r.entry)
	}
	if im.PhNum != len(r.phdrs) {
		t.Errorf("PhNum = %d, readelf lists %d program headers", im.PhNum, len(r.phdrs))
	}
	var loads []readelfPhdr
	for _, ph := range r.phdrs {
		switch ph.typ {
		case "LOAD":
			loads = append(loads, ph)
		case "TLS":
			if im.TLS == nil {
				t.Errorf("readelf shows PT_TLS, Image.TLS is nil")
			} else if im.TLS.Vaddr != ph.vaddr || im.TLS.Memsz != ph.memsz || im.TLS.Filesz != ph.filesz || im.TLS.Align != ph.align {
				t.Errorf("TLS = %+v, readelf says %+v", *im.TLS, ph)
			}
		}
	}
	if len(im.Segments) != len(loads) {
		t.Fatalf("%d segments, readelf shows %d PT_LOAD", len(im.Segments), len(loads))
	}
	for i, ph := range loads {
		s := im.Segments[i]
		if s.Vaddr != ph.vaddr || s.Memsz != ph.memsz || s.Filesz != ph.filesz || s.Offset != ph.off ||
			s.Align != ph.align || s.Flags != permOf(ph.flags) || uint64(len(s.Data)) != ph.filesz {
			t.Errorf("segment %d = {vaddr %#x memsz %#x filesz %#x off %#x align %#x %v len(Data) %d}, readelf says %+v",
				i, s.Vaddr, s.Memsz, s.Filesz, s.Offset, s.Align, s.Flags, len(s.Data), ph)
		}
	}

	type key struct {
		name string
		addr uint64
	}
	have := map[key]Symbol{}
	for i, s := range im.Symbols {
		have[key{s.Name, s.Addr}] = s
		if i > 0 && im.Symbols[i-1].Addr > s.Addr {
			t.Errorf("Symbols not sorted: %s %#x after %s %#x", s.Name, s.Addr, im.Symbols[i-1].Name, im.Symbols[i-1].Addr)
		}
	}
	want := 0
	nfunc := 0
	for _, rs := range r.syms {
		ndx, err := strconv.Atoi(rs.ndx)
		if err != nil || rs.name == "" {
			continue // UND, ABS
		}
		kind, known := kindOf[rs.typ]
		if !known {
			continue
		}
		code := rs.typ == "FUNC" || rs.typ == "IFUNC" || im.Sections[ndx-1].Exec()
		if !code {
			continue
		}
		want++
		s, ok := have[key{rs.name, rs.value}]
		if !ok {
			t.Errorf("readelf symbol %d %s %s at %#x (size %d) missing from Symbols", rs.num, rs.typ, rs.name, rs.value, rs.size)
			continue
		}
		if rs.typ == "FUNC" {
			nfunc++
		}
		if s.Size != rs.size || s.Kind != kind || s.Global != (rs.bind != "LOCAL") || s.Weak != (rs.bind == "WEAK") {
			t.Errorf("symbol %s = %+v, readelf says %+v", rs.name, s, rs)
		}
	}
	// Aliases (one name at one address twice) collapse in the map; count
	// the Symbols list itself.
	if len(im.Symbols) != want {
		t.Errorf("Symbols has %d entries, readelf shows %d code symbols", len(im.Symbols), want)
	}
	if nfunc == 0 {
		t.Errorf("no FUNC symbols compared")
	}

	if r.buildID != "" {
		if got := im.ID.String(); got != "buildid:"+r.buildID {
			t.Errorf("ID = %s, readelf -n says build ID %s", got, r.buildID)
		}
	} else if im.ID.Kind != IDSHA256 {
		t.Errorf("ID kind = %v without a build-id note", im.ID.Kind)
	}
}

// checkAgainstObjdump checks SymbolFor on every address objdump symbolized
// in an operand, and, with headers, on its "<name>:" headings too. objdump
// breaks ties between symbols at one address in favour of the section being
// disassembled, SymbolFor in favour of the section containing the address;
// references that cross sections are skipped. Headings of -D output are
// skipped: at section starts objdump looks for a symbol in that section only
// (printing <sym-0x..> or <.section>), which is not what SymbolFor answers.
func checkAgainstObjdump(t *testing.T, im *Image, refs []objdumpRef, headers bool) {
	t.Helper()
	bad, n := 0, 0
	idx := im.index()
	for _, r := range refs {
		if r.header && !headers || !r.header && idx.sectionOf(r.from) != idx.sectionOf(r.addr) {
			continue
		}
		n++
		name, off, ok := im.SymbolFor(r.addr)
		if !ok {
			// objdump falls back to <section+off> (or to the first symbol
			// with a negative offset) when no symbol precedes the address.
			continue
		}
		if name != r.name || off != r.offset {
			bad++
			if bad <= 20 {
				t.Errorf("SymbolFor(%#x) = <%s+%#x>, objdump printed <%s+%#x> in %q", r.addr, name, off, r.name, r.offset, r.line)
			}
		}
	}
	if bad > 20 {
		t.Errorf("... %d mismatches in all, of %d references", bad, n)
	}
	if n < len(refs)/2 {
		t.Errorf("only %d of %d references compared", n, len(refs))
	}
}

// checkLookupInvariants checks Lookup on every sized function: at its first
// and last instruction it finds a symbol that covers the address and is no
// farther out than the function itself.
func checkLookupInvariants(t *testing.T, im *Image) {
	t.Helper()
	for _, s := range im.Symbols {
		if s.Size < 4 || (s.Kind != SymFunc && s.Kind != SymIFunc) {
			continue
		}
		for _, a := range []uint64{s.Addr, s.Addr + s.Size/2&^3, s.Addr + s.Size - 4} {
			got, off, ok := im.Lookup(a)
			if !ok || got.Addr+off != a || got.Size == 0 || got.Addr < s.Addr || a-got.Addr >= got.Size {
				t.Errorf("Lookup(%#x) in %s [%#x,+%#x) = %+v+%#x, %v", a, s.Name, s.Addr, s.Size, got, off, ok)
			}
		}
	}
}

func TestParseCommittedBinary(t *testing.T) {
	im := parseFile(t, "testdata/free")
	checkAgainstReadelf(t, im, parseReadelf(t, readFile(t, "testdata/free.readelf")))
	checkAgainstObjdump(t, im, parseObjdump(t, readFile(t, "testdata/free.objdump")), true)
	checkLookupInvariants(t, im)

	if im.Path != "testdata/free" || im.Size != int64(len(readFile(t, "testdata/free"))) {
		t.Errorf("Path, Size = %q, %d", im.Path, im.Size)
	}
	if im.TLS == nil || im.TLS.Filesz != 8 || len(im.TLS.Data) != 8 || im.TLS.Data[0] != 7 {
		t.Errorf("TLS = %+v, want the 8-byte initializer of tls_counter (7)", im.TLS)
	}
	if im.PhentSize != 56 || im.PhdrAddr != im.Segments[0].Vaddr+64 {
		t.Errorf("PhdrAddr, PhentSize = %#x, %d; want %#x, 56", im.PhdrAddr, im.PhentSize, im.Segments[0].Vaddr+64)
	}
	var text *Section
	for i := range im.Sections {
		if im.Sections[i].Name == ".text" {
			text = &im.Sections[i]
		}
	}
	if text == nil || im.TextStart != text.Addr || im.TextEnd != text.Addr+text.Size || im.TextStart != im.Entry {
		t.Errorf("TextStart, TextEnd = %#x, %#x; .text = %+v, entry %#x", im.TextStart, im.TextEnd, text, im.Entry)
	}
	if b := im.Text(); uint64(len(b)) != im.TextEnd-im.TextStart ||
		string(b[:4]) != string(readFile(t, "testdata/free")[text.Offset:text.Offset+4]) {
		t.Errorf("Text() = %d bytes, want the file's .text", len(b))
	}
	if im.Segments[0].Flags.String() != "r-x" || im.Segments[1].Flags.String() != "rw-" {
		t.Errorf("segment perms %v %v", im.Segments[0].Flags, im.Segments[1].Flags)
	}
}

// symAddr returns the address of the named symbol in im.Symbols.
func symAddr(t *testing.T, im *Image, name string) Symbol {
	t.Helper()
	for _, s := range im.Symbols {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no symbol %s", name)
	return Symbol{}
}

func TestLookup(t *testing.T) {
	im := parseFile(t, "testdata/free")
	start := symAddr(t, im, "_start") // NOTYPE GLOBAL, size 0
	spin := symAddr(t, im, "spin")    // FUNC, size 0, contains .Lspin_loop
	loop := symAddr(t, im, ".Lspin_loop")
	emit := symAddr(t, im, "emit") // FUNC LOCAL, sized
	sum := symAddr(t, im, "sum")
	alias := symAddr(t, im, "emit_alias") // GLOBAL; do_emit is a WEAK alias
	cstart := symAddr(t, im, "cstart")
	if spin.Size != 0 || start.Size != 0 || loop.Kind != SymNoType || loop.Global || emit.Global || !symAddr(t, im, "do_emit").Weak {
		t.Fatalf("test binary changed: %+v %+v %+v %+v", start, spin, loop, emit)
	}
	tests := []struct {
		addr uint64
		want string // "" = no symbol
		off  uint64
	}{
		{start.Addr, "_start", 0},
		{start.Addr + 4, "_start", 4},
		{spin.Addr - 4, "_start", spin.Addr - 4 - start.Addr}, // zero-size label extends to the next function
		{spin.Addr, "spin", 0},
		{loop.Addr, "spin", loop.Addr - spin.Addr}, // a local label inside a zero-size function does not cut it
		{loop.Addr + 8, "spin", loop.Addr + 8 - spin.Addr},
		{emit.Addr - 4, "spin", emit.Addr - 4 - spin.Addr},
		{emit.Addr, "emit", 0},
		{emit.Addr + emit.Size - 4, "emit", emit.Size - 4}, // last instruction
		{emit.Addr + emit.Size, "", 0},                     // padding after a sized function
		{sum.Addr - 4, "", 0},
		{sum.Addr + 0x20, "sum", 0x20},
		{alias.Addr + 4, "emit_alias", 4}, // GLOBAL preferred to the WEAK alias
		{cstart.Addr + cstart.Size - 4, "cstart", cstart.Size - 4},
		{cstart.Addr + cstart.Size, "", 0},
		{im.Segments[0].Vaddr, "", 0}, // ELF header
		{0, "", 0},
		{^uint64(0), "", 0},
	}
	for _, tc := range tests {
		s, off, ok := im.Lookup(tc.addr)
		if tc.want == "" {
			if ok {
				t.Errorf("Lookup(%#x) = %s+%#x, want no symbol", tc.addr, s.Name, off)
			}
			continue
		}
		if !ok || s.Name != tc.want || off != tc.off {
			t.Errorf("Lookup(%#x) = %s+%#x, %v; want %s+%#x", tc.addr, s.Name, off, ok, tc.want, tc.off)
		}
	}

	// SymbolFor follows objdump: nearest symbol, labels included, sizes ignored.
	for _, tc := range []struct {
		addr uint64
		want string
		off  uint64
	}{
		{loop.Addr + 8, ".Lspin_loop", 8},
		{emit.Addr + emit.Size, "emit", emit.Size},
		{alias.Addr, "emit_alias", 0},
		{start.Addr, "_start", 0},
	} {
		name, off, ok := im.SymbolFor(tc.addr)
		if !ok || name != tc.want || off != tc.off {
			t.Errorf("SymbolFor(%#x) = %s+%#x, %v; want %s+%#x", tc.addr, name, off, ok, tc.want, tc.off)
		}
	}
	// Like objdump, SymbolFor counts TLS symbols at their TLS offsets: a
	// small address gets <tls_counter+off>.
	if name, off, ok := im.SymbolFor(0x1000); !ok || name != "tls_counter" || off != 0x1000 {
		t.Errorf("SymbolFor(0x1000) = %s+%#x, %v; want tls_counter+0x1000 as objdump prints", name, off, ok)
	}
}

// TestLookupWithoutParse checks that an Image assembled by hand still
// answers lookups (from a temporary index).
func TestLookupWithoutParse(t *testing.T) {
	im := &Image{Symbols: []Symbol{
		{Name: "b", Addr: 0x200, Size: 0x10, Kind: SymFunc, Global: true},
		{Name: "a", Addr: 0x100, Kind: SymFunc, Global: true},
		{Name: "inner", Addr: 0x204, Size: 4, Kind: SymFunc},
	}}
	for _, tc := range []struct {
		addr uint64
		want string
	}{{0x100, "a"}, {0x1fc, "a"}, {0x200, "b"}, {0x204, "inner"}, {0x208, "b"}, {0x210, ""}, {0xff, ""}} {
		s, _, ok := im.Lookup(tc.addr)
		if (tc.want == "") == ok || ok && s.Name != tc.want {
			t.Errorf("Lookup(%#x) = %q, %v; want %q", tc.addr, s.Name, ok, tc.want)
		}
	}
}

func TestImageID(t *testing.T) {
	data := readFile(t, "testdata/free")
	im := parseFile(t, "testdata/free")
	if im.ID.Kind != IDBuildID || len(im.ID.Bytes) != 20 {
		t.Fatalf("ID = %v, want a 20-byte build ID", im.ID)
	}
	back, err := ParseImageID(im.ID.String())
	if err != nil || !back.Equal(im.ID) || back.Key() != im.ID.Key() {
		t.Errorf("ParseImageID(%s) = %v, %v", im.ID, back, err)
	}

	// Without the note (section and PT_NOTE turned into something else),
	// the ID is the SHA-256 of the file.
	nb := mutate(data, func(f *elfFile) {
		for i := range f.sh {
			if f.sh[i].typ == shtNote {
				f.setShType(i, 1) // SHT_PROGBITS
			}
		}
	})
	im2, err := Parse(nb, "nobuildid")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(nb)
	if want := "sha256:" + hex.EncodeToString(sum[:]); im2.ID.String() != want {
		t.Errorf("ID = %s, want %s", im2.ID, want)
	}
	if back, err := ParseImageID(im2.ID.Key()); err != nil || !back.Equal(im2.ID) {
		t.Errorf("ParseImageID(%s) = %v, %v", im2.ID, back, err)
	}
	for _, bad := range []string{"", "buildid", "md5:00", "sha256:00", "buildid:xyz", "buildid:"} {
		if _, err := ParseImageID(bad); err == nil {
			t.Errorf("ParseImageID(%q) succeeded", bad)
		}
	}
}

// TestStaticGlibc builds a static glibc program with the cross compiler and
// compares Parse with readelf and objdump on it.
func TestStaticGlibc(t *testing.T) {
	needTool(t, crossReadelf)
	needTool(t, crossObjdump)
	bin := buildGlibc(t, "auxdump")
	im := parseFile(t, bin)
	checkAgainstReadelf(t, im, parseReadelf(t, run(t, crossReadelf, "-hlSsnW", bin)))
	refs := parseObjdump(t, run(t, crossObjdump, "-d", bin))
	checkAgainstObjdump(t, im, refs, true)
	// objdump -D disassembles the data sections too: SymbolFor must agree
	// on data addresses (objects, linker labels, the .got section symbol).
	checkAgainstObjdump(t, im, parseObjdump(t, run(t, crossObjdump, "-D", bin)), false)
	checkLookupInvariants(t, im)
	if im.TLS == nil {
		t.Errorf("static glibc image has no PT_TLS")
	}
	if len(im.Symbols) < 1000 || len(refs) < 10000 {
		t.Errorf("only %d symbols, %d objdump references", len(im.Symbols), len(refs))
	}
	// Every objdump header names a function start; Lookup there must find a
	// symbol starting at that address.
	for _, r := range refs {
		if r.offset != 0 || !strings.HasSuffix(r.line, ">:") {
			continue
		}
		if s, off, ok := im.Lookup(r.addr); ok && off == 0 && s.Addr != r.addr {
			t.Errorf("Lookup(%#x) = %s at %#x", r.addr, s.Name, s.Addr)
		}
	}
}

// TestFreshFreestanding builds the freestanding program now and compares it
// with readelf (the committed-binary test covers the same ground offline).
func TestFreshFreestanding(t *testing.T) {
	needTool(t, crossReadelf)
	bin := buildFree(t, t.TempDir())
	im := parseFile(t, bin)
	checkAgainstReadelf(t, im, parseReadelf(t, run(t, crossReadelf, "-hlSsnW", bin)))
}

// TestRejectsDynamic links a dynamic executable (if the cross libc has the
// shared objects) and checks the error.
// TestParsesDynamic: a dynamically linked executable parses with its
// interpreter named; a shared object (the C library) only through
// ParseObject, with its exported functions from .dynsym.
func TestParsesDynamic(t *testing.T) {
	needTool(t, crossGCC)
	dir := t.TempDir()
	src := filepath.Join(dir, "dyn.c")
	if err := os.WriteFile(src, []byte("int main(void){return 0;}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "dyn")
	if out, err := runErr(crossGCC, "-no-pie", "-o", bin, src); err != nil {
		t.Skipf("cannot link a dynamic executable: %v\n%s", err, out)
	}
	im, err := Parse(readFile(t, bin), bin)
	if err != nil {
		t.Fatal(err)
	}
	if im.Interp != "/lib/ld-linux.so.2" || im.Shared {
		t.Errorf("Interp = %q, Shared = %v; want /lib/ld-linux.so.2, false", im.Interp, im.Shared)
	}
	const libc = "/usr/alpha-linux-gnu/lib/libc.so.6.1"
	data, err := os.ReadFile(libc)
	if err != nil {
		t.Skip(err)
	}
	if _, err := Parse(data, libc); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Parse(libc) = %v, want ErrUnsupported", err)
	}
	lib, err := ParseObject(data, libc)
	if err != nil {
		t.Fatal(err)
	}
	if !lib.Shared || lib.ID.String()[:8] != "buildid:" {
		t.Errorf("libc: Shared %v, ID %v", lib.Shared, lib.ID)
	}
	if !slices.ContainsFunc(lib.Symbols, func(s Symbol) bool { return s.Name == "printf" && s.Addr != 0 }) {
		t.Errorf("libc: no printf in .dynsym (%d symbols)", len(lib.Symbols))
	}
	// Its static functions are named from .eh_frame; a program's symbols
	// are its own.
	procs := lib.ProcedureSymbols()
	if len(procs) <= len(lib.Symbols) || !slices.IsSortedFunc(procs, func(a, b Symbol) int { return cmp.Compare(a.Addr, b.Addr) }) ||
		!slices.ContainsFunc(procs, func(s Symbol) bool { return strings.HasPrefix(s.Name, "libc.so.6.1+0x") && s.Size > 0 }) {
		t.Errorf("libc: %d procedures, %d symbols", len(procs), len(lib.Symbols))
	}
	if len(im.ProcedureSymbols()) != len(im.Symbols) {
		t.Errorf("a program's procedures are not its symbols")
	}
}

func runErr(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}

func TestErrorFormat(t *testing.T) {
	data := readFile(t, "testdata/free")
	b := append([]byte(nil), data...)
	b[18], b[19] = 62, 0 // EM_X86_64
	_, err := Parse(b, "/bin/x")
	want := "elfimage: /bin/x: unsupported: machine EM_X86_64 (want EM_ALPHA 0x9026)"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
	var e *Error
	if !errors.As(err, &e) || e.Path != "/bin/x" || e.Kind != ErrUnsupported {
		t.Errorf("errors.As(*Error) = %+v", e)
	}
	if _, err := Parse(nil, ""); err == nil || !strings.HasPrefix(err.Error(), "elfimage: not an ELF file:") {
		t.Errorf("Parse(nil) = %v", err)
	}
	if s := fmt.Sprint(Perm(7), SymKind(9), IDKind(9)); s != "rwx SymKind(9) IDKind(9)" {
		t.Errorf("String methods: %q", s)
	}
}
