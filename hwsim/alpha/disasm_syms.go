package alpha

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
	disSymLocal uint8 = 1 << iota
	disSymGlobal
	disSymFunction
	disSymObject
	disSymDebugging // file and section symbols
	disSymFile
)

// disSymAbs is the section index given to absolute symbols and symbols in
// sections BFD does not know; it sorts after every real section, as BFD's
// static *ABS* section sorts after the heap-allocated ones.
const disSymAbs = 1 << 30

// disSym is one symbol objdump keeps for disassembly.
type disSym struct {
	name  string
	value uint64
	sec   int // section header index, or disSymAbs
	flags uint8
	size  uint64
}

// disSymtab is objdump's sorted symbol table (objdump.c: sorted_syms).
type disSymtab struct {
	syms []disSym
	// hasReloc is BFD's HAS_RELOC (the file has relocation sections):
	// objdump then prefers symbols of the section being disassembled for
	// addresses inside it.
	hasReloc bool
}

// disReadSymtab reads the symbol table (the dynamic one if there is none)
// and keeps and orders the symbols as objdump does before disassembling.
func disReadSymtab(f *elf.File) (*disSymtab, error) {
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
	t := &disSymtab{}
	for _, s := range f.Sections {
		if s.Type == elf.SHT_RELA || s.Type == elf.SHT_REL {
			t.hasReloc = true
		}
	}
	rel := f.Type == elf.ET_REL
	for _, s := range syms {
		d := disSym{name: s.Name, value: s.Value, size: s.Size}
		switch s.Section {
		case elf.SHN_UNDEF, elf.SHN_COMMON:
			continue // objdump drops undefined and common symbols
		case elf.SHN_ABS:
			d.sec = disSymAbs
		default:
			d.sec = int(s.Section)
			if s.Section >= elf.SHN_LORESERVE || d.sec >= len(f.Sections) {
				d.sec = disSymAbs
			} else if rel {
				// A relocatable file's symbol values are section offsets.
				d.value += f.Sections[d.sec].Addr
			}
		}
		switch elf.ST_BIND(s.Info) {
		case elf.STB_LOCAL:
			d.flags |= disSymLocal
		case elf.STB_GLOBAL:
			d.flags |= disSymGlobal
		}
		switch elf.ST_TYPE(s.Info) {
		case elf.STT_FUNC:
			d.flags |= disSymFunction
		case elf.STT_OBJECT, elf.STT_COMMON:
			d.flags |= disSymObject
		case elf.STT_FILE:
			d.flags |= disSymFile | disSymDebugging
		case elf.STT_SECTION:
			// BFD names a section symbol after its section, and objdump
			// keeps only those of .plt, .got and .plt.got.
			d.flags |= disSymDebugging
			if d.name == "" && d.sec != disSymAbs {
				d.name = f.Sections[d.sec].Name
			}
			if d.name != ".plt" && d.name != ".got" && d.name != ".plt.got" {
				continue
			}
		}
		if d.name == "" || d.flags&disSymFile != 0 {
			continue
		}
		t.syms = append(t.syms, d)
	}
	sort.Slice(t.syms, func(i, j int) bool { return disCompareSyms(&t.syms[i], &t.syms[j]) < 0 })
	return t, nil
}

// disCompareSyms is objdump's compare_symbols: by value; then by section;
// then real names before gcc2_compiled-style markers and file names;
// functions, then globals, before the rest; larger sizes first; names
// starting with '.' last; then by name.
func disCompareSyms(a, b *disSym) int {
	switch {
	case a.value != b.value:
		return disCmp(a.value < b.value)
	case a.sec != b.sec:
		return disCmp(a.sec < b.sec)
	}
	if c := disCmpFlag(disCompiledMarker(a.name), disCompiledMarker(b.name)); c != 0 {
		return c
	}
	if c := disCmpFlag(disFileName(a), disFileName(b)); c != 0 {
		return c
	}
	if c := disCmpFlag(a.flags&disSymDebugging != 0, b.flags&disSymDebugging != 0); c != 0 {
		return c
	}
	if c := disCmpFlag(a.flags&disSymFunction == 0, b.flags&disSymFunction == 0); c != 0 {
		return c
	}
	if c := disCmpFlag(a.flags&disSymLocal != 0, b.flags&disSymLocal != 0); c != 0 {
		return c
	}
	if c := disCmpFlag(a.flags&disSymGlobal == 0, b.flags&disSymGlobal == 0); c != 0 {
		return c
	}
	if a.size != b.size {
		return disCmp(a.size > b.size)
	}
	if c := disCmpFlag(strings.HasPrefix(a.name, "."), strings.HasPrefix(b.name, ".")); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}

// disCmp returns -1 if less, else 1.
func disCmp(less bool) int {
	if less {
		return -1
	}
	return 1
}

// disCmpFlag orders false before true.
func disCmpFlag(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func disCompiledMarker(n string) bool {
	return strings.Contains(n, "gnu_compiled") || strings.Contains(n, "gcc2_compiled")
}

// disFileName is objdump's guess that a symbol names a file: a file symbol,
// or a name ending in ".o" or ".a".
func disFileName(s *disSym) bool {
	n := s.name
	return s.flags&disSymFile != 0 || len(n) >= 2 && n[len(n)-2] == '.' && (n[len(n)-1] == 'o' || n[len(n)-1] == 'a')
}

// symOK is objdump's sym_ok: with wantSection, the symbol must be in sec.
func (t *disSymtab) symOK(wantSection bool, i int, sec *disSection) bool {
	return !wantSection || t.syms[i].sec == sec.index
}

// find is objdump's find_symbol_for_address: the index of the symbol that
// names vma while disassembling sec, or -1. requireSec restricts the choice
// to symbols of sec.
func (t *disSymtab) find(vma uint64, sec *disSection, requireSec bool) int {
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

// disSecSymbolizer names branch targets while disassembling one section.
type disSecSymbolizer struct {
	t   *disSymtab
	sec *disSection
}

func (s disSecSymbolizer) SymbolFor(addr uint64) (string, uint64, bool) {
	if i := s.t.find(addr, s.sec, false); i >= 0 {
		return s.t.syms[i].name, addr - s.t.syms[i].value, true
	}
	// objdump falls back to the section being disassembled.
	return s.sec.name, addr - s.sec.vma, true
}
