package elfimage

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"sort"
)

// ProcedureSymbols returns Symbols and, for a stripped shared object, a
// name for each procedure its symbols leave out. A library shipped without
// .symtab names only what it exports (.dynsym), so its static functions
// (glibc's printf and qsort internals, say) would all fall into one
// unknown_rtn; its .eh_frame still bounds every procedure the compiler
// emitted, so each FDE whose start no symbol covers becomes a SymFunc
// "FILE+0xADDR" (the way pprof and perf name code without a symbol) with
// the FDE's extent. Other files, and a library without call frame
// information, get Symbols unchanged. The result is sorted by address; it
// is computed on each call.
func (im *Image) ProcedureSymbols() []Symbol {
	if !im.Shared || slices.ContainsFunc(im.Sections, func(s Section) bool { return s.Type == shtSymtab }) {
		return im.Symbols
	}
	fdes, err := im.FrameInfo()
	if err != nil || len(fdes) == 0 {
		return im.Symbols
	}
	syms := im.Symbols // sorted by address
	covered := func(addr uint64) bool {
		i := sort.Search(len(syms), func(i int) bool { return syms[i].Addr > addr }) - 1
		for ; i >= 0; i-- {
			s := syms[i]
			if s.Addr == addr || s.Size > 0 && addr-s.Addr < s.Size {
				return true
			}
			if addr-s.Addr > 1<<24 {
				break // no procedure is that long
			}
		}
		return false
	}
	base := path.Base(im.Path)
	var extra []Symbol
	for _, f := range fdes {
		if f.End > f.Start && !covered(f.Start) {
			extra = append(extra, Symbol{Name: fmt.Sprintf("%s+%#x", base, f.Start), Addr: f.Start, Size: f.End - f.Start, Kind: SymFunc})
		}
	}
	if len(extra) == 0 {
		return im.Symbols
	}
	out := append(slices.Clone(im.Symbols), extra...)
	slices.SortStableFunc(out, func(a, b Symbol) int { return cmp.Compare(a.Addr, b.Addr) })
	return out
}
