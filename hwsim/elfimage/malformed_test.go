package elfimage

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// elfFile is a tiny ELF64 editor for corrupting the committed binary.
type elfFile struct {
	b            []byte
	phoff, shoff uint64
	ph           []struct{ typ uint32 }
	sh           []struct {
		typ       uint32
		off, size uint64
		link      uint32
	}
}

func (f *elfFile) u16(o uint64, v uint16) { binary.LittleEndian.PutUint16(f.b[o:], v) }
func (f *elfFile) u32(o uint64, v uint32) { binary.LittleEndian.PutUint32(f.b[o:], v) }
func (f *elfFile) u64(o uint64, v uint64) { binary.LittleEndian.PutUint64(f.b[o:], v) }
func (f *elfFile) get64(o uint64) uint64  { return binary.LittleEndian.Uint64(f.b[o:]) }

// Program header i's field at byte offset fo (type 0, flags 4, offset 8,
// vaddr 16, filesz 32, memsz 40, align 48).
func (f *elfFile) ph64(i int, fo uint64) uint64 { return f.get64(f.phoff + uint64(i)*56 + fo) }
func (f *elfFile) setPh64(i int, fo, v uint64)  { f.u64(f.phoff+uint64(i)*56+fo, v) }
func (f *elfFile) setPhType(i int, v uint32)    { f.u32(f.phoff+uint64(i)*56, v) }

// Section header i's field (name 0, type 4, flags 8, addr 16, offset 24,
// size 32, link 40, info 44, addralign 48, entsize 56).
func (f *elfFile) sh64(i int, fo uint64) uint64 { return f.get64(f.shoff + uint64(i)*64 + fo) }
func (f *elfFile) setSh64(i int, fo, v uint64)  { f.u64(f.shoff+uint64(i)*64+fo, v) }
func (f *elfFile) setSh32(i int, fo uint64, v uint32) {
	f.u32(f.shoff+uint64(i)*64+fo, v)
}
func (f *elfFile) setShType(i int, v uint32) { f.setSh32(i, 4, v) }

func (f *elfFile) findPh(typ uint32) int {
	for i, p := range f.ph {
		if p.typ == typ {
			return i
		}
	}
	panic("no such program header")
}

func (f *elfFile) findSh(typ uint32) int {
	for i, s := range f.sh {
		if s.typ == typ {
			return i
		}
	}
	panic("no such section")
}

// mutate returns a copy of data changed by fn.
func mutate(data []byte, fn func(f *elfFile)) []byte {
	f := &elfFile{b: append([]byte(nil), data...)}
	f.phoff = binary.LittleEndian.Uint64(data[32:])
	f.shoff = binary.LittleEndian.Uint64(data[40:])
	phnum := int(binary.LittleEndian.Uint16(data[56:]))
	shnum := int(binary.LittleEndian.Uint16(data[60:]))
	for i := 0; i < phnum; i++ {
		f.ph = append(f.ph, struct{ typ uint32 }{binary.LittleEndian.Uint32(data[f.phoff+uint64(i)*56:])})
	}
	for i := 0; i < shnum; i++ {
		o := f.shoff + uint64(i)*64
		f.sh = append(f.sh, struct {
			typ       uint32
			off, size uint64
			link      uint32
		}{
			binary.LittleEndian.Uint32(data[o+4:]), binary.LittleEndian.Uint64(data[o+24:]),
			binary.LittleEndian.Uint64(data[o+32:]), binary.LittleEndian.Uint32(data[o+40:]),
		})
	}
	fn(f)
	return f.b
}

type corruption struct {
	name string
	fn   func(f *elfFile)
	want error  // sentinel
	msg  string // substring of the message
}

