package elfimage

import (
	"debug/elf"
	"encoding/binary"
	"slices"
	"sort"
)

// symIndex holds what Lookup and SymbolFor search. Parse builds it once.
type symIndex struct {
	syms []Symbol // Image.Symbols as Parse left them

	// Parallel to syms, for Lookup.
	end    []uint64 // first address the symbol does not cover
	class  []uint8  // classSized, classAnchor or classLabel
	maxEnd []uint64 // maxEnd[i] = max(end[0..i]), to stop backward scans early

	// Every symbol objdump would print, for SymbolFor, and what each of
	// the symbol table's entries is as a Symbol (Name "" for none:
	// sections, files), for SymbolNamed.
	objdump *ObjdumpSymbols
	named   []Symbol
	// Allocated sections, to find "the section of an address".
	secs []secRange
}

// Lookup classes, best first. A sized symbol covers exactly
// [Addr, Addr+Size). A zero-size function or global label (glibc's assembler
// routines such as memset have no .size; _start is a bare label) covers up
// to the next sized symbol or other anchor, skipping the local labels inside
// it (.Loop, .Lend). A zero-size local label covers up to the next symbol of
// any kind and is used only when nothing better covers the address.
const (
	classSized uint8 = iota + 1
	classAnchor
	classLabel
)

type secRange struct {
	idx        int
	start, end uint64
}

const shfTLS = 0x400

// symbols reads the first SHT_SYMTAB, fills Image.Symbols and builds the
// index. A stripped file falls back to its SHT_DYNSYM (a shared library's
// exported functions, which is what objdump shows for it too); a file with
// neither gets an empty index.
func (p *parser) symbols() error {
	want := uint32(shtSymtab)
	if !slices.ContainsFunc(p.sections, func(s rawSection) bool { return s.Type == shtSymtab }) {
		want = shtDynsym
	}
	im := p.im
	var entries []SymtabEntry // for objdump's table
	var named []Symbol        // parallel to entries
	code := map[int]bool{}    // entries that are code symbols, for Lookup
	for si := 1; si < len(p.sections); si++ {
		st := &p.sections[si]
		if st.Type != want {
			continue
		}
		if st.entsize != symSize {
			return p.errf(ErrMalformed, "symbol table (section %d, %s): entry size %d, want %d", si, st.Name, st.entsize, symSize)
		}
		if st.Size%symSize != 0 {
			return p.errf(ErrMalformed, "symbol table (section %d, %s): size %#x is not a multiple of %d", si, st.Name, st.Size, symSize)
		}
		if st.link == 0 || int64(st.link) >= int64(len(p.sections)) {
			return p.errf(ErrMalformed, "symbol table (section %d, %s): string table link %d out of range (%d sections)",
				si, st.Name, st.link, len(p.sections))
		}
		strSec := &p.sections[st.link]
		if strSec.Type != shtStrtab {
			return p.errf(ErrMalformed, "symbol table (section %d, %s): linked section %d has type %v, want SHT_STRTAB",
				si, st.Name, st.link, elf.SectionType(strSec.Type))
		}
		strtab := p.data[strSec.Offset : strSec.Offset+strSec.Size]
		tab := p.data[st.Offset : st.Offset+st.Size]
		for i := 0; i < len(tab)/symSize; i++ {
			e := tab[i*symSize : (i+1)*symSize]
			nameOff := binary.LittleEndian.Uint32(e[0:])
			info := e[4]
			shndx := binary.LittleEndian.Uint16(e[6:])
			value := binary.LittleEndian.Uint64(e[8:])
			size := binary.LittleEndian.Uint64(e[16:])
			name, why := cstring(strtab, uint64(nameOff))
			if why != "" {
				return p.errf(ErrMalformed, "symbol %d: %s", i, badString(why, uint64(nameOff), "string table "+strSec.Name, len(strtab)))
			}
			typ, bind := info&0xf, info>>4
			sec := int(shndx)
			entry := SymtabEntry{Name: name, Info: info, Shndx: shndx, Value: value, Size: size}
			switch {
			case shndx == shnUndef || shndx == shnCommon:
				continue
			case shndx == shnAbs:
				sec = -1
			case shndx == shnXindex:
				return p.errf(ErrUnsupported, "symbol %d (%s): extended section index (SHN_XINDEX)", i, name)
			case shndx >= shnLoRes:
				// A processor- or OS-specific index: not an address in this
				// image, but objdump counts it as absolute.
				entries, named = append(entries, entry), append(named, Symbol{})
				continue
			case sec >= len(p.sections):
				return p.errf(ErrMalformed, "symbol %d (%s): section index %d out of range (%d sections)", i, name, shndx, len(p.sections))
			}
			if name == "" && typ != sttSection {
				continue
			}
			var kind SymKind
			switch typ {
			case sttNoType:
				kind = SymNoType
			case sttObject:
				kind = SymObject
			case sttFunc:
				kind = SymFunc
			case sttIFunc:
				kind = SymIFunc
			case sttTLS:
				kind = SymTLS // an offset in the TLS block; objdump still uses it
			default:
				// Section symbols (objdump keeps those of .plt* and .got*
				// sections), STT_FILE, STT_COMMON: objdump's, not Symbols.
				entries, named = append(entries, entry), append(named, Symbol{})
				continue
			}
			entries = append(entries, entry)
			named = append(named, Symbol{Name: name, Addr: value, Size: size, Kind: kind,
				Global: bind != stbLocal, Weak: bind == stbWeak})
			if sec < 0 || kind == SymTLS {
				continue
			}
			s := &p.sections[sec]
			if (kind == SymFunc || kind == SymIFunc) && s.Flags&shfAlloc != 0 || s.Flags&shfExecInstr != 0 {
				code[len(entries)-1] = true
			}
		}
		break // only one SHT_SYMTAB is allowed; use the first
	}
	secs := make([]Section, len(p.sections))
	for i := range p.sections {
		secs[i] = p.sections[i].Section
	}
	idx := &symIndex{objdump: NewObjdumpSymbols(entries, secs, false), named: named}
	// Symbols are in objdump's order: by address and, at one address,
	// the name objdump would print first.
	var keep []int
	for _, s := range idx.objdump.Syms {
		if code[s.Entry] {
			keep = append(keep, s.Entry)
		}
	}
	im.Symbols = make([]Symbol, len(keep))
	for i, e := range keep {
		im.Symbols[i] = named[e]
	}
	for i := 1; i < len(p.sections); i++ {
		s := &p.sections[i]
		if s.Flags&shfAlloc != 0 && s.Flags&shfTLS == 0 && s.Size > 0 {
			idx.secs = append(idx.secs, secRange{idx: i, start: s.Addr, end: s.Addr + s.Size})
		}
	}
	secEnd := make([]uint64, len(keep))
	for i, e := range keep {
		secEnd[i] = ^uint64(0)
		s := &p.sections[entries[e].Shndx]
		if named[e].Addr >= s.Addr && s.Size > 0 {
			secEnd[i] = s.Addr + s.Size
		}
	}
	idx.buildLookup(im.Symbols, secEnd)
	im.idx = idx
	return nil
}

