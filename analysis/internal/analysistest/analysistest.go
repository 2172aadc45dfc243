// Package analysistest holds the fixtures the analysis packages' tests
// share: a small fleet in memory, image records built from ELF files as a
// node builds them, the sort workload's samples, image finders over the
// embedded binaries, and golden files. It is a test kit: nothing but
// tests imports it.
package analysistest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"dcpi/analysis"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
	"dcpi/storage"
	"dcpi/wire"
	"dcpi/wire/wiretest"
	"dcpi/workloads"
)

// Key is the i-th test image key.
var Key = wiretest.Key

// Base is the load base of the test images: their text starts 0x210 into
// the page at 0x120000000, as the workloads' does.
const Base = 0x120000000

// The events of the fixtures.
const (
	EvCycles = 0
	EvIMiss  = 2
	EvDMiss  = 3
)

// Rec is test image i's record at path, its text ending at textEnd.
func Rec(i int, path string, textEnd uint64, syms ...wire.Symbol) *wire.ImageRecord {
	return &wire.ImageRecord{Version: wire.Version, Key: Key(i), Path: path,
		TextStart: Base + 0x210, TextEnd: textEnd, Base: Base, Symbols: syms}
}

// Sym is a symbol.
func Sym(name string, addr, size uint64) wire.Symbol {
	return wire.Symbol{Name: name, Addr: addr, Size: size}
}

// ELFRecord builds the record a node uploads for an ELF file
// (node.publishImage).
func ELFRecord(t testing.TB, data []byte, path string, kernel bool) (*wire.ImageRecord, *elfimage.Image) {
	t.Helper()
	var im *elfimage.Image
	var err error
	if kernel {
		im, err = elfimage.ParseKernel(data, path)
	} else {
		im, err = elfimage.Parse(data, path)
	}
	if err != nil {
		t.Fatal(err)
	}
	key, err := wire.ParseImageKey(im.ID.String())
	if err != nil {
		t.Fatal(err)
	}
	r := &wire.ImageRecord{Version: wire.Version, Key: key, Path: path, Size: uint64(len(data)), TextStart: im.TextStart, TextEnd: im.TextEnd,
		Base: ^uint64(0)}
	for _, s := range im.Segments {
		r.Base = min(r.Base, s.Vaddr&^(alpha.PageSize-1)) // where the loader maps it (node: Mapping.Base)
	}
	for _, s := range im.Symbols {
		r.Symbols = append(r.Symbols, wire.Symbol{Name: s.Name, Addr: s.Addr, Size: s.Size})
	}
	return r, im
}

// Fleet is a small fleet: two hosts, two epochs, a program, a library,
// the kernel, and an image that was never uploaded.
//
//	/bin/app   main [0x210,0x260) work [0x260,0x300) helper (zero size, to 0x400)
//	/lib/libc  memcpy [0x210,0x250)
//	/vmunix    idle [0x150,0x200)
func Fleet() *analysis.MemSource {
	m := analysis.NewMemSource()
	m.PutImage(Rec(1, "/bin/app", Base+0x400,
		Sym("main", Base+0x210, 0x50), Sym("work", Base+0x260, 0xa0), Sym("helper", Base+0x300, 0)))
	m.PutImage(Rec(2, "/lib/libc", Base+0x1000, Sym("memcpy", Base+0x210, 0x40)))
	kern := &wire.ImageRecord{Version: wire.Version, Key: Key(3), Path: "/vmunix",
		TextStart: 0x60000000150, TextEnd: 0x60000000c2c, Base: 0x60000000000, Symbols: []wire.Symbol{Sym("idle", 0x60000000150, 0xb0)}}
	m.PutImage(kern)
	add := func(epoch uint64, host string, pid uint32, image int, off uint64, ev uint8, n uint64) {
		m.Add(storage.Record{Epoch: epoch, Event: ev, Image: Key(image), Offset: off, Host: host, PID: pid, Count: n})
	}
	// /bin/app
	add(1, "alpha", 0, 1, 0x210, EvCycles, 100) // main
	add(1, "alpha", 0, 1, 0x214, EvCycles, 50)  // main
	add(2, "beta", 0, 1, 0x214, EvCycles, 50)   // main
	add(1, "alpha", 0, 1, 0x260, EvCycles, 300) // work
	add(1, "alpha", 0, 1, 0x264, EvIMiss, 30)   // work
	add(2, "beta", 7, 1, 0x268, EvCycles, 100)  // work, kept per process
	add(1, "beta", 0, 1, 0x300, EvCycles, 40)   // helper
	add(1, "beta", 0, 1, 0x3fc, EvIMiss, 5)     // helper
	add(1, "alpha", 0, 1, 0x100, EvCycles, 7)   // before main: unknown_rtn
	add(1, "alpha", 0, 1, 0x400, EvCycles, 3)   // past text: unknown_rtn
	add(2, "beta", 0, 1, 0x100, EvDMiss, 9)     // unknown_rtn, dmiss only
	// /lib/libc
	add(1, "alpha", 0, 2, 0x220, EvCycles, 200)
	add(2, "beta", 0, 2, 0x220, EvIMiss, 60)
	// /vmunix (offsets from 0x60000000000)
	add(1, "alpha", 0, 3, 0x150, EvCycles, 150)
	add(2, "beta", 0, 3, 0x1fc, EvCycles, 150)
	// never uploaded
	add(2, "gamma", 0, 9, 0x40, EvCycles, 1)
	return m
}

// SortSource is the sort workload's image with a few samples: two hosts
// over insertion's first eight instructions (cycles, an imiss), quick
// and main.
func SortSource(t testing.TB) (*analysis.MemSource, *wire.ImageRecord) {
	t.Helper()
	data, err := workloads.Binary("sort")
	if err != nil {
		t.Fatal(err)
	}
	r, im := ELFRecord(t, data, "/bin/sort", false)
	m := analysis.NewMemSource()
	m.PutImage(r)
	addrOf := func(name string) uint64 {
		s, ok := im.SymbolNamed(name)
		if !ok {
			t.Fatalf("sort has no %s", name)
		}
		return s.Addr
	}
	add := func(host string, addr uint64, ev uint8, n uint64) {
		m.Add(storage.Record{Epoch: 1, Event: ev, Image: r.Key, Offset: addr - r.Base, Host: host, Count: n})
	}
	ins := addrOf("insertion")
	for i, n := range []uint64{5, 0, 17, 3, 40, 2, 9, 1} {
		add("alpha", ins+uint64(4*i), EvCycles, n)
		add("beta", ins+uint64(4*i), EvCycles, n+1)
	}
	add("alpha", ins+8, EvIMiss, 4)
	add("alpha", addrOf("quick")+4, EvCycles, 100)
	add("beta", addrOf("main"), EvCycles, 7)
	return m, r
}

// Golden compares got with the file testdata/NAME, or with update
// rewrites the file.
func Golden(t testing.TB, update bool, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
