package elfimage

import (
	"slices"
	"testing"
)

func symInfo(bind, typ uint8) uint8 { return bind<<4 | typ }

// TestObjdumpSymbolOrder pins objdump's tie-breaking among symbols at one
// address (compare_symbols) and which symbols it keeps at all
// (remove_useless_symbols): the order decides which name "<sym+off>" shows.
func TestObjdumpSymbolOrder(t *testing.T) {
	secs := []Section{
		{}, // the null section
		{Name: ".text", Addr: 0x1000, Size: 0x100},
		{Name: ".got", Addr: 0x2000, Size: 0x10},
		{Name: ".data", Addr: 0x3000, Size: 0x10},
		{Name: ".got.plt", Addr: 0x4000, Size: 0x10},
	}
	const (
		local, global, weak       = stbLocal, stbGlob, stbWeak
		notype, object, fn, secTy = sttNoType, sttObject, sttFunc, sttSection
	)
	entries := []SymtabEntry{
		// At 0x1000, every rule in turn; the wanted order is by name.
		{Name: "z_gcc2_compiled.", Info: symInfo(global, fn), Shndx: 1, Value: 0x1000, Size: 64}, // marker: last
		{Name: "yfile.o", Info: symInfo(global, fn), Shndx: 1, Value: 0x1000, Size: 64},          // file name: late
		{Name: "f_local_notype", Info: symInfo(local, notype), Shndx: 1, Value: 0x1000},
		{Name: "e_weak_notype", Info: symInfo(weak, notype), Shndx: 1, Value: 0x1000},
		{Name: "d_global_notype", Info: symInfo(global, notype), Shndx: 1, Value: 0x1000},
		{Name: "c_local_object", Info: symInfo(local, object), Shndx: 1, Value: 0x1000},
		{Name: "b_local_func_small", Info: symInfo(local, fn), Shndx: 1, Value: 0x1000, Size: 4},
		{Name: "a_local_func_big", Info: symInfo(local, fn), Shndx: 1, Value: 0x1000, Size: 8},
		{Name: "d_global_notypf", Info: symInfo(global, notype), Shndx: 1, Value: 0x1000},    // then by name
		{Name: ".d_global_notype", Info: symInfo(global, notype), Shndx: 1, Value: 0x1000},   // '.' after
		{Name: "abs_first_by_name", Info: symInfo(global, fn), Shndx: shnAbs, Value: 0x1000}, // other section: after all of .text
		{Name: "proc_specific", Info: symInfo(global, fn), Shndx: shnLoRes + 1, Value: 0x1000},

		// Dropped: undefined, common, file, unnamed, section symbols
		// other than .plt* and .got*.
		{Name: "undef", Info: symInfo(global, fn), Shndx: shnUndef, Value: 0x1000},
		{Name: "common", Info: symInfo(global, object), Shndx: shnCommon, Value: 0x1000},
		{Name: "x.c", Info: symInfo(local, sttFile), Shndx: shnAbs},
		{Name: "", Info: symInfo(global, fn), Shndx: 1, Value: 0x1000},
		{Info: symInfo(local, secTy), Shndx: 3, Value: 0x3000},

		// Kept section symbols, named after their section, after named
		// symbols at the same address.
		{Info: symInfo(local, secTy), Shndx: 2, Value: 0x2000},
		{Name: "_GLOBAL_OFFSET_TABLE_", Info: symInfo(local, object), Shndx: 2, Value: 0x2000},
		{Info: symInfo(local, secTy), Shndx: 4, Value: 0x4000},
	}
	tab := NewObjdumpSymbols(entries, secs, false)
	var got []string
	for _, s := range tab.Syms {
		got = append(got, s.Name)
	}
	want := []string{
		"a_local_func_big", "b_local_func_small", "c_local_object",
		"d_global_notype", "d_global_notypf", ".d_global_notype", "e_weak_notype", "f_local_notype",
		"yfile.o", "z_gcc2_compiled.",
		"abs_first_by_name", "proc_specific",
		"_GLOBAL_OFFSET_TABLE_", ".got",
		".got.plt",
	}
	if !slices.Equal(got, want) {
		t.Errorf("objdump order:\n got %q\nwant %q", got, want)
	}
	for i, s := range tab.Syms {
		if entries[s.Entry].Value != s.Value {
			t.Errorf("Syms[%d] %s: Entry %d has value %#x, symbol %#x", i, s.Name, s.Entry, entries[s.Entry].Value, s.Value)
		}
	}

	text := ObjdumpSection{Index: 1, Addr: 0x1000, Size: 0x100}
	got2 := ObjdumpSection{Index: 2, Addr: 0x2000, Size: 0x10}
	name := func(i int) string {
		if i < 0 {
			return "<none>"
		}
		return tab.Syms[i].Name
	}
	for _, c := range []struct {
		vma        uint64
		sec        ObjdumpSection
		requireSec bool
		want       string
	}{
		{0x1010, text, false, "a_local_func_big"},
		// Among symbols at one address, one of the section disassembled
		// wins over the order.
		{0x1000, ObjdumpSection{Index: SectionAbs}, false, "abs_first_by_name"},
		{0x2008, got2, false, "_GLOBAL_OFFSET_TABLE_"},
		// Below every symbol: the first, at a negative offset.
		{0x10, text, false, "a_local_func_big"},
		// Required to be of .got: no symbol of it at or below 0x1fff, so
		// the first one above.
		{0x1fff, got2, true, "_GLOBAL_OFFSET_TABLE_"},
		// Required to be of .text, from .data: the nearest one below.
		{0x3008, text, true, "a_local_func_big"},
		{0x3008, ObjdumpSection{Index: 3}, true, "<none>"},
		// Without relocations, the nearest symbol whatever its section.
		{0x4008, text, false, ".got.plt"},
	} {
		if g := name(tab.Find(c.vma, c.sec, c.requireSec)); g != c.want {
			t.Errorf("Find(%#x, section %d, require %v) = %s, want %s", c.vma, c.sec.Index, c.requireSec, g, c.want)
		}
	}

	// With relocation sections, an address inside the section disassembled
	// is named by a symbol of that section even when another is nearer.
	relSecs := append(slices.Clone(secs), Section{Name: ".rela.text", Type: shtRela})
	entries = []SymtabEntry{
		{Name: "in_text", Info: symInfo(global, fn), Shndx: 1, Value: 0x1000},
		{Name: "in_got", Info: symInfo(global, object), Shndx: 2, Value: 0x1008},
	}
	for _, c := range []struct {
		secs []Section
		want string
	}{{secs, "in_got"}, {relSecs, "in_text"}} {
		tab = NewObjdumpSymbols(entries, c.secs, false)
		if g := name(tab.Find(0x1010, text, false)); g != c.want {
			t.Errorf("%d sections: Find(0x1010) = %s, want %s", len(c.secs), g, c.want)
		}
	}

	// In a relocatable file values are section offsets.
	tab = NewObjdumpSymbols([]SymtabEntry{{Name: "f", Info: symInfo(global, fn), Shndx: 3, Value: 8}}, secs, true)
	if len(tab.Syms) != 1 || tab.Syms[0].Value != 0x3008 {
		t.Errorf("relocatable: %+v, want f at 0x3008", tab.Syms)
	}
}

// TestObjdumpHoldsCode pins which symbols objdump -d dumps as data.
func TestObjdumpHoldsCode(t *testing.T) {
	for _, c := range []struct {
		name string
		typ  uint8
		code bool
	}{
		{"f", sttFunc, true},
		{"label", sttNoType, true},
		{"table", sttObject, false},
		{"common_typed", sttComm, false},
		{"gcc2_compiled.", sttNoType, false},
	} {
		tab := NewObjdumpSymbols([]SymtabEntry{{Name: c.name, Info: symInfo(stbGlob, c.typ), Shndx: shnAbs}}, nil, false)
		if len(tab.Syms) != 1 || tab.Syms[0].HoldsCode() != c.code {
			t.Errorf("%s (type %d): HoldsCode %v, want %v", c.name, c.typ, !c.code, c.code)
		}
	}
}
