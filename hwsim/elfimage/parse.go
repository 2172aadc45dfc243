package elfimage

// Why parse by hand instead of with debug/elf: debug/elf is a general reader
// (32/64-bit, both byte orders, relocations, DWARF, compressed sections) that
// trusts counts from the file when it sizes allocations and has had panics on
// malformed input; we need a small, fixed subset of one format (ELF64
// little-endian ET_EXEC for EM_ALPHA: the file header, program headers,
// section headers, one symbol table, notes) and want every rejection to name
// the exact field at fault. Reading that subset with encoding/binary takes a
// few hundred lines in which every offset and size is checked against the
// file before use, so the fuzz target has nothing to find. debug/elf is still
// used for the names of its constants (elf.Machine(62).String() is
// "EM_X86_64"). A recover in Parse remains as the last line of defence.

import (
	"bytes"
	"cmp"
	"debug/elf"
	"encoding/binary"
	"slices"
)

// ELF constants used here (values from the gABI and Linux's elf.h).
const (
	ehdrSize  = 64 // sizeof(Elf64_Ehdr)
	phdrSize  = 56 // sizeof(Elf64_Phdr)
	shdrSize  = 64 // sizeof(Elf64_Shdr)
	symSize   = 24 // sizeof(Elf64_Sym)
	eiNident  = 16
	emAlpha   = 0x9026 // EM_ALPHA (Linux); 41 is the old EM_ALPHA_STD
	etExec    = 2
	etDyn     = 3
	pnXnum    = 0xffff
	shnUndef  = 0
	shnLoRes  = 0xff00
	shnAbs    = 0xfff1
	shnCommon = 0xfff2
	shnXindex = 0xffff

	ptLoad    = 1
	ptDynamic = 2
	ptInterp  = 3

	// maxInterpLen bounds PT_INTERP's path (Linux: PATH_MAX).
	maxInterpLen = 4096
	ptNote       = 4
	ptTLS        = 7

	shtSymtab = 2
	shtDynsym = 11
	shtStrtab = 3
	shtNote   = 7
	shtNobits = 8

	shfAlloc     = 0x2
	shfExecInstr = 0x4

	sttNoType  = 0
	sttObject  = 1
	sttFunc    = 2
	sttSection = 3
	sttTLS     = 6
	sttIFunc   = 10

	stbLocal = 0
	stbWeak  = 2

	ntGNUBuildID = 3
)

// Limits. Linux/Alpha user space ends at TASK_SIZE = 0x40000000000 (4 TiB,
// arch/alpha/include/asm/processor.h); a segment beyond it cannot be mapped.
// MaxImageMemory bounds the total PT_LOAD memory so that a corrupt memsz
// cannot make the simulator allocate absurd amounts.
const (
	UserAddrLimit  = 0x40000000000
	MaxImageMemory = 1 << 30 // bytes, summed over PT_LOAD segments
	// KernelAddrLimit ends the 21164's 43-bit virtual address space; a
	// kernel image (ParseKernel) lies in [UserAddrLimit, KernelAddrLimit).
	KernelAddrLimit = 0x80000000000
)

// Parse decodes and validates a static ELF64 Alpha executable. path is used
// only for Image.Path and error messages. Segment data aliases data.
func Parse(data []byte, path string) (im *Image, err error) {
	defer func() {
		// Last line of defence: every access below is bounds-checked, and
		// the fuzz target checks that this never fires.
		if r := recover(); r != nil {
			im = nil
			err = newErr(path, ErrMalformed, "internal error while parsing: %v", r)
		}
	}()
	p := &parser{data: data, path: path, lo: 0, hi: UserAddrLimit, space: "Linux/Alpha user address space"}
	return p.parse()
}