// corruptions returns the table of damaged inputs, built from the committed
// binary; FuzzParse seeds from it too.
func corruptions(data []byte) []corruption {
	truncate := func(n int) func(f *elfFile) { return func(f *elfFile) { f.b = f.b[:n] } }
	text := func(f *elfFile) uint64 { return f.ph64(0, 16) } // start of the text segment
	cs := []corruption{
		{"empty", truncate(0), ErrNotELF, "file is empty"},
		{"truncate 3", truncate(3), ErrNotELF, "no ELF magic"},
		{"truncate 10", truncate(10), ErrMalformed, "truncated ELF identification"},
		{"truncate 16", truncate(16), ErrMalformed, "truncated ELF header"},
		{"truncate 63", truncate(63), ErrMalformed, "truncated ELF header"},
		{"truncate in program headers", truncate(64 + 56 + 20), ErrMalformed, "program header table"},
		{"truncate in text", truncate(0x200), ErrMalformed, "extends beyond end of file"},
		{"truncate before section headers", truncate(len(data) - 64*3), ErrMalformed, "section header table"},
		{"truncate last byte", truncate(len(data) - 1), ErrMalformed, "section header table"},
		{"bad magic", func(f *elfFile) { f.b[1] = 'e' }, ErrNotELF, "no ELF magic"},
		{"x86-64", func(f *elfFile) { f.u16(18, 62) }, ErrUnsupported, "machine EM_X86_64 (want EM_ALPHA 0x9026)"},
		{"EM_ALPHA_STD", func(f *elfFile) { f.u16(18, 41) }, ErrUnsupported, "EM_ALPHA_STD"},
		{"32-bit", func(f *elfFile) { f.b[4] = 1 }, ErrUnsupported, "32-bit"},
		{"class 0", func(f *elfFile) { f.b[4] = 0 }, ErrMalformed, "ELF class"},
		{"class 7", func(f *elfFile) { f.b[4] = 7 }, ErrMalformed, "ELF class"},
		{"big-endian", func(f *elfFile) { f.b[5] = 2 }, ErrUnsupported, "big-endian"},
		{"data 0", func(f *elfFile) { f.b[5] = 0 }, ErrMalformed, "data encoding"},
		{"ident version", func(f *elfFile) { f.b[6] = 0 }, ErrMalformed, "identification version"},
		{"FreeBSD ABI", func(f *elfFile) { f.b[7] = 9 }, ErrUnsupported, "OS ABI"},
		{"ET_DYN", func(f *elfFile) { f.u16(16, 3) }, ErrUnsupported, "ET_DYN"},
		{"ET_REL", func(f *elfFile) { f.u16(16, 1) }, ErrUnsupported, "ET_REL"},
		{"e_version", func(f *elfFile) { f.u32(20, 0) }, ErrMalformed, "e_version"},
		{"e_ehsize", func(f *elfFile) { f.u16(52, 52) }, ErrMalformed, "e_ehsize"},
		{"e_phentsize", func(f *elfFile) { f.u16(54, 32) }, ErrMalformed, "e_phentsize"},
		{"no program headers", func(f *elfFile) { f.u16(56, 0) }, ErrMalformed, "no program headers"},
		{"huge phnum", func(f *elfFile) { f.u16(56, 0xfffe) }, ErrMalformed, "program header table"},
		{"PN_XNUM", func(f *elfFile) { f.u16(56, 0xffff) }, ErrUnsupported, "PN_XNUM"},
		{"phoff beyond EOF", func(f *elfFile) { f.u64(32, 1<<62) }, ErrMalformed, "program header table"},
		{"phoff overflow", func(f *elfFile) { f.u64(32, ^uint64(0)-8) }, ErrMalformed, "program header table"},
		{"PT_INTERP", func(f *elfFile) { f.setPhType(f.findPh(0x6474e551), 3) }, ErrMalformed, "PT_INTERP"},
		{"segment offset beyond EOF", func(f *elfFile) { f.setPh64(1, 8, uint64(len(f.b))+0x1ff8) }, ErrMalformed,
			"segment 1 (PT_LOAD) file range"},
		{"segment offset overflow", func(f *elfFile) { f.setPh64(1, 8, ^uint64(0)-7) }, ErrMalformed, "extends beyond end of file"},
		{"segment filesz beyond EOF", func(f *elfFile) { f.setPh64(0, 32, uint64(len(f.b))+1); f.setPh64(0, 40, 1<<20) },
			ErrMalformed, "extends beyond end of file"},
		{"filesz > memsz", func(f *elfFile) { f.setPh64(1, 32, f.ph64(1, 40)+8) }, ErrMalformed, "filesz 0x48 > memsz 0x40"},
		{"overlapping segments", func(f *elfFile) { f.setPh64(0, 40, 0x5000) }, ErrMalformed, "overlap in memory"},
		{"identical segments", func(f *elfFile) {
			for _, fo := range []uint64{8, 16, 32, 40} {
				f.setPh64(1, fo, f.ph64(0, fo))
			}
		}, ErrMalformed, "overlap in memory"},
		{"overlap across an empty segment", func(f *elfFile) { // found by FuzzParse
			// Sorted by vaddr: [0, 0x2000), an empty segment at 8, [0x10, 0x20).
			load := func(i int, off, vaddr, filesz, memsz uint64) {
				f.setPhType(i, ptLoad)
				f.setPh64(i, 8, off)
				f.setPh64(i, 16, vaddr)
				f.setPh64(i, 32, filesz)
				f.setPh64(i, 40, memsz)
			}
			load(f.findPh(0x6474e551), 0, 0, 0, 0x2000) // GNU_STACK
			load(f.findPh(ptNote), 8, 8, 0, 0)
			load(f.findPh(0x6474e552), 0x10, 0x10, 0, 0x10) // GNU_RELRO
		}, ErrMalformed, "overlap in memory"},
		{"absurd memsz", func(f *elfFile) { f.setPh64(1, 40, 1<<40) }, ErrMalformed, "absurd"},
		{"absurd total memsz", func(f *elfFile) {
			f.setPh64(0, 40, 600<<20)
			f.setPh64(1, 16, f.ph64(0, 16)+0x40000000+0x1ff8)
			f.setPh64(1, 40, 600<<20)
		}, ErrMalformed, "in total"},
		{"kernel address", func(f *elfFile) { f.setPh64(1, 16, 0xfffffc0000003ff8) }, ErrMalformed, "user address space"},
		{"vaddr wraps", func(f *elfFile) { f.setPh64(1, 16, ^uint64(0)-7) }, ErrMalformed, "user address space"},
		{"align not power of two", func(f *elfFile) { f.setPh64(0, 48, 0x3000) }, ErrMalformed, "power of two"},
		{"vaddr and offset incongruent", func(f *elfFile) { f.setPh64(1, 16, f.ph64(1, 16)+8) }, ErrMalformed, "congruent"},
		{"no PT_LOAD", func(f *elfFile) { f.setPhType(0, 0); f.setPhType(1, 0) }, ErrMalformed, "no PT_LOAD"},
		{"two PT_TLS", func(f *elfFile) { f.setPhType(f.findPh(0x6474e551), 7) }, ErrMalformed, "both PT_TLS"},
		{"TLS beyond EOF", func(f *elfFile) { f.setPh64(f.findPh(7), 8, uint64(len(f.b))) }, ErrMalformed, "PT_TLS"},
		{"TLS outside segments", func(f *elfFile) { f.setPh64(f.findPh(7), 16, 0x10000) }, ErrMalformed, "initialization image"},
		{"entry in data", func(f *elfFile) { f.u64(24, f.ph64(1, 16)) }, ErrMalformed, "not in the file-backed part of an executable"},
		{"entry zero", func(f *elfFile) { f.u64(24, 0) }, ErrMalformed, "entry point 0x0"},
		{"entry past text", func(f *elfFile) { f.u64(24, text(f)+f.ph64(0, 32)) }, ErrMalformed, "entry point"},
		{"entry unaligned", func(f *elfFile) { f.u64(24, f.get64(24)+2) }, ErrMalformed, "4-byte aligned"},
		{"e_shentsize", func(f *elfFile) { f.u16(58, 40) }, ErrMalformed, "e_shentsize"},
		{"huge shnum", func(f *elfFile) { f.u16(60, 0xfff0) }, ErrMalformed, "section header table"},
		{"shnum 0 with shoff", func(f *elfFile) { f.u16(60, 0) }, ErrUnsupported, "extended section numbering"},
		{"shstrndx XINDEX", func(f *elfFile) { f.u16(62, 0xffff) }, ErrUnsupported, "SHN_XINDEX"},
		{"shstrndx out of range", func(f *elfFile) { f.u16(62, 200) }, ErrMalformed, "e_shstrndx"},
		{"shstrndx not a string table", func(f *elfFile) { f.u16(62, 1) }, ErrMalformed, "want SHT_STRTAB"},
		{"section name offset", func(f *elfFile) { f.setSh32(2, 0, 0x7fffffff) }, ErrMalformed, "section 2: name offset 0x7fffffff is beyond the section name table"},
		{"section beyond EOF", func(f *elfFile) { f.setSh64(2, 24, uint64(len(f.b))) }, ErrMalformed, "section 2 (.text) [0x2650"},
		{"section size overflow", func(f *elfFile) { f.setSh64(2, 32, ^uint64(0)) }, ErrMalformed, "section 2"},
		{".text outside segments", func(f *elfFile) {
			i := f.findSh(1) // the first PROGBITS section is .text here
			f.setSh64(i, 16, 0x10000)
		}, ErrMalformed, ".text"},
		{"symtab beyond EOF", func(f *elfFile) { f.setSh64(f.findSh(shtSymtab), 24, uint64(len(f.b))-10) }, ErrMalformed, "beyond end of file"},
		{"symtab entsize", func(f *elfFile) { f.setSh64(f.findSh(shtSymtab), 56, 16) }, ErrMalformed, "entry size 16"},
		{"symtab size", func(f *elfFile) { f.setSh64(f.findSh(shtSymtab), 32, f.sh64(f.findSh(shtSymtab), 32)-1) }, ErrMalformed, "multiple of 24"},
		{"symtab link out of range", func(f *elfFile) { f.setSh32(f.findSh(shtSymtab), 40, 999) }, ErrMalformed, "string table link"},
		{"symtab link not strtab", func(f *elfFile) { f.setSh32(f.findSh(shtSymtab), 40, 1) }, ErrMalformed, "want SHT_STRTAB"},
		{"symbol name beyond strtab", func(f *elfFile) {
			s := f.sh[f.findSh(shtSymtab)]
			f.u32(s.off+5*24, 0xffffff)
		}, ErrMalformed, "symbol 5: name offset 0xffffff is beyond string table .strtab"},
		{"symbol name unterminated", func(f *elfFile) {
			st := f.sh[f.findSh(shtSymtab)]
			str := f.sh[st.link]
			f.b[str.off+str.size-1] = 'x'
			f.u32(st.off+5*24, uint32(str.size-1))
		}, ErrMalformed, "unterminated"},
		{"symbol section index", func(f *elfFile) {
			s := f.sh[f.findSh(shtSymtab)]
			f.u16(s.off+12*24+6, 0x4000)
		}, ErrMalformed, "section index"},
		{"symbol SHN_XINDEX", func(f *elfFile) {
			s := f.sh[f.findSh(shtSymtab)]
			f.u16(s.off+12*24+6, 0xffff)
		}, ErrUnsupported, "SHN_XINDEX"},
		{"note descsz", func(f *elfFile) {
			n := f.sh[f.findSh(shtNote)]
			f.u32(n.off+4, 0x1000)
		}, ErrMalformed, "note descriptor"},
		{"note namesz", func(f *elfFile) {
			n := f.sh[f.findSh(shtNote)]
			f.u32(n.off, 0xffffffff)
		}, ErrMalformed, "note name"},
		{"note truncated", func(f *elfFile) {
			i := f.findSh(shtNote)
			f.setSh64(i, 32, 10)
		}, ErrMalformed, "truncated note header"},
	}
	return cs
}

