package symbolize

import (
	"context"
	"errors"
	"testing"

	"dcpi/analysis"
	"dcpi/hwsim/vmunix"
	"dcpi/storage"
	"dcpi/wire"
	"dcpi/workloads"
)

func TestLoadBase(t *testing.T) {
	for _, tc := range []struct{ textStart, want uint64 }{
		{0x120000210, 0x120000000},
		{0x60000000150, 0x60000000000},
		{0x120002000, 0x120002000},
		{0, 0},
	} {
		if got := LoadBase(&wire.ImageRecord{Version: 1, TextStart: tc.textStart}); got != tc.want {
			t.Errorf("LoadBase(version 1, text %#x) = %#x, want %#x", tc.textStart, got, tc.want)
		}
	}
	// Version 2 records say where the image was mapped.
	if got := LoadBase(&wire.ImageRecord{Version: 2, TextStart: 0x120004210, Base: 0x120000000}); got != 0x120000000 {
		t.Errorf("LoadBase(version 2) = %#x, want the record's base", got)
	}
}

func TestSymbolTableLookup(t *testing.T) {
	type probe struct {
		off  uint64 // from the load base
		want string // "" for no symbol
	}
	for _, tc := range []struct {
		name   string
		r      *wire.ImageRecord
		probes []probe
	}{
		{
			name: "sized, with padding and edges",
			r: rec(1, "/bin/a", base+0x400,
				sym("f", base+0x210, 0x20), // [0x210, 0x230)
				sym("g", base+0x240, 0x10), // padding [0x230, 0x240)
			),
			probes: []probe{
				{0, ""}, {0x20c, ""}, // before the first symbol
				{0x210, "f"}, {0x22c, "f"},
				{0x230, ""}, {0x23c, ""}, // padding after a sized symbol
				{0x240, "g"}, {0x24c, "g"},
				{0x250, ""}, {0x3fc, ""}, {1 << 40, ""}, // past the last symbol's end
				{^uint64(0), ""}, // base+offset wraps
			},
		},
		{
			name: "zero-size symbols extend to the next symbol or the end of text",
			r: rec(2, "/bin/b", base+0x300,
				sym("_start", base+0x210, 0), // to g
				sym("g", base+0x240, 0x10),
				sym("memset", base+0x260, 0), // to h
				sym("h", base+0x280, 0x8),
				sym("tail", base+0x2a0, 0), // to TextEnd
			),
			probes: []probe{
				{0x210, "_start"}, {0x23c, "_start"},
				{0x240, "g"},
				{0x250, ""}, // padding after g: memset starts at 0x260
				{0x260, "memset"}, {0x27c, "memset"},
				{0x280, "h"}, {0x288, ""},
				{0x2a0, "tail"}, {0x2fc, "tail"},
				{0x300, ""}, // TextEnd
			},
		},
		{
			name: "zero-size last symbol without a text range covers nothing",
			r: func() *wire.ImageRecord {
				r := rec(3, "/bin/c", 0, sym("only", base+0x210, 0))
				r.TextEnd = r.TextStart // no .text extent known
				return r
			}(),
			probes: []probe{{0x210, ""}, {0x214, ""}},
		},
		{
			name: "sized symbols nest: the innermost wins; zero-size only where none covers",
			r: rec(4, "/bin/d", base+0x1000,
				sym("outer", base+0x200, 0x100), // [0x200, 0x300)
				sym("inner", base+0x240, 0x20),  // [0x240, 0x260)
				sym("label", base+0x250, 0),     // to 0x400, under outer/inner
				sym("next", base+0x400, 0x10),
			),
			probes: []probe{
				{0x200, "outer"}, {0x23c, "outer"},
				{0x240, "inner"}, {0x25c, "inner"},
				{0x260, "outer"}, {0x2fc, "outer"},
				{0x300, "label"}, {0x3fc, "label"}, // past outer, before next
				{0x400, "next"},
			},
		},
		{
			name: "overlapping sized symbols: the later start wins, then the smaller",
			r: rec(5, "/bin/e", base+0x1000,
				sym("a", base+0x200, 0x40), // [0x200, 0x240)
				sym("b", base+0x220, 0x40), // [0x220, 0x260)
				sym("c", base+0x300, 0x40),
				sym("c_small", base+0x300, 0x10),
			),
			probes: []probe{
				{0x200, "a"}, {0x21c, "a"}, {0x220, "b"}, {0x23c, "b"}, {0x240, "b"}, {0x25c, "b"}, {0x260, ""},
				{0x300, "c_small"}, {0x30c, "c_small"}, {0x310, "c"}, {0x33c, "c"},
			},
		},
		{
			name: "aliases: the first in the record wins",
			r: rec(6, "/bin/f", base+0x1000,
				sym("memcpy", base+0x200, 0x40),
				sym("__memcpy", base+0x200, 0x40),
				sym("z1", base+0x300, 0),
				sym("z2", base+0x300, 0),
			),
			probes: []probe{{0x200, "memcpy"}, {0x23c, "memcpy"}, {0x300, "z1"}, {0xffc, "z1"}},
		},
		{
			name: "unsorted record",
			r: rec(7, "/bin/g", base+0x1000,
				sym("late", base+0x400, 0x10),
				sym("early", base+0x200, 0x10),
			),
			probes: []probe{{0x200, "early"}, {0x400, "late"}, {0x300, ""}},
		},
		{
			name:   "no symbols",
			r:      rec(8, "/bin/stripped", base+0x1000),
			probes: []probe{{0, ""}, {0x210, ""}},
		},
		{
			name:   "size that wraps the address space saturates",
			r:      rec(9, "/bin/h", base+0x1000, sym("huge", base+0x200, ^uint64(0))),
			probes: []probe{{0x1fc, ""}, {0x200, "huge"}, {1 << 50, "huge"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := NewTable(tc.r)
			for _, p := range tc.probes {
				s, i, ok := st.Lookup(p.off)
				got := ""
				if ok {
					got = s.Name
					if i < 0 || i >= st.Len() || st.syms[i].Name != s.Name {
						t.Errorf("Lookup(%#x) index %d does not name %q", p.off, i, s.Name)
					}
				}
				if got != p.want {
					t.Errorf("Lookup(%#x) = %q, want %q", p.off, got, p.want)
				}
			}
			checkUntil(t, st, 0, 0x1100)
		})
	}
}

// TestSymbolTableAgreesWithELF symbolizes every instruction of every
// embedded workload and of vmunix from the uploaded record, and compares
// with hwsim/elfimage's Lookup over the ELF file itself, which also knows
// symbol kinds and sections. It also checks LoadBase against the loader's
// rule (the page of the first PT_LOAD segment).
func TestSymbolTableAgreesWithELF(t *testing.T) {
	type img struct {
		path   string
		data   []byte
		kernel bool
	}
	imgs := []img{{"/vmunix", vmunix.Image(), true}}
	for _, w := range workloads.All() {
		data, err := workloads.Binary(w.Name)
		if err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, img{"/bin/" + w.Name, data, false})
	}
	for _, x := range imgs {
		r, im := elfRecord(t, x.data, x.path, x.kernel)
		lo := ^uint64(0)
		for _, s := range im.Segments {
			lo = min(lo, s.Vaddr)
		}
		if want := lo &^ (8192 - 1); LoadBase(r) != want {
			t.Errorf("%s: LoadBase %#x, loader maps at %#x", x.path, LoadBase(r), want)
		}
		st := NewTable(r)
		checkUntil(t, st, im.TextStart-LoadBase(r)-0x100, im.TextEnd-LoadBase(r)+0x100)
		var n, differ int
		for addr := im.TextStart; addr < im.TextEnd; addr += 4 {
			n++
			es, _, eok := im.Lookup(addr)
			s, _, ok := st.Lookup(addr - LoadBase(r))
			if ok != eok || ok && s.Name != es.Name {
				differ++
				if differ <= 5 {
					t.Logf("%s %#x: record says %q (%v), ELF says %q (%v kind %v)", x.path, addr, s.Name, ok, es.Name, eok, es.Kind)
				}
			}
		}
		t.Logf("%s: %d instructions, %d symbols", x.path, n, st.Len())
		if differ != 0 {
			t.Errorf("%s: %d of %d instructions symbolized differently from the ELF file", x.path, differ, n)
		}
	}
}