// ParseObject is Parse for what a dynamic loader maps: an executable
// (ET_EXEC) or a shared object (ET_DYN: a library or the interpreter,
// ld-linux.so.2), whose addresses are relative to the load bias the
// loader chooses. Image.Shared says which it was.
func ParseObject(data []byte, path string) (im *Image, err error) {
	defer func() {
		if r := recover(); r != nil {
			im = nil
			err = newErr(path, ErrMalformed, "internal error while parsing: %v", r)
		}
	}()
	p := &parser{data: data, path: path, lo: 0, hi: UserAddrLimit, space: "Linux/Alpha user address space", shared: true}
	return p.parse()
}

// ParseKernel is Parse for a kernel image, whose segments lie above user
// space, in [UserAddrLimit, KernelAddrLimit).
func ParseKernel(data []byte, path string) (im *Image, err error) {
	defer func() {
		if r := recover(); r != nil {
			im = nil
			err = newErr(path, ErrMalformed, "internal error while parsing: %v", r)
		}
	}()
	p := &parser{data: data, path: path, lo: UserAddrLimit, hi: KernelAddrLimit, space: "kernel address space"}
	return p.parse()
}

type parser struct {
	data []byte
	path string
	im   *Image
	// lo and hi bound the addresses segments may occupy; space names the
	// range in errors.
	lo, hi uint64
	space  string

	sections []rawSection // index i = section header i (0 is the null section)

	// anyType accepts every e_type and no program headers (CheckFile:
	// objects and shared objects are disassembled, not run).
	anyType bool
	// shared accepts ET_DYN too (ParseObject).
	shared bool
}

type rawSection struct {
	Section
	link      uint32
	addralign uint64
	entsize   uint64
}

type rawPhdr struct {
	typ                       uint32
	flags                     uint32
	off, vaddr, filesz, memsz uint64
	align                     uint64
}

func (p *parser) errf(kind error, format string, args ...any) error {
	return newErr(p.path, kind, format, args...)
}

func (p *parser) u16(off uint64) uint16 { return binary.LittleEndian.Uint16(p.data[off:]) }
func (p *parser) u32(off uint64) uint32 { return binary.LittleEndian.Uint32(p.data[off:]) }
func (p *parser) u64(off uint64) uint64 { return binary.LittleEndian.Uint64(p.data[off:]) }

// inFile reports whether [off, off+size) lies inside the file, without overflow.
func (p *parser) inFile(off, size uint64) bool {
	n := uint64(len(p.data))
	return off <= n && size <= n-off
}

func (p *parser) parse() (*Image, error) {
	if err := p.ident(); err != nil {
		return nil, err
	}
	p.im = &Image{Path: p.path, Size: int64(len(p.data))}
	phoff, shoff, phnum, shnum, shstrndx, err := p.header()
	if err != nil {
		return nil, err
	}
	phdrs, err := p.programHeaders(phoff, phnum)
	if err != nil {
		return nil, err
	}
	if err := p.segments(phdrs, phoff); err != nil {
		return nil, err
	}
	if err := p.sectionHeaders(shoff, shnum, shstrndx); err != nil {
		return nil, err
	}
	if err := p.text(); err != nil {
		return nil, err
	}
	if err := p.symbols(); err != nil {
		return nil, err
	}
	if err := p.buildID(phdrs); err != nil {
		return nil, err
	}
	return p.im, nil
}

