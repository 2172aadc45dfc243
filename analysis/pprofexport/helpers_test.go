package pprofexport

import (
	"context"
	"fmt"
	"path"
	"testing"

	"dcpi/analysis"
	"dcpi/analysis/symbolize"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
	"dcpi/hwsim/vmunix"
	"dcpi/storage"
	"dcpi/wire"
	"dcpi/wire/wiretest"
	"dcpi/workloads"
)

// elfRecord builds the record a node uploads for an ELF file
// (node.publishImage).
func elfRecord(t *testing.T, data []byte, path string, kernel bool) (*wire.ImageRecord, *elfimage.Image) {
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

// The fixtures below are analysis/report's and analysis/symbolize's test
// fixtures (prof_test.go, symbols_test.go, list_test.go), repeated: an
// in-package test there cannot import this package, nor this one its
// unexported test helpers.

var testKey = wiretest.Key

// base is the load base of the test images: their text starts 0x210 into
// the page at 0x120000000, as the workloads' does.
const base = 0x120000000

func rec(i int, path string, textEnd uint64, syms ...wire.Symbol) *wire.ImageRecord {
	return &wire.ImageRecord{Version: wire.Version, Key: testKey(i), Path: path,
		TextStart: base + 0x210, TextEnd: textEnd, Base: base, Symbols: syms}
}

func sym(name string, addr, size uint64) wire.Symbol {
	return wire.Symbol{Name: name, Addr: addr, Size: size}
}

const (
	evCycles = 0
	evIMiss  = 2
	evDMiss  = 3
)

// fixture is a small fleet: two hosts, two epochs, a program, a library,
// the kernel, and an image that was never uploaded.
//
//	/bin/app   main [0x210,0x260) work [0x260,0x300) helper (zero size, to 0x400)
//	/lib/libc  memcpy [0x210,0x250)
//	/vmunix    idle [0x150,0x200)
func fixture() *analysis.MemSource {
	m := analysis.NewMemSource()
	m.PutImage(rec(1, "/bin/app", base+0x400,
		sym("main", base+0x210, 0x50), sym("work", base+0x260, 0xa0), sym("helper", base+0x300, 0)))
	m.PutImage(rec(2, "/lib/libc", base+0x1000, sym("memcpy", base+0x210, 0x40)))
	kern := &wire.ImageRecord{Version: wire.Version, Key: testKey(3), Path: "/vmunix",
		TextStart: 0x60000000150, TextEnd: 0x60000000c2c, Base: 0x60000000000, Symbols: []wire.Symbol{sym("idle", 0x60000000150, 0xb0)}}
	m.PutImage(kern)
	add := func(epoch uint64, host string, pid uint32, image int, off uint64, ev uint8, n uint64) {
		m.Add(storage.Record{Epoch: epoch, Event: ev, Image: testKey(image), Offset: off, Host: host, PID: pid, Count: n})
	}
	// /bin/app
	add(1, "alpha", 0, 1, 0x210, evCycles, 100) // main
	add(1, "alpha", 0, 1, 0x214, evCycles, 50)  // main
	add(2, "beta", 0, 1, 0x214, evCycles, 50)   // main
	add(1, "alpha", 0, 1, 0x260, evCycles, 300) // work
	add(1, "alpha", 0, 1, 0x264, evIMiss, 30)   // work
	add(2, "beta", 7, 1, 0x268, evCycles, 100)  // work, kept per process
	add(1, "beta", 0, 1, 0x300, evCycles, 40)   // helper
	add(1, "beta", 0, 1, 0x3fc, evIMiss, 5)     // helper
	add(1, "alpha", 0, 1, 0x100, evCycles, 7)   // before main: unknown_rtn
	add(1, "alpha", 0, 1, 0x400, evCycles, 3)   // past text: unknown_rtn
	add(2, "beta", 0, 1, 0x100, evDMiss, 9)     // unknown_rtn, dmiss only
	// /lib/libc
	add(1, "alpha", 0, 2, 0x220, evCycles, 200)
	add(2, "beta", 0, 2, 0x220, evIMiss, 60)
	// /vmunix (offsets from 0x60000000000)
	add(1, "alpha", 0, 3, 0x150, evCycles, 150)
	add(2, "beta", 0, 3, 0x1fc, evCycles, 150)
	// never uploaded
	add(2, "gamma", 0, 9, 0x40, evCycles, 1)
	return m
}

// embeddedFinder finds images among the binaries embedded in dcpi, as the
// command's finder does first.
type embeddedFinder struct{}

func (embeddedFinder) FindImage(_ context.Context, rec *wire.ImageRecord) ([]byte, string, error) {
	if rec.Path == vmunix.Path {
		return vmunix.Image(), "embedded " + rec.Path, nil
	}
	if b, err := workloads.Binary(path.Base(rec.Path)); err == nil {
		return b, "embedded " + rec.Path, nil
	}
	return nil, "", fmt.Errorf("%s: %w", rec.Path, symbolize.ErrNoImageFile)
}

type findNothing struct{}

func (findNothing) FindImage(_ context.Context, rec *wire.ImageRecord) ([]byte, string, error) {
	return nil, "", fmt.Errorf("%s: %w", rec.Path, symbolize.ErrNoImageFile)
}

type bytesFinder []byte

func (b bytesFinder) FindImage(context.Context, *wire.ImageRecord) ([]byte, string, error) {
	return b, "test bytes", nil
}
