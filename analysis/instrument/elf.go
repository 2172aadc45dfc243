package instrument

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"dcpi/hwsim/elfimage"
)

// ELF constants (System V gABI).
const (
	ptLoad      = 1
	ptDynamic   = 2
	ptInterp    = 3
	ptNote      = 4
	emAlpha     = 0x9026
	etExec      = 2
	phdrSize    = 56
	shdrSize    = 64
	shtProgbits = 1
	shtStrtab   = 3
	shtNobits   = 8
	shfWrite    = 1
	shfAlloc    = 2
	shfExec     = 4
	segAlign    = 0x10000
	// brReach is how far br reaches: 2^20 instructions either way.
	brReach = 4 << 20
)

// elfFile is the raw header fields the rewriter edits.
type elfFile struct {
	phoff, shoff      uint64
	phnum, shnum      int
	shstrndx          int
	noteIdx           int // the PT_NOTE program header that becomes the new PT_LOAD
	maxEnd            uint64
	shdrs             [][]byte
	shstrOff, shstrSz uint64
}

func readELF(d []byte) (*elfFile, error) {
	le := binary.LittleEndian
	if len(d) < 64 || string(d[:4]) != "\x7fELF" {
		return nil, fmt.Errorf("not an ELF file")
	}
	if d[4] != 2 || d[5] != 1 {
		return nil, fmt.Errorf("not a 64-bit little-endian ELF")
	}
	if m := le.Uint16(d[18:]); m != emAlpha {
		return nil, fmt.Errorf("machine %#x, not Alpha", m)
	}
	if t := le.Uint16(d[16:]); t != etExec {
		return nil, fmt.Errorf("ELF type %d, not a static executable (ET_EXEC)", t)
	}
	f := &elfFile{phoff: le.Uint64(d[32:]), shoff: le.Uint64(d[40:]), phnum: int(le.Uint16(d[56:])),
		shnum: int(le.Uint16(d[60:])), shstrndx: int(le.Uint16(d[62:])), noteIdx: -1}
	if le.Uint16(d[54:]) != phdrSize || f.phoff > uint64(len(d)) || uint64(len(d))-f.phoff < uint64(f.phnum*phdrSize) {
		return nil, fmt.Errorf("program headers out of the file")
	}
	for i := range f.phnum {
		ph := d[f.phoff+uint64(i*phdrSize):]
		switch le.Uint32(ph) {
		case ptInterp, ptDynamic:
			return nil, fmt.Errorf("dynamically linked (PT_INTERP or PT_DYNAMIC): only static executables can be rewritten")
		case ptNote:
			if f.noteIdx < 0 {
				f.noteIdx = i
			}
		case ptLoad:
			f.maxEnd = max(f.maxEnd, le.Uint64(ph[16:])+le.Uint64(ph[40:]))
		}
	}
	if f.noteIdx < 0 {
		return nil, fmt.Errorf("no PT_NOTE program header to turn into the new segment's PT_LOAD (the header table has no room)")
	}
	if f.shnum == 0 || le.Uint16(d[58:]) != shdrSize || f.shoff > uint64(len(d)) || uint64(len(d))-f.shoff < uint64(f.shnum*shdrSize) || f.shstrndx >= f.shnum {
		return nil, fmt.Errorf("section headers missing or out of the file")
	}
	for i := range f.shnum {
		f.shdrs = append(f.shdrs, append([]byte(nil), d[f.shoff+uint64(i*shdrSize):][:shdrSize]...))
	}
	s := f.shdrs[f.shstrndx]
	if f.shstrndx == 0 || le.Uint32(s[4:]) != shtStrtab {
		// SHN_UNDEF, or not a string table: the rewritten image's new
		// section names would go nowhere, and its manifest section could
		// not be found by name.
		return nil, fmt.Errorf("no section name table (e_shstrndx %d)", f.shstrndx)
	}
	f.shstrOff, f.shstrSz = le.Uint64(s[24:]), le.Uint64(s[32:])
	if f.shstrOff > uint64(len(d)) || uint64(len(d))-f.shstrOff < f.shstrSz {
		return nil, fmt.Errorf("section name table out of the file")
	}
	return f, nil
}