// ident checks e_ident: magic, class, byte order, version, OS ABI.
func (p *parser) ident() error {
	d := p.data
	if len(d) == 0 {
		return p.errf(ErrNotELF, "no ELF magic: file is empty")
	}
	if len(d) < 4 || d[0] != 0x7f || d[1] != 'E' || d[2] != 'L' || d[3] != 'F' {
		n := min(len(d), 4)
		return p.errf(ErrNotELF, "no ELF magic (first bytes % x, want 7f 45 4c 46)", d[:n])
	}
	if len(d) < eiNident {
		return p.errf(ErrMalformed, "truncated ELF identification: file is %d bytes, need %d", len(d), eiNident)
	}
	switch c := elf.Class(d[elf.EI_CLASS]); c {
	case elf.ELFCLASS64:
	case elf.ELFCLASS32:
		return p.errf(ErrUnsupported, "32-bit ELF (ELFCLASS32); want ELFCLASS64")
	default:
		return p.errf(ErrMalformed, "bad ELF class %d in e_ident", uint8(c))
	}
	switch o := elf.Data(d[elf.EI_DATA]); o {
	case elf.ELFDATA2LSB:
	case elf.ELFDATA2MSB:
		return p.errf(ErrUnsupported, "big-endian ELF (ELFDATA2MSB); Alpha is little-endian (ELFDATA2LSB)")
	default:
		return p.errf(ErrMalformed, "bad ELF data encoding %d in e_ident", uint8(o))
	}
	if v := d[elf.EI_VERSION]; v != byte(elf.EV_CURRENT) {
		return p.errf(ErrMalformed, "ELF identification version %d, want 1 (EV_CURRENT)", v)
	}
	switch a := elf.OSABI(d[elf.EI_OSABI]); a {
	case elf.ELFOSABI_NONE, elf.ELFOSABI_LINUX:
	default:
		return p.errf(ErrUnsupported, "OS ABI %v; want ELFOSABI_NONE or ELFOSABI_LINUX", a)
	}
	if len(d) < ehdrSize {
		return p.errf(ErrMalformed, "truncated ELF header: file is %d bytes, need %d", len(d), ehdrSize)
	}
	return nil
}

// header reads and checks the rest of the ELF header.
func (p *parser) header() (phoff, shoff uint64, phnum, shnum, shstrndx int, err error) {
	etype := p.u16(16)
	machine := p.u16(18)
	version := p.u32(20)
	entry := p.u64(24)
	phoff = p.u64(32)
	shoff = p.u64(40)
	ehsize := p.u16(52)
	phentsize := p.u16(54)
	phnum = int(p.u16(56))
	shentsize := p.u16(58)
	shnum = int(p.u16(60))
	shstrndx = int(p.u16(62))

	fail := func(kind error, format string, args ...any) (uint64, uint64, int, int, int, error) {
		return 0, 0, 0, 0, 0, p.errf(kind, format, args...)
	}
	if machine != emAlpha {
		return fail(ErrUnsupported, "machine %v (want EM_ALPHA 0x9026)", elf.Machine(machine))
	}
	p.im.Shared = etype == etDyn
	if etype != etExec && !p.anyType && !(p.shared && etype == etDyn) {
		t := elf.Type(etype)
		if t == elf.ET_DYN {
			return fail(ErrUnsupported, "file type ET_DYN (a shared object or PIE); want ET_EXEC: link with -static -no-pie")
		}
		return fail(ErrUnsupported, "file type %v; want ET_EXEC", t)
	}
	if version != uint32(elf.EV_CURRENT) {
		return fail(ErrMalformed, "e_version %d, want 1 (EV_CURRENT)", version)
	}
	if ehsize != ehdrSize {
		return fail(ErrMalformed, "e_ehsize %d, want %d", ehsize, ehdrSize)
	}
	if phnum == 0 && !p.anyType {
		return fail(ErrMalformed, "no program headers (e_phnum 0)")
	}
	if phnum == pnXnum {
		return fail(ErrUnsupported, "extended program header numbering (e_phnum PN_XNUM)")
	}
	if phentsize != phdrSize && phnum > 0 {
		return fail(ErrMalformed, "e_phentsize %d, want %d", phentsize, phdrSize)
	}
	if !p.inFile(phoff, uint64(phnum)*phdrSize) {
		return fail(ErrMalformed, "program header table (e_phoff %#x, %d entries of %d bytes) extends beyond end of file (%d bytes)",
			phoff, phnum, phdrSize, len(p.data))
	}
	if shoff != 0 || shnum != 0 {
		if shnum == 0 {
			return fail(ErrUnsupported, "extended section numbering (e_shnum 0 with e_shoff %#x)", shoff)
		}
		if shstrndx == shnXindex {
			return fail(ErrUnsupported, "extended section numbering (e_shstrndx SHN_XINDEX)")
		}
		if shentsize != shdrSize {
			return fail(ErrMalformed, "e_shentsize %d, want %d", shentsize, shdrSize)
		}
		if !p.inFile(shoff, uint64(shnum)*shdrSize) {
			return fail(ErrMalformed, "section header table (e_shoff %#x, %d entries of %d bytes) extends beyond end of file (%d bytes)",
				shoff, shnum, shdrSize, len(p.data))
		}
		if shstrndx >= shnum {
			return fail(ErrMalformed, "e_shstrndx %d out of range (%d sections)", shstrndx, shnum)
		}
	}
	p.im.Entry = entry
	p.im.PhentSize = phdrSize
	p.im.PhNum = phnum
	return phoff, shoff, phnum, shnum, shstrndx, nil
}