func lookupClass(s *Symbol) uint8 {
	switch {
	case s.Size > 0:
		return classSized
	case s.Kind == SymFunc || s.Kind == SymIFunc || s.Global:
		return classAnchor
	}
	return classLabel
}

// buildLookup computes each symbol's covered range (see the class comments).
// syms is sorted by address; secEnd bounds each zero-size symbol by the end
// of its section.
func (idx *symIndex) buildLookup(syms []Symbol, secEnd []uint64) {
	idx.syms = syms
	n := len(syms)
	idx.end = make([]uint64, n)
	idx.class = make([]uint8, n)
	idx.maxEnd = make([]uint64, n)
	const none = ^uint64(0)
	nextAnchor, nextAny := none, none
	for hi := n; hi > 0; {
		lo := hi - 1
		for lo > 0 && syms[lo-1].Addr == syms[hi-1].Addr {
			lo--
		}
		anchor := false
		for i := lo; i < hi; i++ {
			s := &syms[i]
			c := lookupClass(s)
			idx.class[i] = c
			switch c {
			case classSized:
				idx.end[i] = s.Addr + s.Size
				if idx.end[i] < s.Addr {
					idx.end[i] = none // saturate
				}
				anchor = true
			case classAnchor:
				idx.end[i] = min(nextAnchor, secEnd[i])
				anchor = true
			default:
				idx.end[i] = min(nextAny, secEnd[i])
			}
		}
		nextAny = syms[lo].Addr
		if anchor {
			nextAnchor = syms[lo].Addr
		}
		hi = lo
	}
	var m uint64
	for i := range idx.end {
		m = max(m, idx.end[i])
		idx.maxEnd[i] = m
	}
}

