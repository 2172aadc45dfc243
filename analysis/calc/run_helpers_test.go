package calc

// Fixtures of the query's tests, as analysis/report's list tests build them.

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"testing"

	"dcpi/analysis"
	"dcpi/analysis/symbolize"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
	"dcpi/hwsim/vmunix"
	"dcpi/storage"
	"dcpi/wire"
	"dcpi/workloads"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const (
	evCycles = 0
	evIMiss  = 2
)

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

// bytesFinder returns fixed bytes.
type bytesFinder []byte

func (b bytesFinder) FindImage(context.Context, *wire.ImageRecord) ([]byte, string, error) {
	return b, "test bytes", nil
}

// sortSource is a profile of the embedded /bin/sort: samples on the first
// instructions of insertion (an insertion sort) and quick, and one in main.
func sortSource(t *testing.T) (*analysis.MemSource, *wire.ImageRecord) {
	t.Helper()
	data, err := workloads.Binary("sort")
	if err != nil {
		t.Fatal(err)
	}
	r, im := elfRecord(t, data, "/bin/sort", false)
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
		add("alpha", ins+uint64(4*i), evCycles, n)
		add("beta", ins+uint64(4*i), evCycles, n+1)
	}
	add("alpha", ins+8, evIMiss, 4)
	add("alpha", addrOf("quick")+4, evCycles, 100)
	add("beta", addrOf("main"), evCycles, 7)
	return m, r
}

// elfRecord is the record a node uploads for the ELF file data: its key,
// text range, load base and symbols.
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

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
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