func (p *parser) programHeaders(phoff uint64, phnum int) ([]rawPhdr, error) {
	phdrs := make([]rawPhdr, phnum)
	for i := range phdrs {
		o := phoff + uint64(i)*phdrSize
		phdrs[i] = rawPhdr{
			typ:    p.u32(o),
			flags:  p.u32(o + 4),
			off:    p.u64(o + 8),
			vaddr:  p.u64(o + 16),
			filesz: p.u64(o + 32),
			memsz:  p.u64(o + 40),
			align:  p.u64(o + 48),
		}
	}
	// A dynamically linked executable names its interpreter (sec. 4.3.2's
	// loader); exec maps it beside the program.
	for i, ph := range phdrs {
		if ph.typ != ptInterp || p.im.Interp != "" {
			continue
		}
		if !p.inFile(ph.off, ph.filesz) || ph.filesz == 0 || ph.filesz > maxInterpLen {
			return nil, p.errf(ErrMalformed, "program header %d (PT_INTERP): [%#x, %#x+%#x) is not a path inside the file",
				i, ph.off, ph.off, ph.filesz)
		}
		b := p.data[ph.off : ph.off+ph.filesz]
		n := bytes.IndexByte(b, 0)
		if n <= 0 {
			return nil, p.errf(ErrMalformed, "program header %d (PT_INTERP): interpreter path is empty or not NUL-terminated", i)
		}
		p.im.Interp = string(b[:n])
	}
	return phdrs, nil
}

// checkRange validates one PT_LOAD or PT_TLS header.
func (p *parser) checkRange(i int, ph rawPhdr) error {
	name := elf.ProgType(ph.typ)
	if !p.inFile(ph.off, ph.filesz) {
		return p.errf(ErrMalformed, "segment %d (%v) file range [%#x, %#x+%#x) extends beyond end of file (%d bytes)",
			i, name, ph.off, ph.off, ph.filesz, len(p.data))
	}
	if ph.filesz > ph.memsz {
		return p.errf(ErrMalformed, "segment %d (%v): filesz %#x > memsz %#x", i, name, ph.filesz, ph.memsz)
	}
	if ph.memsz > MaxImageMemory {
		return p.errf(ErrMalformed, "segment %d (%v): memsz %#x is absurd (limit %#x)", i, name, ph.memsz, MaxImageMemory)
	}
	if (ph.vaddr < p.lo && ph.memsz > 0) || ph.vaddr > p.hi || ph.memsz > p.hi-ph.vaddr {
		return p.errf(ErrMalformed, "segment %d (%v): [%#x, %#x+%#x) is outside the %s [%#x, %#x)",
			i, name, ph.vaddr, ph.vaddr, ph.memsz, p.space, p.lo, p.hi)
	}
	if ph.align > 1 {
		if ph.align&(ph.align-1) != 0 {
			return p.errf(ErrMalformed, "segment %d (%v): alignment %#x is not a power of two", i, name, ph.align)
		}
		if ph.typ == ptLoad && ph.vaddr%ph.align != ph.off%ph.align {
			return p.errf(ErrMalformed, "segment %d (%v): vaddr %#x and offset %#x are not congruent modulo alignment %#x",
				i, name, ph.vaddr, ph.off, ph.align)
		}
	}
	return nil
}