// index returns the Image's lookup index. An Image that did not come from
// Parse gets a temporary index over a sorted copy of its Symbols, with
// zero-size symbols unbounded by sections.
func (im *Image) index() *symIndex {
	if im.idx != nil {
		return im.idx
	}
	entries := make([]SymtabEntry, len(im.Symbols))
	for i, s := range im.Symbols {
		entries[i] = SymtabEntry{Name: s.Name, Info: s.info(), Shndx: shnAbs, Value: s.Addr, Size: s.Size}
	}
	idx := &symIndex{objdump: NewObjdumpSymbols(entries, nil, false), named: im.Symbols}
	syms := make([]Symbol, len(idx.objdump.Syms))
	secEnd := make([]uint64, len(syms))
	for i, s := range idx.objdump.Syms {
		syms[i] = im.Symbols[s.Entry]
		secEnd[i] = ^uint64(0)
	}
	idx.buildLookup(syms, secEnd)
	return idx
}

// Lookup returns the function (or code label) containing addr and addr's
// offset from its start, searching Symbols by binary search. A sized symbol
// covers [Addr, Addr+Size) and wins over others (the innermost one if sized
// symbols nest); a zero-size function or global label extends to the next
// sized symbol or function; a zero-size local label extends to the next
// symbol. Addresses in the padding after a sized function match nothing.
func (im *Image) Lookup(addr uint64) (sym Symbol, offset uint64, ok bool) {
	idx := im.index()
	syms := idx.syms
	i := sort.Search(len(syms), func(i int) bool { return syms[i].Addr > addr }) - 1
	best := -1
	// Scanning down, j < best and syms[j].Addr <= syms[best].Addr: j wins
	// with a better class, or with the same class at the same address (a
	// lower index is the preferred alias); a farther symbol of the same
	// class is an outer one and loses.
	better := func(j int) bool {
		if best < 0 || idx.class[j] < idx.class[best] {
			return true
		}
		return idx.class[j] == idx.class[best] && syms[j].Addr == syms[best].Addr
	}
	for j := i; j >= 0 && idx.maxEnd[j] > addr; j-- {
		if best >= 0 && idx.class[best] == classSized && syms[j].Addr < syms[best].Addr {
			break // nothing farther down can beat an inner sized symbol
		}
		if idx.end[j] > addr && better(j) {
			best = j
		}
	}
	if best < 0 {
		return Symbol{}, 0, false
	}
	return syms[best], addr - syms[best].Addr, true
}

// SymbolFor returns the name and offset a disassembler prints for addr, as
// <name+0xoff>, chosen as objdump -d chooses (ObjdumpSymbols.Find) with the
// section containing addr as the section being disassembled: the nearest
// symbol at or below addr of any type (sizes are ignored; TLS symbols count
// at their TLS offsets; the .got and .plt section symbols count),
// preferring, among symbols at that one address, one in the section
// containing addr. (objdump prefers the section being disassembled; the two
// agree for references within a section, such as branch targets.) ok is
// false where objdump would print an offset below its symbol (<sym-0x..>)
// or fall back to <section+0xoff>: no symbol lies at or below addr, or the
// file has relocations and none does in addr's section.
func (im *Image) SymbolFor(addr uint64) (name string, offset uint64, ok bool) {
	t := im.index().objdump
	i := t.Find(addr, im.index().sectionOf(addr), false)
	if i < 0 || t.Syms[i].Value > addr {
		return "", 0, false
	}
	return t.Syms[i].Name, addr - t.Syms[i].Value, true
}

// sectionOf returns the first allocated, non-TLS section that contains
// addr, or one with a negative Index if none does.
func (idx *symIndex) sectionOf(addr uint64) ObjdumpSection {
	for _, s := range idx.secs {
		if addr >= s.start && addr < s.end {
			return ObjdumpSection{Index: s.idx, Addr: s.start, Size: s.end - s.start}
		}
	}
	return ObjdumpSection{Index: -2}
}

// SymbolNamed finds a symbol of any kind (function, object, label) by name,
// for callers such as the simulator that locate a kernel's variables.
func (im *Image) SymbolNamed(name string) (Symbol, bool) {
	if im.idx == nil {
		return Symbol{}, false
	}
	for _, s := range im.idx.objdump.Syms {
		if d := im.idx.named[s.Entry]; d.Name == name {
			return d, true
		}
	}
	return Symbol{}, false
}

// info returns the st_info an ELF symbol table would hold for s.
func (s *Symbol) info() uint8 {
	var typ, bind uint8
	switch s.Kind {
	case SymObject:
		typ = sttObject
	case SymFunc:
		typ = sttFunc
	case SymIFunc:
		typ = sttIFunc
	case SymTLS:
		typ = sttTLS
	}
	switch {
	case s.Weak:
		bind = stbWeak
	case s.Global:
		bind = stbGlob
	}
	return bind<<4 | typ
}