// checkUntil walks offsets [lo, hi) 4 bytes apart and checks that the
// answer Index promises for [offset, until) is Lookup's at each.
func checkUntil(t *testing.T, st *Table, lo, hi uint64) {
	t.Helper()
	var from, until uint64
	var idx int
	var ok bool
	for off := lo; off < hi; off += 4 {
		wi, wok := -1, false
		if _, i, ok := st.Lookup(off); ok {
			wi, wok = i, true
		}
		if off >= from && off < until {
			if idx != wi || ok != wok {
				t.Fatalf("%s offset %#x: Index at %#x promised index %d (%v) until %#x; Lookup says %d (%v)", st.Path, off, from, idx, ok, until, wi, wok)
			}
			continue
		}
		idx, until, ok = st.Index(off)
		from = off
		if until <= off {
			t.Fatalf("%s offset %#x: until %#x", st.Path, off, until)
		}
	}
}

// stubSource fails Image for one key with an error other than not-found.
type stubSource struct {
	*analysis.MemSource
	bad wire.ImageKey
}

func (s stubSource) Image(ctx context.Context, k wire.ImageKey) (*wire.ImageRecord, error) {
	if k == s.bad {
		return nil, storage.ErrCorrupt
	}
	return s.MemSource.Image(context.Background(), k)
}

func TestSymbolizerCachesAndReportsMissingImages(t *testing.T) {
	m := analysis.NewMemSource()
	m.PutImage(rec(1, "/bin/a", base+0x1000, sym("f", base+0x210, 0x10)))
	counting := &countingSource{Source: stubSource{m, testKey(3)}}
	s := New(counting)
	if New(s) != s {
		t.Error("New wrapped a Symbolizer again")
	}
	for range 3 {
		tb, err := s.Table(t.Context(), testKey(1))
		if err != nil || tb.Path != "/bin/a" {
			t.Fatalf("Table: %v %v", tb, err)
		}
		if _, err := s.Image(t.Context(), testKey(1)); err != nil {
			t.Fatal(err)
		}
		tb, err = s.Table(t.Context(), testKey(2)) // never uploaded
		if err != nil || tb.Path != testKey(2).String() || tb.Len() != 0 {
			t.Fatalf("Table of a missing image: %+v %v", tb, err)
		}
		if _, err := s.Image(t.Context(), testKey(2)); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("Image of a missing image: %v", err)
		}
		if _, err := s.Table(t.Context(), testKey(3)); !errors.Is(err, storage.ErrCorrupt) {
			t.Fatalf("Table of a corrupt image: %v", err)
		}
	}
	// Errors other than not-found are not cached: they may be transient.
	if counting.images != 2+3 {
		t.Errorf("%d Image calls reached the source, want 5 (one per good image, every failing one)", counting.images)
	}
}

type countingSource struct {
	analysis.Source
	images int
}

func (c *countingSource) Image(ctx context.Context, k wire.ImageKey) (*wire.ImageRecord, error) {
	c.images++
	return c.Source.Image(ctx, k)
}
