package elfimage

// objdump's choice of the symbol that names an address (binutils objdump.c:
// remove_useless_symbols, compare_symbols, find_symbol_for_address, over
// the symbol flags BFD's ELF reader gives), so that "<sym+off>" is the text
// objdump prints. It is the one implementation: Image.SymbolFor and the
// disassembler (hwsim/alpha/disasm) both choose through ObjdumpSymbols.

import (
	"slices"
	"strings"
)

// SymtabEntry is one entry of an ELF symbol table as the file holds it.
type SymtabEntry struct {
	Name  string
	Info  uint8  // st_info: binding<<4 | type
	Shndx uint16 // st_shndx
	Value uint64
	Size  uint64
}

// SectionAbs is the Section of an absolute symbol, and of one whose section
// BFD does not know: it sorts after every real section, as BFD's static
// *ABS* section sorts after the ones it allocates.
const SectionAbs = 1 << 30

// ObjdumpSymbol is one symbol objdump keeps for disassembly.
type ObjdumpSymbol struct {
	Name    string
	Value   uint64 // in a relocatable file, its section's address added
	Size    uint64
	Section int // section header index, or SectionAbs
	Entry   int // index of the SymtabEntry it came from
	flags   uint8
}

// BFD's symbol flags, the ones objdump's ordering looks at.
const (
	symLocal uint8 = 1 << iota
	symGlobal
	symFunction
	symObject
	symDebugging // file and section symbols
	symFile
)

// HoldsCode reports whether objdump -d disassembles the bytes from this
// symbol on as instructions rather than dumping them as data: anything but
// an object (STT_OBJECT or STT_COMMON) that is not also a function, except
// that gcc2_compiled-style markers count as objects.
func (s *ObjdumpSymbol) HoldsCode() bool {
	return s.flags&symObject == 0 && !isCompiledMarker(s.Name) || s.flags&symFunction != 0
}

// ObjdumpSymbols is objdump's sorted symbol table (objdump.c: sorted_syms).
type ObjdumpSymbols struct {
	Syms []ObjdumpSymbol
	// hasReloc is BFD's HAS_RELOC (the file has relocation sections):
	// objdump then prefers symbols of the section being disassembled for
	// addresses inside it.
	hasReloc bool
}

// ObjdumpSection is the section objdump is disassembling, or the one an
// address lies in: Index is its section header index (negative for none).
type ObjdumpSection struct {
	Index      int
	Addr, Size uint64
}

const (
	shtRela = 4
	shtRel  = 9
	sttFile = 4
	sttComm = 5
	stbGlob = 1
)

// NewObjdumpSymbols keeps the entries objdump keeps and orders them as it
// does. sections are the file's section headers by index; in a relocatable
// file (ET_REL) symbol values are offsets in their sections.
//
// The entries kept are those BFD and remove_useless_symbols keep: defined
// (not undefined or common), named, and not file or section symbols, except
// the section symbols of .plt* and .got* sections, named after their
// section. A symbol whose section index is reserved (SHN_ABS, or processor-
// or OS-specific) or out of range is absolute.
func NewObjdumpSymbols(entries []SymtabEntry, sections []Section, relocatable bool) *ObjdumpSymbols {
	t := &ObjdumpSymbols{}
	for i := range sections {
		if sections[i].Type == shtRela || sections[i].Type == shtRel {
			t.hasReloc = true
		}
	}
	for i := range entries {
		e := &entries[i]
		if e.Shndx == shnUndef || e.Shndx == shnCommon {
			continue
		}
		s := ObjdumpSymbol{Name: e.Name, Value: e.Value, Size: e.Size, Section: SectionAbs, Entry: i}
		if e.Shndx < shnLoRes && int(e.Shndx) < len(sections) {
			s.Section = int(e.Shndx)
			if relocatable {
				s.Value += sections[s.Section].Addr
			}
		}
		switch e.Info >> 4 {
		case stbLocal:
			s.flags |= symLocal
		case stbGlob:
			s.flags |= symGlobal
		}
		switch e.Info & 0xf {
		case sttFunc:
			s.flags |= symFunction
		case sttObject, sttComm:
			s.flags |= symObject
		case sttFile:
			s.flags |= symFile | symDebugging
		case sttSection:
			s.flags |= symDebugging
			s.Size = 0 // compare_symbols ignores a section symbol's size
			if s.Name == "" && s.Section != SectionAbs {
				s.Name = sections[s.Section].Name
			}
			if !strings.HasPrefix(s.Name, ".plt") && !strings.HasPrefix(s.Name, ".got") {
				continue
			}
		}
		if s.Name == "" || s.flags&symFile != 0 {
			continue
		}
		t.Syms = append(t.Syms, s)
	}
	slices.SortFunc(t.Syms, compareObjdumpSymbols)
	return t
}

