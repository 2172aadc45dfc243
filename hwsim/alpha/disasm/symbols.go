package disasm

// objdump's symbol table rules (binutils objdump.c: remove_useless_symbols,
// compare_symbols, find_symbol_for_address): which symbols label a block of
// code and which one names a branch target, so that "<sym+off>" is the same
// text objdump prints.

import (
	"debug/elf"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Symbol flags, after BFD's: the ones objdump's symbol ordering looks at.
const (
	symLocal uint8 = 1 << iota
	symGlobal
	symFunction
	symObject
	symDebugging // file and section symbols
	symFile
)

// symAbs is the section index given to absolute symbols and symbols in
// sections BFD does not know; it sorts after every real section, as BFD's
// static *ABS* section sorts after the heap-allocated ones.
const symAbs = 1 << 30

// symbol is one symbol objdump keeps for disassembly.
type symbol struct {
	name  string
	value uint64
	sec   int // section header index, or symAbs
	flags uint8
	size  uint64
}

// symtab is objdump's sorted symbol table (objdump.c: sorted_syms).
type symtab struct {
	syms []symbol
	// hasReloc is BFD's HAS_RELOC (the file has relocation sections):
	// objdump then prefers symbols of the section being disassembled for
	// addresses inside it.
	hasReloc bool
}

// readSymtab reads the symbol table (the dynamic one if there is none)
// and keeps and orders the symbols as objdump does before disassembling.
func readSymtab(f *elf.File) (*symtab, error) {
	syms, err := f.Symbols()
	if errors.Is(err, elf.ErrNoSymbols) || len(syms) == 0 {
		syms, err = f.DynamicSymbols()
		if errors.Is(err, elf.ErrNoSymbols) {
			syms, err = nil, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read symbols: %w", err)
	}
	t := &symtab{}
	for _, s := range f.Sections {
		if s.Type == elf.SHT_RELA || s.Type == elf.SHT_REL {
			t.hasReloc = true
		}
	}
	rel := f.Type == elf.ET_REL
	for _, s := range syms {
		d := symbol{name: s.Name, value: s.Value, size: s.Size}
		switch s.Section {
		case elf.SHN_UNDEF, elf.SHN_COMMON:
			continue // objdump drops undefined and common symbols
		case elf.SHN_ABS:
			d.sec = symAbs
		default:
			d.sec = int(s.Section)
			if s.Section >= elf.SHN_LORESERVE || d.sec >= len(f.Sections) {
				d.sec = symAbs
			} else if rel {
				// A relocatable file's symbol values are section offsets.
				d.value += f.Sections[d.sec].Addr
			}
		}
		switch elf.ST_BIND(s.Info) {
		case elf.STB_LOCAL:
			d.flags |= symLocal
		case elf.STB_GLOBAL:
			d.flags |= symGlobal
		}
		switch elf.ST_TYPE(s.Info) {
		case elf.STT_FUNC:
			d.flags |= symFunction
		case elf.STT_OBJECT, elf.STT_COMMON:
			d.flags |= symObject
		case elf.STT_FILE:
			d.flags |= symFile | symDebugging
		case elf.STT_SECTION:
			// BFD names a section symbol after its section, and objdump
			// keeps only those of .plt, .got and .plt.got.
			d.flags |= symDebugging
			if d.name == "" && d.sec != symAbs {
				d.name = f.Sections[d.sec].Name
			}
			if d.name != ".plt" && d.name != ".got" && d.name != ".plt.got" {
				continue
			}
		}
		if d.name == "" || d.flags&symFile != 0 {
			continue
		}
		t.syms = append(t.syms, d)
	}
	sort.Slice(t.syms, func(i, j int) bool { return compareSyms(&t.syms[i], &t.syms[j]) < 0 })
	return t, nil
}

// compareSyms is objdump's compare_symbols: by value; then by section;
// then real names before gcc2_compiled-style markers and file names;
// functions, then globals, before the rest; larger sizes first; names
// starting with '.' last; then by name.
func compareSyms(a, b *symbol) int {
	switch {
	case a.value != b.value:
		return cmpLess(a.value < b.value)
	case a.sec != b.sec:
		return cmpLess(a.sec < b.sec)
	}
	if c := cmpFlag(isCompiledMarker(a.name), isCompiledMarker(b.name)); c != 0 {
		return c
	}
	if c := cmpFlag(isFileName(a), isFileName(b)); c != 0 {
		return c
	}
	if c := cmpFlag(a.flags&symDebugging != 0, b.flags&symDebugging != 0); c != 0 {
		return c
	}
	if c := cmpFlag(a.flags&symFunction == 0, b.flags&symFunction == 0); c != 0 {
		return c
	}
	if c := cmpFlag(a.flags&symLocal != 0, b.flags&symLocal != 0); c != 0 {
		return c
	}
	if c := cmpFlag(a.flags&symGlobal == 0, b.flags&symGlobal == 0); c != 0 {
		return c
	}
	if a.size != b.size {
		return cmpLess(a.size > b.size)
	}
	if c := cmpFlag(strings.HasPrefix(a.name, "."), strings.HasPrefix(b.name, ".")); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}

// cmpLess returns -1 if less, else 1.
func cmpLess(less bool) int {
	if less {
		return -1
	}
	return 1
}

// cmpFlag orders false before true.
func cmpFlag(a, b bool) int {
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

// isFileName is objdump's guess that a symbol names a file: a file symbol,
// or a name ending in ".o" or ".a".
func isFileName(s *symbol) bool {
	n := s.name
	return s.flags&symFile != 0 || len(n) >= 2 && n[len(n)-2] == '.' && (n[len(n)-1] == 'o' || n[len(n)-1] == 'a')
}

// symOK is objdump's sym_ok: with wantSection, the symbol must be in sec.
func (t *symtab) symOK(wantSection bool, i int, sec *section) bool {
	return !wantSection || t.syms[i].sec == sec.index
}

// find is objdump's find_symbol_for_address: the index of the symbol that
// names vma while disassembling sec, or -1. requireSec restricts the choice
// to symbols of sec.
func (t *symtab) find(vma uint64, sec *section, requireSec bool) int {
	n := len(t.syms)
	if n < 1 {
		return -1
	}
	lo, hi := 0, n
	for lo+1 < hi {
		mid := (lo + hi) / 2
		v := t.syms[mid].value
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
	for place > 0 && t.syms[place].value == t.syms[place-1].value {
		place--
	}
	// Prefer a symbol of this section among those with the same value.
	lo = place
	for lo < hi && t.syms[lo].value == t.syms[place].value {
		if t.symOK(true, lo, sec) {
			return lo
		}
		lo++
	}
	want := requireSec || t.hasReloc && vma >= sec.vma && vma < sec.vma+uint64(len(sec.data))
	if !t.symOK(want, place, sec) {
		newPlace := n
		for i := lo - 1; i >= 0; i-- {
			if t.symOK(want, i, sec) {
				if newPlace == n {
					newPlace = i
				}
				if t.syms[i].value != t.syms[newPlace].value {
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

// secSymbolizer names branch targets while disassembling one section.
type secSymbolizer struct {
	t   *symtab
	sec *section
}

func (s secSymbolizer) SymbolFor(addr uint64) (string, uint64, bool) {
	if i := s.t.find(addr, s.sec, false); i >= 0 {
		return s.t.syms[i].name, addr - s.t.syms[i].value, true
	}
	// objdump falls back to the section being disassembled.
	return s.sec.name, addr - s.sec.vma, true
}
