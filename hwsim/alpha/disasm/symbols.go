package disasm

// The symbols of a file as objdump chooses among them: the choice itself is
// elfimage's (ObjdumpSymbols), shared with Image.SymbolFor; this file feeds
// it a debug/elf file and names branch targets with it.

import (
	"debug/elf"
	"errors"
	"fmt"

	"dcpi/hwsim/elfimage"
)

// readSymtab reads the symbol table (the dynamic one if there is none) and
// keeps and orders the symbols as objdump does before disassembling.
func readSymtab(f *elf.File) (*elfimage.ObjdumpSymbols, error) {
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
	entries := make([]elfimage.SymtabEntry, len(syms))
	for i, s := range syms {
		entries[i] = elfimage.SymtabEntry{Name: s.Name, Info: s.Info, Shndx: uint16(s.Section), Value: s.Value, Size: s.Size}
	}
	secs := make([]elfimage.Section, len(f.Sections))
	for i, s := range f.Sections {
		secs[i] = elfimage.Section{Name: s.Name, Type: uint32(s.Type), Flags: uint64(s.Flags), Addr: s.Addr, Size: s.Size, Offset: s.Offset}
	}
	return elfimage.NewObjdumpSymbols(entries, secs, f.Type == elf.ET_REL), nil
}

// secSymbolizer names branch targets while disassembling one section.
type secSymbolizer struct {
	t   *elfimage.ObjdumpSymbols
	sec *section
}

func (s secSymbolizer) SymbolFor(addr uint64) (string, uint64, bool) {
	if i := s.t.Find(addr, s.sec.objdump, false); i >= 0 {
		return s.t.Syms[i].Name, addr - s.t.Syms[i].Value, true
	}
	// objdump falls back to the section being disassembled.
	return s.sec.name, addr - s.sec.vma, true
}