func TestMalformed(t *testing.T) {
	data := readFile(t, "testdata/free")
	for _, c := range corruptions(data) {
		t.Run(c.name, func(t *testing.T) {
			b := mutate(data, c.fn)
			im, err := Parse(b, "testdata/bad")
			if err == nil {
				t.Fatalf("Parse succeeded (%d segments), want %v", len(im.Segments), c.want)
			}
			if im != nil {
				t.Errorf("Parse returned an image with an error")
			}
			if !errors.Is(err, c.want) {
				t.Errorf("error %q does not wrap %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.msg) || !strings.HasPrefix(err.Error(), "elfimage: testdata/bad: ") {
				t.Errorf("error %q does not say %q", err, c.msg)
			}
		})
	}
}

// TestTolerated checks changes that leave a valid image.
func TestTolerated(t *testing.T) {
	data := readFile(t, "testdata/free")
	orig := parseFile(t, "testdata/free")

	// No section headers at all (as after sstrip): no symbols, .text bounds
	// from the executable segment, build ID from PT_NOTE.
	b := mutate(data, func(f *elfFile) { f.u64(40, 0); f.u16(60, 0); f.u16(62, 0) })
	im, err := Parse(b, "nosections")
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Symbols) != 0 || len(im.Sections) != 0 || !im.ID.Equal(orig.ID) ||
		im.TextStart != im.Segments[0].Vaddr || im.TextEnd != im.Segments[0].Vaddr+im.Segments[0].Filesz {
		t.Errorf("without sections: %d symbols, ID %v (want %v), text [%#x,%#x)", len(im.Symbols), im.ID, orig.ID, im.TextStart, im.TextEnd)
	}
	if _, _, ok := im.Lookup(im.Entry); ok {
		t.Errorf("Lookup found a symbol without a symbol table")
	}
	if _, _, ok := im.SymbolFor(im.Entry); ok {
		t.Errorf("SymbolFor found a symbol without a symbol table")
	}

	// No symbol table (strip): same ID, no symbols.
	b = mutate(data, func(f *elfFile) { f.setShType(f.findSh(shtSymtab), 1) })
	if im, err = Parse(b, "stripped"); err != nil || len(im.Symbols) != 0 || !im.ID.Equal(orig.ID) {
		t.Errorf("stripped: %v, %d symbols", err, len(im.Symbols))
	}

	// Trailing bytes after the section headers change nothing but Size.
	b = append(append([]byte(nil), data...), make([]byte, 100)...)
	if im, err = Parse(b, "padded"); err != nil || im.Size != int64(len(data)+100) || len(im.Symbols) != len(orig.Symbols) {
		t.Errorf("padded: %v", err)
	}

	// Segment Data is clipped: appending to it cannot overwrite the file.
	s := orig.Segments[0]
	if cap(s.Data) != len(s.Data) {
		t.Errorf("segment Data capacity %d > length %d", cap(s.Data), len(s.Data))
	}
}