func (p *parser) segment(ph rawPhdr) Segment {
	end := ph.off + ph.filesz
	return Segment{
		Vaddr:  ph.vaddr,
		Memsz:  ph.memsz,
		Filesz: ph.filesz,
		Offset: ph.off,
		Flags:  Perm(ph.flags) & (PermR | PermW | PermX),
		Align:  ph.align,
		Data:   p.data[ph.off:end:end],
	}
}

func (p *parser) segments(phdrs []rawPhdr, phoff uint64) error {
	im := p.im
	var total uint64
	var loadIdx []int // program header index of each PT_LOAD, for messages
	tlsIdx := -1
	for i, ph := range phdrs {
		switch ph.typ {
		case ptLoad:
			if err := p.checkRange(i, ph); err != nil {
				return err
			}
			total += ph.memsz // each ≤ 1 GiB and at most 65535 of them: no overflow
			if total > MaxImageMemory {
				return p.errf(ErrMalformed, "PT_LOAD segments need %#x bytes of memory in total, more than the limit %#x", total, MaxImageMemory)
			}
			im.Segments = append(im.Segments, p.segment(ph))
			loadIdx = append(loadIdx, i)
		case ptTLS:
			if tlsIdx >= 0 {
				return p.errf(ErrMalformed, "program headers %d and %d are both PT_TLS", tlsIdx, i)
			}
			tlsIdx = i
			if err := p.checkRange(i, ph); err != nil {
				return err
			}
			s := p.segment(ph)
			im.TLS = &s
		}
	}
	if len(im.Segments) == 0 {
		return p.errf(ErrMalformed, "no PT_LOAD segments")
	}

	// Overlap in memory (sorted copy; ELF asks for ascending vaddr but the
	// loader does not need it). Empty segments occupy nothing and are left
	// out; among the others, sorted by start, any overlap shows up between
	// neighbours.
	var order []int
	for i := range im.Segments {
		if im.Segments[i].Memsz > 0 {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(im.Segments[a].Vaddr, im.Segments[b].Vaddr) })
	for k := 1; k < len(order); k++ {
		a, b := &im.Segments[order[k-1]], &im.Segments[order[k]]
		if a.End() > b.Vaddr {
			return p.errf(ErrMalformed, "segments %d [%#x, %#x) and %d [%#x, %#x) overlap in memory",
				loadIdx[order[k-1]], a.Vaddr, a.End(), loadIdx[order[k]], b.Vaddr, b.End())
		}
	}

	if t := im.TLS; t != nil && t.Filesz > 0 {
		// glibc copies the initialization image from memory at p_vaddr.
		s, ok := im.SegmentFor(t.Vaddr)
		if !ok || t.Vaddr-s.Vaddr > s.Filesz || t.Filesz > s.Filesz-(t.Vaddr-s.Vaddr) {
			return p.errf(ErrMalformed, "PT_TLS initialization image [%#x, %#x+%#x) is not inside the file-backed part of a PT_LOAD segment",
				t.Vaddr, t.Vaddr, t.Filesz)
		}
	}

	// AT_PHDR as Linux computes it (fs/binfmt_elf.c since 5.18): the address
	// at which the PT_LOAD whose file range covers e_phoff maps it.
	for _, s := range im.Segments {
		if s.Offset <= phoff && phoff-s.Offset < s.Filesz {
			im.PhdrAddr = s.Vaddr + (phoff - s.Offset)
			break
		}
	}

	if im.Entry%4 != 0 {
		return p.errf(ErrMalformed, "entry point %#x is not 4-byte aligned", im.Entry)
	}
	if s, ok := im.SegmentFor(im.Entry); !ok || s.Flags&PermX == 0 || im.Entry-s.Vaddr >= s.Filesz {
		return p.errf(ErrMalformed, "entry point %#x is not in the file-backed part of an executable PT_LOAD segment", im.Entry)
	}
	return nil
}