func alignUp(v, a uint64) uint64 { return (v + a - 1) &^ (a - 1) }

// write lays the instrumentation out and returns the instrumented file.
func (pl *planned) write(f *elfFile, im *elfimage.Image, data []byte, opt Options) (*Result, error) {
	le := binary.LittleEndian
	m := pl.manifest
	base := alignUp(f.maxEnd, segAlign)
	sum := sha256.Sum256(data)
	m.Original = fmt.Sprintf("%x", sum)
	m.Segment = base
	m.Trampolines = len(pl.points)
	for pc := range pl.points {
		if d := int64(base) - int64(pc); d >= brReach || d <= -brReach {
			return nil, refuse("instruction at %#x is %#x bytes from the new segment at %#x, beyond br's reach of 4 MB", pc, d, base)
		}
	}
	// Pass 1 sizes the code (every address load is three words whatever
	// the address); pass 2 emits it with the data's real addresses.
	var spills int
	code, _, err := gen(base, pl, layout{pathAddr: base, headerAddr: base, countersAddr: base, stackBase: base, stackLast: base,
		cct: cctLayout{globals: base, root: base, chunkEnd: base, stackBase: base, stackLast: base}}, &spills)
	if err != nil {
		return nil, refuse("%v", err)
	}
	var lay layout
	lay.pathAddr = alignUp(base+uint64(len(code)), 8)
	lay.headerAddr = alignUp(lay.pathAddr+uint64(len(opt.DumpPath))+1, 64)
	paths := m.Mode == ModePaths
	if paths {
		// The path stack's top pointer sits just before the header.
		lay.headerAddr = alignUp(lay.pathAddr+uint64(len(opt.DumpPath))+1+8, 64)
	}
	lay.countersAddr = lay.headerAddr + headerSize
	lay.recordLen = headerSize + 8*uint64(m.Counters)
	lay.stackBase = lay.countersAddr + 8*uint64(m.Counters)
	slot := uint64(slotSize)
	if len(m.Metrics) > 0 {
		slot = metricsSlotSize
	}
	lay.stackLast = lay.stackBase + (pathStackSlots-1)*slot
	cct := m.Mode == ModeCCT
	if cct {
		cctPlace(&lay, m, opt)
	}
	if lay.recordLen > maxRecordLen {
		return nil, refuse("%d counters: a record would exceed 2 GB", m.Counters)
	}
	m.Spills = spills
	section, hash, err := m.encode()
	if err != nil {
		return nil, err
	}
	code2, stubs, err := gen(base, pl, lay, &spills)
	if err != nil {
		return nil, refuse("%v", err)
	}
	if len(code2) != len(code) {
		return nil, fmt.Errorf("instrument: internal error: code size changed between passes")
	}
	filesz := lay.countersAddr - base
	memsz := filesz + 8*uint64(m.Counters)
	mode := uint32(modePixie)
	if paths {
		mode = modePaths
		memsz += pathStackSlots * slot
	}
	if cct {
		mode = modeCCT
		filesz, memsz = cctSegmentSizes(lay, base, m)
	}
	seg := make([]byte, filesz)
	copy(seg, code2)
	copy(seg[lay.pathAddr-base:], opt.DumpPath)
	copy(seg[lay.headerAddr-base:], header(mode, hash, m.Counters))
	if paths {
		le.PutUint64(seg[lay.countersAddr-uint64(-topOff)-base:], lay.stackBase)
	}
	if cct {
		cctInit(seg, base, lay, m)
	}

	out := append([]byte(nil), data...)
	for pc, st := range stubs {
		off, ok := fileOffset(im, pc)
		if !ok {
			return nil, refuse("instruction at %#x is not in the file", pc)
		}
		d, err := brDisp(pc, st)
		if err != nil {
			return nil, refuse("%v", err)
		}
		le.PutUint32(out[off:], jumpToOrig|d)
	}
	patchBuildID(out, f, hash)

	segOff := alignUp(uint64(len(out)), segAlign)
	out = append(out, make([]byte, segOff-uint64(len(out)))...)
	out = append(out, seg...)
	ph := out[f.phoff+uint64(f.noteIdx*phdrSize):]
	le.PutUint32(ph[0:], ptLoad)
	le.PutUint32(ph[4:], 7) // R W X: stubs and counters share the one free header
	le.PutUint64(ph[8:], segOff)
	le.PutUint64(ph[16:], base)
	le.PutUint64(ph[24:], base)
	le.PutUint64(ph[32:], filesz)
	le.PutUint64(ph[40:], memsz)
	le.PutUint64(ph[48:], segAlign)

	manOff := uint64(len(out))
	out = append(out, section...)
	// A new section name table: the old one and the new names.
	strOff := uint64(len(out))
	out = append(out, data[f.shstrOff:f.shstrOff+f.shstrSz]...)
	name := func(s string) uint32 {
		n := uint32(uint64(len(out)) - strOff)
		out = append(out, s...)
		out = append(out, 0)
		return n
	}
	shdr := func(nm uint32, typ uint32, flags, addr, off, size, align uint64) []byte {
		h := make([]byte, shdrSize)
		le.PutUint32(h[0:], nm)
		le.PutUint32(h[4:], typ)
		le.PutUint64(h[8:], flags)
		le.PutUint64(h[16:], addr)
		le.PutUint64(h[24:], off)
		le.PutUint64(h[32:], size)
		le.PutUint64(h[48:], align)
		return h
	}
	news := [][]byte{
		shdr(name(".dcpi.pp.text"), shtProgbits, shfAlloc|shfExec|shfWrite, base, segOff, uint64(len(code)), 16),
		shdr(name(".dcpi.pp.data"), shtProgbits, shfAlloc|shfWrite, lay.pathAddr, segOff+lay.pathAddr-base, filesz-(lay.pathAddr-base), 8),
		shdr(name(".dcpi.pp.bss"), shtNobits, shfAlloc|shfWrite, base+filesz, segOff+filesz, memsz-filesz, 8),
		shdr(name(ManifestSection), shtProgbits, 0, 0, manOff, uint64(len(section)), 1),
	}
	strSize := uint64(len(out)) - strOff
	shstr := f.shdrs[f.shstrndx]
	le.PutUint64(shstr[24:], strOff)
	le.PutUint64(shstr[32:], strSize)
	shOff := alignUp(uint64(len(out)), 8)
	out = append(out, make([]byte, shOff-uint64(len(out)))...)
	for _, h := range append(f.shdrs, news...) {
		out = append(out, h...)
	}
	le.PutUint64(out[40:], shOff)
	le.PutUint16(out[60:], uint16(f.shnum+len(news)))
	if f.shnum+len(news) >= 0xff00 {
		return nil, refuse("too many sections")
	}
	return &Result{ELF: out, Manifest: m}, nil
}