// compareObjdumpSymbols is objdump's compare_symbols: by value; then by
// section; then real names before gcc2_compiled-style markers, file names,
// and section symbols; functions, then objects, before the rest; global
// before weak before local; larger sizes first; names starting with '.'
// last; then by name.
func compareObjdumpSymbols(a, b ObjdumpSymbol) int {
	switch {
	case a.Value != b.Value:
		return cmpLess(a.Value < b.Value)
	case a.Section != b.Section:
		return cmpLess(a.Section < b.Section)
	}
	if c := cmpBool(isCompiledMarker(a.Name), isCompiledMarker(b.Name)); c != 0 {
		return c
	}
	if c := cmpBool(a.flags&symFile != 0 || isFileSymbol(a.Name), b.flags&symFile != 0 || isFileSymbol(b.Name)); c != 0 {
		return c
	}
	if c := cmpBool(a.flags&symDebugging != 0, b.flags&symDebugging != 0); c != 0 {
		return c
	}
	if c := cmpBool(a.flags&symFunction == 0, b.flags&symFunction == 0); c != 0 {
		return c
	}
	if c := cmpBool(a.flags&symObject == 0, b.flags&symObject == 0); c != 0 {
		return c
	}
	if c := cmpBool(a.flags&symLocal != 0, b.flags&symLocal != 0); c != 0 {
		return c
	}
	if c := cmpBool(a.flags&symGlobal == 0, b.flags&symGlobal == 0); c != 0 {
		return c
	}
	if a.Size != b.Size {
		return cmpLess(a.Size > b.Size)
	}
	if c := cmpBool(strings.HasPrefix(a.Name, "."), strings.HasPrefix(b.Name, ".")); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// cmpLess returns -1 if less, else 1.
func cmpLess(less bool) int {
	if less {
		return -1
	}
	return 1
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func isCompiledMarker(n string) bool {
	return strings.Contains(n, "gnu_compiled") || strings.Contains(n, "gcc2_compiled")
}

// isFileSymbol is objdump's guess that a name is really a file name.
func isFileSymbol(n string) bool {
	return len(n) > 2 && n[len(n)-2] == '.' && (n[len(n)-1] == 'o' || n[len(n)-1] == 'a')
}

func (t *ObjdumpSymbols) symOK(wantSection bool, i int, sec ObjdumpSection) bool {
	return !wantSection || t.Syms[i].Section == sec.Index
}

// Find is objdump's find_symbol_for_address: the index in Syms of the
// symbol that names vma while disassembling sec, or -1. Among symbols at the
// nearest value at or below vma it takes the first of sec, else the first
// in order. If the file has relocations and vma lies in sec (or requireSec
// is set), the symbol must be of sec: the nearest such one below, else the
// first such one above (whose offset is then negative). With no symbol at
// or below vma and no section requirement, it is the first symbol.
func (t *ObjdumpSymbols) Find(vma uint64, sec ObjdumpSection, requireSec bool) int {
	n := len(t.Syms)
	if n < 1 {
		return -1
	}
	lo, hi := 0, n
	for lo+1 < hi {
		mid := (lo + hi) / 2
		v := t.Syms[mid].Value
		if v > vma {
			hi = mid
		} else if v < vma {
			lo = mid
		} else {
			lo = mid
			break
		}
	}
	place := lo
	for place > 0 && t.Syms[place].Value == t.Syms[place-1].Value {
		place--
	}
	// Prefer a symbol of this section among those with the same value.
	lo = place
	for lo < hi && t.Syms[lo].Value == t.Syms[place].Value {
		if t.symOK(true, lo, sec) {
			return lo
		}
		lo++
	}
	want := requireSec || t.hasReloc && vma >= sec.Addr && vma < sec.Addr+sec.Size
	if !t.symOK(want, place, sec) {
		newPlace := n
		for i := lo - 1; i >= 0; i-- {
			if t.symOK(want, i, sec) {
				if newPlace == n {
					newPlace = i
				}
				if t.Syms[i].Value != t.Syms[newPlace].Value {
					break
				}
				newPlace = i
			}
		}
		if newPlace != n {
			place = newPlace
		} else {
			for i := place + 1; i < n; i++ {
				if t.symOK(want, i, sec) {
					place = i
					break
				}
			}
		}
		if !t.symOK(want, place, sec) {
			return -1
		}
	}
	return place
}