// fileOffset returns the file offset of the word at addr.
func fileOffset(im *elfimage.Image, addr uint64) (uint64, bool) {
	for _, s := range im.Segments {
		if addr >= s.Vaddr && addr+4 <= s.Vaddr+s.Filesz {
			return s.Offset + addr - s.Vaddr, true
		}
	}
	return 0, false
}

// patchBuildID gives the instrumented file its own GNU build ID, derived
// from the original's and the manifest's hash, so that profiles of the two
// are never merged as one image.
func patchBuildID(out []byte, f *elfFile, hash [16]byte) {
	le := binary.LittleEndian
	str := out[f.shstrOff : f.shstrOff+f.shstrSz]
	for _, h := range f.shdrs {
		nm := le.Uint32(h[0:])
		if uint64(nm) >= uint64(len(str)) || cstr(str[nm:]) != ".note.gnu.build-id" {
			continue
		}
		off, size := le.Uint64(h[24:]), le.Uint64(h[32:])
		if off > uint64(len(out)) || uint64(len(out))-off < size || size < 16 {
			return
		}
		note := out[off : off+size]
		namesz, descsz := uint64(le.Uint32(note)), uint64(le.Uint32(note[4:]))
		start := 12 + alignUp(namesz, 4)
		if start+descsz > size {
			return
		}
		desc := note[start : start+descsz]
		sum := sha256.Sum256(append(append([]byte(nil), desc...), hash[:]...))
		for i := range desc {
			desc[i] = sum[i%len(sum)]
		}
	}
}

func cstr(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
